// strix::link against the real libzmq (4.3): what happens to connections. Heartbeats both ways
// over a quiet connection, reconnection after either side's binder restarts (tcp and ipc), the
// high-water mark (a PUB drops and counts, a PUSH reports would_block and resumes on_writable
// with every message delivered once, in order) and the maximum message size.
#include "link/interop_support.hpp"

#include <strix/link/socket.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>

namespace {

using namespace strix;
using namespace strix::test;
using link::socket_type;
using kind = link::socket_event::kind;
using strs = std::vector<std::string>;
using namespace std::chrono_literals;

class connection : public interop_test_base {};

// A numbered message: 8 digits, then payload bytes that depend on the number.
std::string numbered(std::uint32_t i, std::size_t size) {
    char head[9];
    std::snprintf(head, sizeof head, "%08u", i);
    std::string m = payload(size, static_cast<int>(i % 1000));
    m.replace(0, 8, head, 8);
    return m;
}
std::uint32_t number_of(const std::string& m) { return static_cast<std::uint32_t>(std::stoul(m.substr(0, 8))); }

// --- addresses --------------------------------------------------------------------------------

TEST_F(connection, abstract_ipc_names_reach_libzmq_both_ways) {
    // Linux's abstract namespace ("ipc://@name"): both sides must size the address alike.
    const std::string base = "ipc://@strix-interop-" + std::to_string(::getpid()) + "-";
    inbox& got = env.new_inbox();
    auto& pull = env.make(0, socket_type::pull, {}, &got);
    EXPECT_EQ(env.on(0, [&] { return pull.bind(base + "a"); }), base + "a");
    auto& push = zsock(ZMQ_PUSH);
    push.connect(base + "a");
    ASSERT_EQ(push.send({"to strix"}), 0);
    EXPECT_EQ(got.pop(), strs{"to strix"});

    auto& zpull = zsock(ZMQ_PULL);
    EXPECT_EQ(zpull.bind(base + "b"), base + "b");
    auto& spush = env.make(1, socket_type::push);
    env.on(1, [&] { spush.connect(base + "b"); });
    ASSERT_FALSE(env.send(spush, {"to libzmq"}));
    EXPECT_TRUE(same(zpull.recv(), {"to libzmq"}));
}

// --- heartbeats -------------------------------------------------------------------------------

TEST_F(connection, libzmq_heartbeats_keep_a_quiet_connection_to_strix_up) {
    inbox& got = env.new_inbox();
    event_log& log = env.new_log();
    auto& dealer = env.make(0, socket_type::dealer, {}, &got, &log);
    const std::string a = env.on(0, [&] { return dealer.bind(where(transport::tcp)); });
    auto& z = zsock(ZMQ_DEALER);
    // libzmq pings every 100 ms and drops the connection when nothing (a PONG) comes back within
    // 500 ms; it asks strix to drop it after 2 s of silence. (Margins for a loaded machine.)
    z.set(ZMQ_HEARTBEAT_IVL, 100);
    z.set(ZMQ_HEARTBEAT_TIMEOUT, 500);
    z.set(ZMQ_HEARTBEAT_TTL, 2000);
    auto& mon = watch(z);
    z.connect(a);
    ASSERT_EQ(z.send({"hello"}), 0);
    EXPECT_EQ(got.pop(), strs{"hello"});
    // Quiet for 15 intervals, 3 timeouts: only PINGs and PONGs cross.
    std::this_thread::sleep_for(1500ms);
    EXPECT_EQ(mon.count(ZMQ_EVENT_DISCONNECTED), 0) << "libzmq timed out waiting for strix's PONG";
    EXPECT_EQ(log.count(kind::disconnected), 0u) << describe(log);
    EXPECT_EQ(mon.count(ZMQ_EVENT_HANDSHAKE_SUCCEEDED), 1);
    EXPECT_EQ(peers(dealer), 1u);
    ASSERT_FALSE(env.send(dealer, {"still", "here"}));
    EXPECT_TRUE(same(z.recv(), {"still", "here"}));
    ASSERT_EQ(z.send({"and", "back"}), 0);
    EXPECT_EQ(got.pop(), (strs{"and", "back"}));
}

TEST_F(connection, strix_heartbeats_keep_a_quiet_connection_to_libzmq_up) {
    auto& z = zsock(ZMQ_PAIR);
    auto& mon = watch(z);
    const std::string a = z.bind(where(transport::ipc));
    inbox& got = env.new_inbox();
    event_log& log = env.new_log();
    link::socket_options o;
    o.heartbeat_ivl = 100ms;
    o.heartbeat_timeout = 500ms;
    o.heartbeat_ttl = 1000ms;  // libzmq drops the connection after 1 s without a word from strix
    auto& pair = env.make(1, socket_type::pair, o, &got, &log);
    env.on(1, [&] { pair.connect(a); });
    ASSERT_TRUE(wait_peers(pair, 1, &z));
    ASSERT_EQ(z.send({"hello"}), 0);
    EXPECT_EQ(got.pop(), strs{"hello"});
    // 1.5 s: beyond libzmq's TTL and 3 times strix's timeout; only PINGs and PONGs cross.
    for (int i = 0; i < 30; ++i) {
        z.events();
        std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(log.count(kind::disconnected), 0u) << "strix timed out waiting for libzmq's PONG\n" << describe(log);
    EXPECT_EQ(mon.count(ZMQ_EVENT_DISCONNECTED), 0) << "libzmq heard nothing from strix within the TTL";
    EXPECT_EQ(log.count(kind::handshake_succeeded), 1u);
    ASSERT_FALSE(env.send(pair, {"still here"}));
    EXPECT_TRUE(same(z.recv(), {"still here"}));
}

// --- reconnect --------------------------------------------------------------------------------

class reconnect : public interop_test_base, public ::testing::WithParamInterface<transport> {};

TEST_P(reconnect, strix_connector_comes_back_after_the_libzmq_binder_restarts) {
    event_log& log = env.new_log();
    link::socket_options o;
    o.reconnect_ivl = 20ms;
    auto& push = env.make(0, socket_type::push, o, nullptr, &log);
    auto* pull = &zsock(ZMQ_PULL);
    const std::string a = pull->bind(where(GetParam()));
    env.on(0, [&] { push.connect(a); });
    for (int i = 0; i < 3; ++i) ASSERT_FALSE(env.send(push, {"before", std::to_string(i)}));
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(same(pull->recv(), {"before", std::to_string(i)}));

    pull->close();
    ASSERT_TRUE(log.saw(kind::disconnected)) << describe(log);
    EXPECT_EQ(peers(push), 0u);
    EXPECT_EQ(on(push, [&] { return push.send(std::string_view("lost")); }), link::link_errc::would_block);
    // libzmq closes its listener on its own thread, after zmq_close returned: bind again once
    // the port is free (an ipc path is unlinked and bound afresh by the new bind).
    pull = &zsock(ZMQ_PULL);
    ASSERT_TRUE(eventually([&] {
        try {
            return pull->bind(a) == a;
        } catch (const std::runtime_error&) {
            return false;
        }
    })) << "could not bind "
        << a << " again";
    // env.send retries while strix says would_block (no peer yet).
    for (int i = 0; i < 10; ++i) ASSERT_FALSE(env.send(push, {"after", std::to_string(i)}));
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(same(pull->recv(), {"after", std::to_string(i)}));
    EXPECT_FALSE(pull->recv(100ms));
    EXPECT_EQ(log.count(kind::handshake_succeeded), 2u) << describe(log);
}

TEST_P(reconnect, libzmq_connector_comes_back_after_the_strix_binder_restarts) {
    inbox& got = env.new_inbox();
    auto* pull = &env.make(1, socket_type::pull, {}, &got);
    const std::string a = env.on(1, [&] { return pull->bind(where(GetParam())); });
    auto& push = zsock(ZMQ_PUSH);
    push.set(ZMQ_RECONNECT_IVL, 20);
    auto& mon = watch(push);
    push.connect(a);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(push.send({"before", std::to_string(i)}), 0);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(got.pop(), (strs{"before", std::to_string(i)}));

    env.destroy(*pull);
    ASSERT_TRUE(mon.saw(ZMQ_EVENT_DISCONNECTED));
    pull = &env.make(1, socket_type::pull, {}, &got);
    EXPECT_EQ(env.on(1, [&] { return pull->bind(a); }), a) << "the same address again";
    // libzmq queues these in its pipe until it has reconnected.
    for (int i = 0; i < 10; ++i) ASSERT_EQ(push.send({"after", std::to_string(i)}), 0);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(got.pop(), (strs{"after", std::to_string(i)}));
    EXPECT_TRUE(got.stays_empty(100ms));
    EXPECT_EQ(mon.count(ZMQ_EVENT_HANDSHAKE_SUCCEEDED), 2);
}

TEST_P(reconnect, strix_sub_subscribes_again_after_the_libzmq_publisher_restarts) {
    inbox& got = env.new_inbox();
    link::socket_options o;
    o.reconnect_ivl = 20ms;
    auto& sub = env.make(0, socket_type::sub, o, &got);
    auto* xpub = &zsock(ZMQ_XPUB);  // an XPUB, to see the subscription arrive
    const std::string a = xpub->bind(where(GetParam()));
    env.on(0, [&] {
        sub.subscribe("k.");
        sub.connect(a);
    });
    EXPECT_TRUE(same(xpub->recv(), {"\x01k."}));
    ASSERT_EQ(xpub->send({"k.before"}), 0);
    EXPECT_EQ(got.pop(), strs{"k.before"});

    xpub->close();
    ASSERT_TRUE(eventually([&] { return peers(sub) == 0; }));
    xpub = &zsock(ZMQ_XPUB);
    ASSERT_TRUE(eventually([&] {
        try {
            return xpub->bind(a) == a;
        } catch (const std::runtime_error&) {
            return false;
        }
    }));
    EXPECT_TRUE(same(xpub->recv(), {"\x01k."})) << "the subscription is sent again on the new connection";
    ASSERT_EQ(xpub->send({"k.after"}), 0);
    ASSERT_EQ(xpub->send({"other"}), 0);
    EXPECT_EQ(got.pop(), strs{"k.after"});
    EXPECT_TRUE(got.stays_empty(100ms));
}

TEST_P(reconnect, a_restarted_strix_publisher_hears_libzmq_subscribe_again) {
    event_log& log = env.new_log();
    auto* pub = &env.make(1, socket_type::pub, {}, nullptr, &log);
    const std::string a = env.on(1, [&] { return pub->bind(where(GetParam())); });
    auto& sub = zsock(ZMQ_SUB);
    sub.set(ZMQ_RECONNECT_IVL, 20);
    sub.subscribe("k.");
    sub.connect(a);
    ASSERT_TRUE(eventually([&] { return on(*pub, [&] { return pub->subscribers(); }) == 1; }));
    ASSERT_FALSE(env.send(*pub, {"k.before"}));
    EXPECT_TRUE(same(sub.recv(), {"k.before"}));

    env.destroy(*pub);
    event_log& log2 = env.new_log();
    pub = &env.make(1, socket_type::pub, {}, nullptr, &log2);
    EXPECT_EQ(env.on(1, [&] { return pub->bind(a); }), a);
    ASSERT_TRUE(eventually([&] {
        sub.events();
        return on(*pub, [&] { return pub->subscribers(); }) == 1;
    })) << describe(log2);
    ASSERT_FALSE(env.send(*pub, {"other"}));
    ASSERT_FALSE(env.send(*pub, {"k.after"}));
    EXPECT_TRUE(same(sub.recv(), {"k.after"}));
    EXPECT_EQ(log2.count(kind::subscribed), 1u);
}

INSTANTIATE_TEST_SUITE_P(libzmq, reconnect, ::testing::Values(transport::tcp, transport::ipc),
                         [](const auto& p) { return std::string(name(p.param)); });

// --- high-water marks -------------------------------------------------------------------------

TEST_F(connection, strix_pub_drops_and_counts_for_a_libzmq_sub_that_does_not_read_and_never_blocks) {
    event_log& log = env.new_log();
    link::socket_options o;
    o.sndhwm = 10;
    auto& pub = env.make(0, socket_type::pub, o, nullptr, &log);
    const std::string a = env.on(0, [&] { return pub.bind(where(transport::tcp)); });
    auto& sub = zsock(ZMQ_SUB);
    sub.set(ZMQ_RCVHWM, 10);
    sub.set(ZMQ_RCVBUF, 64 * 1024);  // a small window, so the kernel holds little of the backlog
    sub.subscribe("");
    sub.connect(a);
    ASSERT_TRUE(eventually([&] { return on(pub, [&] { return pub.subscribers(); }) == 1; }));

    // 4000 x 16 KiB = 62.5 MiB at once, far beyond what the kernel buffers and the mark hold.
    constexpr std::uint32_t n = 4000;
    struct outcome {
        std::uint32_t failed = 0;
        std::chrono::steady_clock::duration took{};
    };
    std::vector<std::string> ms;
    for (std::uint32_t i = 0; i < n; ++i) ms.push_back(numbered(i, 16 * 1024));  // built before the clock starts
    const auto out = env.on(0, [&] {
        outcome r;
        const auto t0 = std::chrono::steady_clock::now();
        for (auto& m : ms)
            if (pub.send(m)) ++r.failed;
        r.took = std::chrono::steady_clock::now() - t0;
        return r;
    });
    EXPECT_EQ(out.failed, 0u) << "PUB never reports an error to the sender";
    EXPECT_LT(out.took, 2s) << "PUB must not wait for a slow subscriber";
    const auto st = stats(pub);
    EXPECT_EQ(st.messages_out, n);
    EXPECT_GT(st.dropped_hwm, 0u);
    EXPECT_LT(st.dropped_hwm, n);
    EXPECT_GT(log.count(kind::hwm_reached), 0u);

    // Now read: what was not dropped arrives, in order, each once.
    std::uint32_t received = 0;
    std::int64_t last = -1;
    while (auto m = sub.recv(300ms)) {
        ASSERT_EQ(m->size(), 1u);
        const std::uint32_t k = number_of(m->front());
        ASSERT_GT(static_cast<std::int64_t>(k), last) << "out of order or duplicated";
        ASSERT_EQ(m->front(), numbered(k, 16 * 1024)) << "message " << k << " corrupted";
        last = k;
        ++received;
    }
    EXPECT_EQ(received + stats(pub).dropped_hwm, n) << received << " received";
    EXPECT_GE(received, o.sndhwm);
}

TEST_F(connection, strix_push_would_block_then_on_writable_resumes_as_libzmq_pull_reads) {
    link::socket_options o;
    o.sndhwm = 10;
    auto& push = env.make(1, socket_type::push, o);
    auto& pull = zsock(ZMQ_PULL);
    pull.set(ZMQ_RCVHWM, 10);
    pull.set(ZMQ_RCVBUF, 64 * 1024);
    const std::string a = pull.bind(where(transport::tcp));
    env.on(1, [&] { push.connect(a); });
    ASSERT_TRUE(wait_peers(push, 1, &pull));

    // The shard sends until would_block and goes on from on_writable: 400 x 64 KiB = 25 MiB.
    constexpr std::uint32_t n = 400;
    constexpr std::size_t size = 64 * 1024;
    struct pump_state {
        std::atomic<std::uint32_t> next{0};
        std::atomic<int> blocked{0}, writable{0};
    };
    auto st = std::make_shared<pump_state>();
    auto pump = [st, &push] {
        while (st->next < n) {
            if (auto ec = push.send(numbered(st->next, size))) {
                if (ec == link::link_errc::would_block) ++st->blocked;
                return;
            }
            ++st->next;
        }
    };
    env.on(1, [&] {
        push.on_writable([st, pump] {
            ++st->writable;
            pump();
        });
        pump();
    });
    EXPECT_GE(st->blocked.load(), 1);
    // The kernel takes a few MiB before the sender stalls for good: wait until it has.
    std::uint32_t held = 0;
    ASSERT_TRUE(eventually([&] {
        held = st->next;
        std::this_thread::sleep_for(100ms);
        return st->next == held;
    })) << "the sender never stalled";
    EXPECT_LT(held, n) << "nobody reads: the mark must stop the sender";
    EXPECT_EQ(st->blocked.load(), st->writable.load() + 1) << "waiting for on_writable";

    for (std::uint32_t i = 0; i < n; ++i) {
        auto m = pull.recv();
        ASSERT_TRUE(m) << "message " << i << " never came (" << st->next << " sent, " << st->blocked << " blocked, "
                       << st->writable << " writable)";
        ASSERT_EQ(m->size(), 1u);
        ASSERT_EQ(number_of(m->front()), i) << "lost, duplicated or reordered";
        ASSERT_EQ(m->front(), numbered(i, size)) << "message " << i << " corrupted";
    }
    EXPECT_FALSE(pull.recv(100ms)) << "more than was sent";
    EXPECT_EQ(st->next.load(), n);
    EXPECT_GE(st->writable.load(), 1);
    EXPECT_EQ(st->writable.load(), st->blocked.load()) << "one on_writable per would_block";
    EXPECT_EQ(stats(push).messages_out, n);
}

TEST_F(connection, strix_router_drops_for_a_full_libzmq_dealer_or_with_mandatory_would_blocks) {
    for (const bool mandatory : {false, true}) {
        SCOPED_TRACE(mandatory ? "router_mandatory" : "plain");
        link::socket_options o;
        o.sndhwm = 10;
        o.router_mandatory = mandatory;
        auto& router = env.make(0, socket_type::router, o);
        const std::string a = env.on(0, [&] { return router.bind(where(transport::tcp)); });
        auto& dealer = zsock(ZMQ_DEALER);
        dealer.set(ZMQ_ROUTING_ID, std::string("d"));
        dealer.set(ZMQ_RCVHWM, 10);
        dealer.set(ZMQ_RCVBUF, 64 * 1024);
        dealer.connect(a);
        ASSERT_TRUE(wait_peers(router, 1));
        // 400 x 64 KiB to a DEALER that does not read.
        constexpr std::uint32_t n = 400;
        auto writable = std::make_shared<std::atomic<int>>(0);
        env.on(0, [&] { router.on_writable([writable] { ++*writable; }); });
        std::uint32_t accepted = 0;
        bool would_block = false;
        env.on(0, [&] {
            for (; accepted < n; ++accepted) {
                auto ec = router.send({link::as_bytes("d"), link::as_bytes(numbered(accepted, 64 * 1024))});
                if (ec == link::link_errc::would_block) {
                    would_block = true;
                    return;
                }
                if (ec) ADD_FAILURE() << ec.message();
            }
        });
        const auto st = stats(router);
        if (!mandatory) {
            EXPECT_FALSE(would_block) << "a plain ROUTER drops instead";
            EXPECT_EQ(accepted, n);
            EXPECT_GT(st.dropped_hwm, 0u);
        } else {
            EXPECT_TRUE(would_block) << "ROUTER_MANDATORY reports the full peer";
            EXPECT_EQ(st.dropped_hwm, 0u);
        }
        // Read what came: in order, never duplicated, and with mandatory every accepted message.
        std::uint32_t received = 0;
        std::int64_t last = -1;
        while (auto m = dealer.recv(300ms)) {
            ASSERT_EQ(m->size(), 1u);
            const std::uint32_t k = number_of(m->front());
            ASSERT_GT(static_cast<std::int64_t>(k), last);
            ASSERT_EQ(m->front(), numbered(k, 64 * 1024));
            last = k;
            ++received;
        }
        if (mandatory) {
            EXPECT_EQ(received, accepted);
            EXPECT_EQ(writable->load(), 1) << "on_writable once the DEALER drained it";
            EXPECT_FALSE(env.on(0, [&] { return router.send({link::as_bytes("d"), link::as_bytes("more")}); }));
            EXPECT_TRUE(same(dealer.recv(), {"more"}));
        } else {
            EXPECT_EQ(received + stats(router).dropped_hwm, n);
        }
        dealer.close();
        env.destroy(router);
    }
}

// --- message size -----------------------------------------------------------------------------

TEST_F(connection, a_libzmq_message_part_over_max_msg_size_closes_the_connection) {
    inbox& got = env.new_inbox();
    event_log& log = env.new_log();
    auto& pull = env.make(0, socket_type::pull, {}, &got, &log);
    ASSERT_EQ(env.on(0, [&] { return pull.options().max_msg_size; }), 1024u * 1024u);
    const std::string a = env.on(0, [&] { return pull.bind(where(transport::tcp)); });
    auto& push = zsock(ZMQ_PUSH);
    push.set(ZMQ_RECONNECT_IVL, 20);
    auto& mon = watch(push);
    push.connect(a);
    // Parts up to the limit each, more than the limit together: accepted.
    const strs two{payload(1024 * 1024, 1), payload(1024 * 1024, 2)};
    ASSERT_EQ(push.send(two), 0);
    EXPECT_TRUE(same(got.pop(), two));
    // One byte over: closed before the body is buffered, counted, not delivered.
    ASSERT_EQ(push.send({payload(1024 * 1024 + 1, 3)}), 0);
    ASSERT_TRUE(mon.saw(ZMQ_EVENT_DISCONNECTED));
    ASSERT_TRUE(eventually([&] { return stats(pull).protocol_errors == 1; })) << describe(log);
    bool too_large = false;
    for (auto& e : log.all())
        too_large |= e.what == kind::disconnected && e.error == link::link_errc::message_too_large;
    EXPECT_TRUE(too_large) << describe(log);
    // libzmq reconnects; the next messages arrive.
    ASSERT_EQ(push.send({"after"}), 0);
    EXPECT_EQ(got.pop(), strs{"after"});
    EXPECT_TRUE(got.stays_empty(100ms));
    EXPECT_EQ(stats(pull).messages_in, 2u);
}

}  // namespace
