// poll() over blocking sockets and proxy() between them, with libzmq peers on every outer end:
// a ROUTER/DEALER broker between libzmq REQ clients and REP workers, an XSUB/XPUB forwarder
// with a capture socket, and PAUSE/RESUME/TERMINATE/STATISTICS from a control socket.
#include "link/interop_support.hpp"

#include <strix/link/blocking.hpp>
#include <strix/link/poll.hpp>
#include <strix/link/proxy.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <thread>

namespace {

using namespace strix::link;
using namespace std::chrono_literals;
namespace zmq = strix::test::zmq;
using strs = std::vector<std::string>;
using clock_type = std::chrono::steady_clock;

std::string text(const message& m, std::size_t i = 0) { return std::string(m[i].text()); }

TEST(poll, times_out_with_nothing_ready_and_reports_only_the_ready_socket) {
    context ctx(2);
    blocking_socket a(ctx, socket_type::pull), b(ctx, socket_type::pull);
    a.bind("tcp://127.0.0.1:*");
    const std::string where_b = b.bind("tcp://127.0.0.1:*");
    poll_item items[] = {{&a, poll_in, 0}, {&b, poll_in, 0}};
    const auto t0 = clock_type::now();
    EXPECT_EQ(poll(items, 150ms), 0u);
    EXPECT_GE(clock_type::now() - t0, 140ms);
    EXPECT_EQ(items[0].revents | items[1].revents, 0);

    zmq::context zctx;
    zmq::socket push(zctx, ZMQ_PUSH);
    push.connect(where_b);
    ASSERT_EQ(push.send({"hello"}), 0);
    ASSERT_EQ(poll(items, 5000ms), 1u);
    EXPECT_EQ(items[0].revents, 0);
    EXPECT_EQ(items[1].revents, poll_in);
    auto m = b.recv(0ms);  // ready: does not wait
    ASSERT_TRUE(m);
    EXPECT_EQ(text(*m), "hello");
    EXPECT_EQ(poll(items, 0ms), 0u);
}

TEST(poll, wakes_when_another_thread_sends_long_before_the_timeout) {
    context ctx(2);
    blocking_socket pull(ctx, socket_type::pull), idle(ctx, socket_type::pull);
    const std::string where = pull.bind("inproc://poll-wake");
    idle.bind("inproc://poll-idle");
    std::thread sender([&] {
        blocking_socket push(ctx, socket_type::push);
        push.connect(where);
        std::this_thread::sleep_for(100ms);
        push.send("late");
    });
    poll_item items[] = {{&idle, poll_in, 0}, {&pull, poll_in, 0}};
    const auto t0 = clock_type::now();
    ASSERT_EQ(poll(items, 10000ms), 1u);
    EXPECT_LT(clock_type::now() - t0, 5s) << "woken by the message, not the timeout";
    EXPECT_EQ(items[1].revents, poll_in);
    EXPECT_EQ(text(*pull.recv(0ms)), "late");
    sender.join();
}

TEST(poll, pollout_follows_the_high_water_mark_and_req_turns) {
    context ctx(1);
    socket_options o;
    o.sndhwm = 2;
    o.linger = 0ms;  // nobody will take them: ~context must not wait
    blocking_socket push(ctx, socket_type::push, o);
    push.connect("tcp://127.0.0.1:1");  // nobody there: messages wait in the pipe
    poll_item items[] = {{&push, poll_out, 0}};
    ASSERT_EQ(poll(items, 0ms), 1u);
    ASSERT_FALSE(push.send("1", 0ms));
    ASSERT_FALSE(push.send("2", 0ms));
    EXPECT_EQ(poll(items, 100ms), 0u) << "two messages at a mark of two: a send would wait";
    EXPECT_FALSE(writable(push));

    blocking_socket req(ctx, socket_type::req, o);
    req.connect("tcp://127.0.0.1:1");
    EXPECT_TRUE(writable(req));
    ASSERT_FALSE(req.send("q", 0ms));
    EXPECT_FALSE(writable(req)) << "REQ waits for its reply before the next request";
    EXPECT_FALSE(readable(req));
}

// A control socket for the tests: a PAIR the test thread steers, bound to the proxy's PAIR.
struct steering {
    explicit steering(context& ctx, const std::string& name)
        : proxy_side(ctx, socket_type::pair), test_side(ctx, socket_type::pair) {
        proxy_side.bind("inproc://" + name);
        test_side.connect("inproc://" + name);
    }
    blocking_socket proxy_side, test_side;
};

std::uint64_t u64(const message& m, std::size_t i) {
    std::uint64_t v = 0;
    EXPECT_EQ(m[i].size(), sizeof v);
    std::memcpy(&v, m[i].bytes().data(), sizeof v);
    return v;
}

TEST(proxy, router_dealer_broker_between_libzmq_clients_and_workers) {
    context ctx(2);
    blocking_socket front(ctx, socket_type::router), back(ctx, socket_type::dealer);
    const std::string fa = front.bind("tcp://127.0.0.1:*");
    const std::string ba = back.bind("tcp://127.0.0.1:*");
    steering ctl(ctx, "proxy-rd-control");
    constexpr int clients = 3, workers = 2, requests = 50;
    zmq::context zctx;
    std::atomic<bool> stop{false};
    std::atomic<int> served[workers] = {};
    std::vector<std::thread> ws;
    for (int w = 0; w < workers; ++w)
        ws.emplace_back([&, w] {
            zmq::socket rep(zctx, ZMQ_REP);
            rep.connect(ba);
            while (!stop) {
                auto q = rep.recv(50ms);
                if (!q) continue;
                ++served[w];
                rep.send({"re:" + (*q)[0], "w" + std::to_string(w)});
            }
        });
    // Both workers are there before the first request, so the DEALER spreads over both.
    EXPECT_TRUE(back.wait_for_peers(workers, 5s));
    proxy_stats result;
    std::thread broker([&] { result = proxy(front, back, nullptr, &ctl.proxy_side); });
    std::atomic<int> answered{0};
    std::vector<std::thread> cs;
    for (int c = 0; c < clients; ++c)
        cs.emplace_back([&, c] {
            zmq::socket req(zctx, ZMQ_REQ);
            req.connect(fa);
            for (int i = 0; i < requests; ++i) {
                const std::string q = "c" + std::to_string(c) + "-" + std::to_string(i);
                ASSERT_EQ(req.send({q}), 0);
                auto r = req.recv();
                ASSERT_TRUE(r) << q;
                ASSERT_EQ(r->size(), 2u);
                EXPECT_EQ((*r)[0], "re:" + q) << "each client gets its own reply, in order";
                ++answered;
            }
        });
    for (auto& t : cs) t.join();
    EXPECT_EQ(answered, clients * requests);
    EXPECT_EQ(served[0] + served[1], clients * requests);
    EXPECT_GT(served[0], 0) << "the DEALER spreads requests over both workers";
    EXPECT_GT(served[1], 0);

    ASSERT_FALSE(ctl.test_side.send("STATISTICS"));
    auto s = ctl.test_side.recv(5s);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->size(), 8u);
    const auto n = static_cast<std::uint64_t>(clients * requests);
    EXPECT_EQ(u64(*s, 0), n);  // frontend messages in: the requests
    EXPECT_EQ(u64(*s, 2), n);  // frontend messages out: the replies
    EXPECT_EQ(u64(*s, 4), n);  // backend messages in: the replies
    EXPECT_EQ(u64(*s, 6), n);  // backend messages out: the requests
    EXPECT_EQ(u64(*s, 1), u64(*s, 7)) << "requests leave the backend as they entered the frontend";
    EXPECT_EQ(u64(*s, 3), u64(*s, 5)) << "and replies the other way";
    EXPECT_GT(u64(*s, 1), n * 5) << "with their routing envelope";

    ASSERT_FALSE(ctl.test_side.send("TERMINATE"));
    broker.join();
    EXPECT_EQ(result.frontend.messages_in, n);
    stop = true;
    for (auto& t : ws) t.join();
}

TEST(proxy, xsub_xpub_forwarder_with_capture_passes_subscriptions_up_and_messages_down) {
    context ctx(2);
    zmq::context zctx;
    zmq::socket pub(zctx, ZMQ_PUB);
    const std::string pa = pub.bind("tcp://127.0.0.1:*");
    blocking_socket xsub(ctx, socket_type::xsub), xpub(ctx, socket_type::xpub);
    xsub.connect(pa);
    const std::string xa = xpub.bind("tcp://127.0.0.1:*");
    blocking_socket capture(ctx, socket_type::push), tap(ctx, socket_type::pull);
    tap.bind("inproc://proxy-capture");
    capture.connect("inproc://proxy-capture");
    steering ctl(ctx, "proxy-ps-control");
    std::thread forwarder([&] { proxy(xsub, xpub, &capture, &ctl.proxy_side); });

    zmq::socket sub(zctx, ZMQ_SUB);
    sub.connect(xa);
    sub.subscribe("a.");
    // The subscription travels SUB -> XPUB -> proxy -> XSUB -> PUB: probe until it arrived.
    bool through = false;
    for (int i = 0; i < 250 && !through; ++i) {
        ASSERT_EQ(pub.send({"a.probe"}), 0);
        through = sub.recv(20ms).has_value();
    }
    ASSERT_TRUE(through);
    while (sub.recv(100ms)) {
    }  // probes still on their way
    ASSERT_EQ(pub.send({"b.1"}), 0);
    ASSERT_EQ(pub.send({"a.1", "body"}), 0);
    ASSERT_EQ(pub.send({"a.2"}), 0);
    auto m1 = sub.recv();
    ASSERT_TRUE(m1);
    EXPECT_EQ(*m1, (strs{"a.1", "body"}));
    auto m2 = sub.recv();
    ASSERT_TRUE(m2);
    EXPECT_EQ(*m2, (strs{"a.2"}));
    EXPECT_FALSE(sub.recv(200ms)) << "b.1 was never subscribed to";

    // The capture saw the subscription going up and both messages coming down, nothing else.
    std::vector<std::string> seen;
    while (auto c = tap.recv(300ms)) seen.push_back(text(*c) + (c->size() > 1 ? "+" + text(*c, 1) : ""));
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.front(), std::string("\x01") + "a.");
    EXPECT_NE(std::find(seen.begin(), seen.end(), "a.1+body"), seen.end());
    EXPECT_EQ(seen.back(), "a.2");
    EXPECT_EQ(std::find(seen.begin(), seen.end(), "b.1"), seen.end());

    ASSERT_FALSE(ctl.test_side.send("TERMINATE"));
    forwarder.join();
}

TEST(proxy, pause_holds_messages_resume_releases_them_terminate_returns_over_a_rep_control) {
    context ctx(2);
    zmq::context zctx;
    blocking_socket front(ctx, socket_type::pull), back(ctx, socket_type::push), control(ctx, socket_type::rep);
    const std::string fa = front.bind("tcp://127.0.0.1:*");
    const std::string ba = back.bind("tcp://127.0.0.1:*");
    const std::string ca = control.bind("tcp://127.0.0.1:*");
    std::atomic<bool> returned{false};
    std::thread p([&] {
        proxy(front, back, nullptr, &control);
        returned = true;
    });
    zmq::socket push(zctx, ZMQ_PUSH), pull(zctx, ZMQ_PULL), steer(zctx, ZMQ_REQ);
    push.connect(fa);
    pull.connect(ba);
    steer.connect(ca);
    ASSERT_EQ(push.send({"m0"}), 0);
    auto m0 = pull.recv();
    ASSERT_TRUE(m0);
    EXPECT_EQ((*m0)[0], "m0");

    ASSERT_EQ(steer.send({"PAUSE"}), 0);
    auto r = steer.recv();
    ASSERT_TRUE(r) << "a REP control socket answers every command";
    EXPECT_EQ(*r, (strs{""}));
    for (int i = 1; i <= 5; ++i) ASSERT_EQ(push.send({"m" + std::to_string(i)}), 0);
    EXPECT_FALSE(pull.recv(300ms)) << "paused: nothing is forwarded";

    ASSERT_EQ(steer.send({"RESUME"}), 0);
    ASSERT_TRUE(steer.recv());
    for (int i = 1; i <= 5; ++i) {
        auto m = pull.recv();
        ASSERT_TRUE(m);
        EXPECT_EQ((*m)[0], "m" + std::to_string(i));
    }
    ASSERT_EQ(steer.send({"STATISTICS"}), 0);
    auto s = steer.recv();
    ASSERT_TRUE(s);
    ASSERT_EQ(s->size(), 8u);
    std::uint64_t in = 0;
    std::memcpy(&in, (*s)[0].data(), sizeof in);
    EXPECT_EQ(in, 6u);

    EXPECT_FALSE(returned);
    ASSERT_EQ(steer.send({"TERMINATE"}), 0);
    ASSERT_TRUE(steer.recv());
    p.join();
    EXPECT_TRUE(returned);
}

}  // namespace
