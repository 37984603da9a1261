// ZAP through a handler socket, the harder cases: a handler that never answers (the handshake
// times out while the shard keeps serving other sockets), malformed replies, a shard ROUTER as
// the handler of a shard server, handler names scoped per context, and a libzmq CURVE client
// against a strix server whose handler is a blocking REP on a thread.
#include "link/zap_support.hpp"

#include <gtest/gtest.h>

namespace {

using namespace strix;
using namespace strix::test;
using namespace strix::test::zap;

TEST(zap_handler, one_that_never_answers_times_the_handshake_out_while_the_shard_serves_others) {
    link::context ctx(1);  // one shard: server, handler and the other sockets share its loop
    zap_thread zap(ctx, [](const strs&) -> strs { return {}; });
    const auto server_keys = link::curve_keypair::generate();
    auto so = curve_server(server_keys);
    const auto ivl = std::chrono::milliseconds(3000);
    so.handshake_ivl = ivl;
    blocking_socket pull(ctx, socket_type::pull, so);
    const std::string where = pull.bind("tcp://127.0.0.1:*");
    blocking_socket rep(ctx, socket_type::rep, quick());
    const std::string rep_at = rep.bind("tcp://127.0.0.1:*");
    std::thread echo([&] {
        for (int i = 0; i < 50; ++i) {
            auto q = rep.recv(std::chrono::seconds(5));
            if (!q) return;
            rep.send(q->size() ? std::string((*q)[0].text()) : std::string());
        }
    });

    link::context clients(1);
    blocking_socket c(clients, socket_type::push,
                      curve_client(link::curve_keypair::generate(), server_keys.public_z85()));
    c.connect(where);
    ASSERT_TRUE(eventually([&] { return zap.count() >= 1; }, std::chrono::seconds(5)));
    const auto asked = std::chrono::steady_clock::now();
    // The handshake waits for ZAP; the shard answers 50 round trips meanwhile.
    blocking_socket req(clients, socket_type::req, quick());
    req.connect(rep_at);
    for (int i = 0; i < 50; ++i) {
        ASSERT_FALSE(req.send("r" + std::to_string(i), std::chrono::seconds(5)));
        auto a = req.recv(std::chrono::seconds(5));
        ASSERT_TRUE(a);
        EXPECT_EQ((*a)[0].text(), "r" + std::to_string(i));
    }
    echo.join();
    const bool within_ivl = std::chrono::steady_clock::now() - asked < ivl - std::chrono::milliseconds(500);
    bool failed_yet = false;
    while (auto e = pull.next_event(std::chrono::milliseconds(0)))
        failed_yet |= e->what == socket_event::kind::handshake_failed;
    // Done well inside the interval (as always, short of a stalled machine): the handshake was
    // still waiting all along, the round trips served beside it.
    if (within_ivl) {
        EXPECT_FALSE(failed_yet);
    }
    if (!failed_yet) {
        EXPECT_TRUE(wait_event(pull, failed_with(link::link_errc::handshake_timeout, ""), std::chrono::seconds(10)));
    }
    EXPECT_EQ(pull.stats().peers, 0u);
    EXPECT_GE(pull.stats().handshake_failures, 1u);
}

TEST(zap_handler, malformed_replies_fail_the_handshake_and_say_how) {
    link::context ctx(1);
    std::atomic<int> mode{0};
    zap_thread zap(ctx, [&](const strs& r) -> strs {
        switch (mode.load()) {
            case 0: return {"2.0", r[1], "200", "", "", ""};
            case 1: return {"1.0", r[1], "600", "", "", ""};
            case 2: return {"1.0", "nope", "200", "", "", ""};
            case 3: return {"1.0", r[1], "200", "", "", std::string("\x05") + "Bad"};
            default: return {"1.0", r[1], "200", ""};  // too few frames
        }
    });
    auto so = quick();
    so.security.plain_server = true;
    blocking_socket pull(ctx, socket_type::pull, so);
    const std::string where = pull.bind("tcp://127.0.0.1:*");
    link::context clients(1);
    const char* expect[] = {"bad version", "invalid status code", "bad request id", "invalid metadata", "malformed"};
    for (int i = 0; i < 5; ++i) {
        SCOPED_TRACE(expect[i]);
        mode = i;
        blocking_socket c(clients, socket_type::push, plain_client("u", "p"));
        c.connect(where);
        EXPECT_TRUE(wait_event(pull, failed_with(link::link_errc::zap_bad_reply, expect[i])));
    }
    EXPECT_EQ(pull.stats().peers, 0u);
}

TEST(zap_handler, a_shard_router_answers_a_shard_server) {
    link_env env;
    auto& zlog = env.new_log();
    auto& handler = env.make(1, socket_type::router, quick(), nullptr, &zlog);
    std::atomic<int> asked{0};
    env.on(1, [&] {
        handler.bind("inproc://zeromq.zap.01");
        handler.on_message([&](link::message_view m) {
            ++asked;
            // routing id, "", version, request id, domain, address, identity, mechanism, user, password
            const bool ok = m.size() == 10 && m.text(8) == "carol";
            link::message r;
            r.add(m[0]).add(m[1]).add("1.0").add(m[3]).add(ok ? "200" : "400").add("").add(ok ? "carol!" : "").add("");
            handler.send(r);
        });
    });
    auto so = quick();
    so.security.plain_server = true;
    std::mutex mu;
    std::vector<std::string> users;
    auto& log = env.new_log();
    auto& pull = env.make(0, socket_type::pull, so, nullptr, &log);
    env.on(0, [&] {
        pull.on_message([&](link::message_view m) {
            std::lock_guard lk(mu);
            const auto& p = m.properties();
            users.push_back(p && p->get("User-Id") ? *p->get("User-Id") : "?");
        });
    });
    const std::string where = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });
    auto& dave = env.make(1, socket_type::push, plain_client("dave", "x"));
    env.on(1, [&] { dave.connect(where); });
    ASSERT_TRUE(log.saw(socket_event::kind::handshake_failed));
    auto& carol = env.make(1, socket_type::push, plain_client("carol", "x"));
    env.on(1, [&] { carol.connect(where); });
    ASSERT_FALSE(env.send(carol, {"c1"}));
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lk(mu);
        return !users.empty();
    }));
    std::lock_guard lk(mu);
    EXPECT_EQ(users.front(), "carol!");
    EXPECT_GE(asked.load(), 2);
}

TEST(zap_handler, handler_names_are_per_context) {
    // Each context has its own inproc names, as each libzmq context does: both bind the ZAP name,
    // and a server asks its own context's handler.
    link::context a(1), b(1);
    zap_thread refuse(a, [](const strs& r) -> strs { return {"1.0", r[1], "400", "", "", ""}; });
    zap_thread accept(b, [](const strs& r) -> strs { return {"1.0", r[1], "200", "", "b", ""}; });
    auto so = quick();
    so.security.plain_server = true;
    blocking_socket in_a(a, socket_type::pull, so);
    const std::string where = in_a.bind("tcp://127.0.0.1:*");
    blocking_socket c(b, socket_type::push, plain_client("u", "p"));
    c.connect(where);
    EXPECT_TRUE(wait_event(in_a, failed_with(link::link_errc::auth_failed, "400")));
    EXPECT_GE(refuse.count(), 1u);
    EXPECT_EQ(accept.count(), 0u);
}

TEST(zap_handler, a_libzmq_curve_client_against_a_strix_server_with_the_inproc_handler) {
    if (!zmq_curve()) GTEST_SKIP() << "libzmq built without CURVE";
    link::context ctx(1);
    const auto server_keys = link::curve_keypair::generate();
    char pub[41], sec[41], pub2[41], sec2[41];
    ASSERT_EQ(zmq_curve_keypair(pub, sec), 0);
    ASSERT_EQ(zmq_curve_keypair(pub2, sec2), 0);
    const auto raw = link::z85_decode(pub);
    ASSERT_TRUE(raw);
    const std::string allowed(reinterpret_cast<const char*>(raw->data()), raw->size());
    zap_thread zap(ctx, [&](const strs& r) -> strs {
        const bool ok = r.size() == 7 && r[6] == allowed;
        return {"1.0", r[1], ok ? "200" : "400", "", ok ? "zmq-user" : "", ""};
    });
    blocking_socket pull(ctx, socket_type::pull, curve_server(server_keys));
    const std::string where = pull.bind("tcp://127.0.0.1:*");

    zmq::context zctx;
    zmq::socket bad(zctx, ZMQ_PUSH);
    zmq::monitor mon(zctx, bad);
    bad.set(ZMQ_CURVE_SERVERKEY, server_keys.public_z85());
    bad.set(ZMQ_CURVE_PUBLICKEY, std::string(pub2));
    bad.set(ZMQ_CURVE_SECRETKEY, std::string(sec2));
    bad.connect(where);
    EXPECT_TRUE(wait_event(pull, failed_with(link::link_errc::auth_failed, "400")));
    EXPECT_TRUE(mon.saw(ZMQ_EVENT_HANDSHAKE_FAILED_AUTH));
    EXPECT_EQ(mon.count(ZMQ_EVENT_HANDSHAKE_SUCCEEDED), 0);

    zmq::socket good(zctx, ZMQ_PUSH);
    good.set(ZMQ_CURVE_SERVERKEY, server_keys.public_z85());
    good.set(ZMQ_CURVE_PUBLICKEY, std::string(pub));
    good.set(ZMQ_CURVE_SECRETKEY, std::string(sec));
    good.connect(where);
    for (int i = 0; i < 30; ++i) ASSERT_EQ(good.send({payload(100, i)}), 0);
    for (int i = 0; i < 30; ++i) {
        auto m = pull.recv(std::chrono::seconds(5));
        ASSERT_TRUE(m);
        EXPECT_EQ((*m)[0].text(), payload(100, i));
        EXPECT_EQ(prop(*m, "User-Id"), "zmq-user");
        EXPECT_EQ(prop(*m, "Socket-Type"), "PUSH");
    }
}

}  // namespace
