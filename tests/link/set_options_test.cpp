// Options set after the socket was built (socket::set_options, blocking_socket::set_options), as
// zmq_setsockopt allows: values that belong to a connection apply to the binds and connects made
// after the call, the others (linger, router_mandatory, the blocking API's own queues) at once.
#include "link/link_fixture.hpp"

#include <strix/link/blocking.hpp>

#include <gtest/gtest.h>

#include <future>
#include <stdexcept>
#include <thread>

namespace {

using namespace strix::link;
using namespace std::chrono_literals;
using strix::test::eventually;
using strix::test::link_env;
using clock_type = std::chrono::steady_clock;

std::string unique_inproc(const char* what) {
    static std::atomic<int> seq{0};
    return "inproc://set-options-" + std::string(what) + "-" + std::to_string(seq.fetch_add(1));
}

// Sends one-part messages on s's shard until would_block; how many it took (stops at `cap`).
int send_until_full(link_env& env, strix::link::socket& s, int cap) {
    return env.on(env.shard_of(s), [&] {
        int n = 0;
        while (n < cap && !s.send(std::string_view("m"))) ++n;
        return n;
    });
}

TEST(set_options, a_later_inproc_connection_takes_the_new_high_water_marks) {
    link_env env;
    auto& pull = env.make(0, socket_type::pull);
    auto& push = env.make(1, socket_type::push);
    socket_options small;
    small.sndhwm = 5;
    small.rcvhwm = 7;
    const std::string name = unique_inproc("hwm");
    env.on(0, [&] {
        pull.set_options(small);
        pull.pause_receiving(true);  // holds every message (and its credit)
        pull.bind(name);
    });
    // The push's mark plus the pull's, as libzmq adds them on inproc: 5 + 7, not 1000 + 1000.
    env.on(1, [&] {
        push.set_options(small);
        push.connect(name);
    });
    ASSERT_TRUE(eventually([&] { return env.on(1, [&] { return push.peers(); }) == 1; }));
    EXPECT_EQ(send_until_full(env, push, 5000), 12);
    EXPECT_EQ(env.on(1, [&] { return push.options().sndhwm; }), 5u);
}

TEST(set_options, a_connect_after_the_call_announces_the_new_routing_id) {
    link_env env;
    auto& box = env.new_inbox();
    auto& router = env.make(0, socket_type::router, {}, &box);
    auto& dealer = env.make(1, socket_type::dealer);
    const std::string where = env.on(0, [&] { return router.bind("tcp://127.0.0.1:*"); });
    socket_options o;
    o.routing_id = "late-id";
    env.on(1, [&] {
        dealer.set_options(o);
        dealer.connect(where);
    });
    ASSERT_FALSE(env.send(dealer, {"hello"}));
    EXPECT_EQ(box.pop(), (std::vector<std::string>{"late-id", "hello"}));
}

TEST(set_options, router_mandatory_applies_to_the_next_send) {
    link_env env;
    auto& router = env.make(0, socket_type::router);
    const auto send_unknown = [&] {
        return env.on(0, [&] {
            return router.send({as_bytes(std::string_view("nobody")), as_bytes(std::string_view("x"))});
        });
    };
    EXPECT_FALSE(send_unknown());  // dropped, as libzmq's ROUTER does by default
    socket_options o;
    o.router_mandatory = true;
    env.on(0, [&] { router.set_options(o); });
    EXPECT_EQ(send_unknown(), link_errc::no_peer);
}

TEST(set_options, a_later_bind_takes_a_larger_max_msg_size_and_a_smaller_one_refuses) {
    link_env env;
    auto& box = env.new_inbox();
    auto& log = env.new_log();
    socket_options first;
    first.max_msg_size = 1000;
    auto& pull = env.make(0, socket_type::pull, first, &box, &log);
    const std::string small_ep = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });
    socket_options big = first;
    big.max_msg_size = 3 * 1024 * 1024;
    env.on(0, [&] { pull.set_options(big); });
    const std::string big_ep = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });

    // 2 MiB through the later bind: its connections take the new limit (and a ring that holds it).
    auto& push = env.make(1, socket_type::push);
    env.on(1, [&] { push.connect(big_ep); });
    const std::string large(2 * 1024 * 1024, 'L');
    ASSERT_FALSE(env.send(push, {large}));
    const auto got = box.pop(10s);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].size(), large.size());

    // The first bind keeps the options it was made with (libzmq: a listener keeps its copy).
    auto& push2 = env.make(1, socket_type::push);
    env.on(1, [&] { push2.connect(small_ep); });
    ASSERT_FALSE(env.send(push2, {std::string(2000, 's')}));
    EXPECT_TRUE(eventually([&] { return env.on(0, [&] { return pull.stats().protocol_errors; }) == 1; }));
    EXPECT_TRUE(box.stays_empty());
}

TEST(set_options, a_malformed_key_throws_and_leaves_the_options_as_they_were) {
    link_env env;
    socket_options o;
    o.sndhwm = 42;
    auto& s = env.make(0, socket_type::push, o);
    socket_options bad;
    bad.security.curve_server = true;
    bad.security.curve_secretkey = "not a key";
    EXPECT_THROW(env.on(0, [&] { s.set_options(bad); }), std::invalid_argument);
    EXPECT_EQ(env.on(0, [&] { return s.options().sndhwm; }), 42u);
    EXPECT_FALSE(env.on(0, [&] { return s.options().security.curve_server; }));
}

// --- the blocking API ----------------------------------------------------------------------

socket_options quick() {
    socket_options o;
    o.linger = 0ms;
    o.reconnect_ivl = 20ms;
    return o;
}

TEST(set_options, blocking_send_waits_at_the_new_sndhwm) {
    context ctx(1);
    blocking_socket push(ctx, socket_type::push, quick());
    push.connect("tcp://127.0.0.1:1");  // never answers: messages wait in the outgoing pipe
    socket_options o = quick();
    o.sndhwm = 3;
    push.set_options(o);
    for (int i = 0; i < 3; ++i) EXPECT_FALSE(push.send("m", 0ms)) << i;
    EXPECT_EQ(push.send("m", 0ms), link_errc::would_block);
    // And a larger mark makes room at once.
    o.sndhwm = 5;
    push.set_options(o);
    EXPECT_FALSE(push.send("m", 0ms));
}

TEST(set_options, blocking_rcvhwm_bounds_what_a_reader_that_does_not_read_holds) {
    context ctx(2);
    blocking_socket pull(ctx, socket_type::pull, quick());
    socket_options o = quick();
    o.rcvhwm = 4;
    pull.set_options(o);
    const std::string name = unique_inproc("rcvhwm");
    pull.bind(name);
    o.sndhwm = 4;
    blocking_socket push(ctx, socket_type::push, o);
    push.connect(name);
    // The push's outgoing pipe holds 4, the inproc pipe 4 + 4, the pull's incoming pipe 4: 16,
    // where the pull's default rcvhwm (1000) would let 2008 in.
    int sent = 0;
    while (sent < 5000 && !push.send("m", 300ms)) ++sent;
    EXPECT_GE(sent, 8);
    EXPECT_LT(sent, 40);
    for (int i = 0; i < sent; ++i) ASSERT_TRUE(pull.recv(5s)) << i;
}

TEST(set_options, blocking_router_mandatory_and_immediate_follow_the_call) {
    context ctx(1);
    blocking_socket router(ctx, socket_type::router, quick());
    message m;
    m.add(as_bytes(std::string_view("nobody")));
    m.add(as_bytes(std::string_view("x")));
    EXPECT_FALSE(router.send(m, 0ms));
    socket_options o = quick();
    o.router_mandatory = true;
    router.set_options(o);
    EXPECT_EQ(router.send(m, 0ms), link_errc::no_peer);

    blocking_socket push(ctx, socket_type::push, quick());
    push.connect("tcp://127.0.0.1:1");
    o = quick();
    o.immediate = true;
    push.set_options(o);
    EXPECT_EQ(push.send("x", 100ms), link_errc::would_block);  // waits for a peer, none comes
}

// A receiver that takes nothing until released: the sender's output stays queued at close.
struct stalled_receiver {
    link_env env{1};
    strix::link::socket* pull = nullptr;
    std::string where;
    stalled_receiver() {
        pull = &env.make(0, socket_type::pull);
        where = env.on(0, [&] { return pull->bind("tcp://127.0.0.1:*"); });
    }
    // After the handshake (a paused connection would not read the greeting either).
    void stall() {
        env.on(0, [&] { pull->pause_receiving(true); });
    }
    void release() {
        env.on(0, [&] { pull->pause_receiving(false); });
    }
};

// Queues `n` messages of `size` bytes on a blocking PUSH to `where` (more than the kernel's
// buffers take when nobody reads).
void fill(blocking_socket& push, stalled_receiver& r, int n, std::size_t size) {
    push.connect(r.where);
    ASSERT_TRUE(push.wait_for_peers(1, 5s));
    r.stall();
    const std::string body(size, 'x');
    for (int i = 0; i < n; ++i) ASSERT_FALSE(push.send(body, 5s)) << i;
}

TEST(set_options, a_linger_set_right_before_close_bounds_the_close) {
    stalled_receiver r;
    // Guard: if the linger were not applied, ~context would wait for the receiver; releasing
    // it after 8 s ends that wait (and the test fails on the time).
    std::promise<void> closed;
    std::thread guard([&r, done = closed.get_future()] {
        if (done.wait_for(8s) == std::future_status::timeout) r.release();
    });
    const auto t0 = clock_type::now();
    {
        context ctx(1);
        socket_options o;  // linger -1: ~context would wait for the receiver
        o.sndhwm = 0;
        blocking_socket push(ctx, socket_type::push, o);
        fill(push, r, 400, 64 * 1024);
        o.linger = 200ms;  // the pyzmq idiom: setsockopt(LINGER) right before close
        push.set_options(o);
    }
    const auto took = clock_type::now() - t0;
    closed.set_value();
    guard.join();
    EXPECT_LT(took, 6s);
}

TEST(set_options, a_linger_raised_before_close_delivers_what_a_zero_linger_would_drop) {
    constexpr int count = 300;  // 19 MB: more than the kernel's buffers hold for a stalled reader
    std::atomic<int> got{0};
    std::atomic<bool> in_order{true};
    stalled_receiver r;  // after what its callback uses
    r.env.on(0, [&] {
        r.pull->on_message([&](message_view m) {
            const int n = got.fetch_add(1);
            if (m.size() != 1 || m[0].size() != 64 * 1024 || static_cast<int>(m[0][0]) != n % 128) in_order = false;
        });
    });
    std::thread releaser;
    {
        context ctx(1);
        socket_options o;
        o.linger = 0ms;  // at close, what the connection still holds would be dropped
        o.sndhwm = 0;
        blocking_socket push(ctx, socket_type::push, o);
        push.connect(r.where);
        ASSERT_TRUE(push.wait_for_peers(1, 5s));
        r.stall();
        std::string body(64 * 1024, 'x');
        for (int i = 0; i < count; ++i) {
            body[0] = static_cast<char>(i % 128);
            ASSERT_FALSE(push.send(body, 5s)) << i;
        }
        o.linger = -1ms;  // until delivered, for the connection made before too
        push.set_options(o);
        releaser = std::thread([&] {
            std::this_thread::sleep_for(300ms);  // the close has begun by then
            r.release();
        });
    }  // ~context waits until everything is delivered
    releaser.join();
    EXPECT_TRUE(eventually([&] { return got.load() == count; })) << got.load() << " of " << count;
    EXPECT_TRUE(in_order.load());
}

}  // namespace
