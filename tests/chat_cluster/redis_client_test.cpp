// redis_client against a real redis-server (and a fake one for what a real one never does):
// pipelining and order, error replies, Redis unreachable at start, a restart (reconnect within
// 2 s, on_connect commands sent again), an unanswered command resetting the connection, hostile
// and unasked-for replies, the pending cap, close().
#include "cluster_fixture.hpp"

#include "apps/chat/cluster/redis_errc.hpp"
#include "apps/chat/cluster/room_backplane.hpp"

#include <strix/net/net_errc.hpp>

namespace {

using namespace strix;
using namespace strix::chat;
using namespace strix::test;

struct client_holder {
    client_holder(shard_env& e, redis_options o, std::vector<std::vector<std::string>> on_connect = {}) : env(e) {
        env.on(0, [&] { c = std::make_unique<redis_client>(env.eng.at(0), std::move(o), std::move(on_connect)); });
    }
    ~client_holder() {
        env.on(0, [&] { c.reset(); });
    }
    redis_client& operator*() { return *c; }
    template <class F>
    auto read(F f) {
        return env.on(0, [&] { return f(*c); });
    }
    shard_env& env;
    std::unique_ptr<redis_client> c;
};

TEST(redis_client, pipelined_replies_come_back_in_order) {
    redis_server redis;
    shard_env env;
    client_holder c(env, options_for(redis.port()));
    constexpr int n = 2000;
    std::mutex mu;
    std::vector<long long> got;
    std::vector<std::error_code> errors;
    // All in one turn: they go out pipelined, most in one write.
    env.on(0, [&] {
        for (int i = 0; i < n; ++i) {
            (*c).command({"INCR", "counter"}, [&](std::error_code ec, const resp_reply& r) {
                std::lock_guard lk(mu);
                if (ec) errors.push_back(ec);
                got.push_back(r.integer);
            });
        }
    });
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lk(mu);
        return got.size() == n;
    }));
    std::lock_guard lk(mu);
    EXPECT_TRUE(errors.empty());
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], i + 1) << "reply " << i;
}

TEST(redis_client, error_replies_carry_redis_text) {
    redis_server redis;
    shard_env env;
    client_holder c(env, options_for(redis.port()));
    auto r = call(env, *c, {"NOSUCHCOMMAND", "x"});
    EXPECT_EQ(r.ec, make_error_code(redis_errc::server_error));
    EXPECT_EQ(r.reply.type, resp_reply::kind::error);
    EXPECT_NE(r.reply.str.find("unknown command"), std::string::npos) << r.reply.str;
    // The connection is fine afterwards.
    r = call(env, *c, {"SET", "k", std::string("v\r\n\0", 4)});
    EXPECT_FALSE(r.ec);
    r = call(env, *c, {"GET", "k"});
    EXPECT_EQ(r.reply.str, std::string("v\r\n\0", 4));
}

TEST(redis_client, unreachable_at_start_fails_clearly_then_connects_when_redis_comes) {
    const auto port = free_port();
    shard_env env;
    auto o = options_for(port);
    o.command_timeout = 600ms;
    o.reconnect_max = 200ms;
    client_holder c(env, o);
    const auto t0 = std::chrono::steady_clock::now();
    auto r = call(env, *c, {"PING"});
    const auto waited = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(r.ec, make_error_code(redis_errc::not_connected));
    EXPECT_GE(waited, 550ms);
    EXPECT_LT(waited, 2s);
    EXPECT_GT(c.read([](redis_client& x) { return x.connect_failures(); }), 0u);
    EXPECT_EQ(c.read([](redis_client& x) { return x.last_error(); }),
              std::make_error_code(std::errc::connection_refused));

    redis_server redis(port);
    ASSERT_TRUE(eventually([&] { return c.read([](redis_client& x) { return x.is_up(); }); }, 3s));
    r = call(env, *c, {"PING"});
    EXPECT_FALSE(r.ec) << r.ec.message();
    EXPECT_EQ(r.reply.str, "PONG");
}

TEST(redis_client, reconnects_after_a_restart_and_replays_its_setup) {
    redis_server redis;
    shard_env env;
    client_holder c(env, options_for(redis.port()), {backplane_load_command()});
    auto r = call(env, *c, publish_command("r1", "hello", 100, "e1"));
    ASSERT_FALSE(r.ec) << r.reply.describe();
    EXPECT_EQ(parse_publish_reply(r.reply)->seq, 1u);

    redis.kill();
    // Commands sent to a dead Redis fail with the reason the connection ended.
    ASSERT_TRUE(eventually([&] { return !c.read([](redis_client& x) { return x.is_up(); }); }, 3s));
    const auto t0 = std::chrono::steady_clock::now();
    redis.start();
    ASSERT_TRUE(eventually([&] { return c.read([](redis_client& x) { return x.is_up(); }); }, 3s));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    // The empty Redis got the functions again before this FCALL.
    r = call(env, *c, publish_command("r1", "again", 100, "e2"));
    ASSERT_FALSE(r.ec) << r.reply.describe();
    const auto p = parse_publish_reply(r.reply);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->seq, 1u);
    EXPECT_EQ(p->epoch, "e2");
    EXPECT_EQ(c.read([](redis_client& x) { return x.connects(); }), 2u);
}

TEST(redis_client, in_flight_commands_fail_with_the_connection_not_resent) {
    redis_server redis;
    shard_env env;
    client_holder c(env, options_for(redis.port()));
    ASSERT_FALSE(call(env, *c, {"PING"}).ec);
    // BLPOP holds its reply; the crash ends the connection under it.
    auto p = std::make_shared<std::promise<std::error_code>>();
    auto f = p->get_future();
    env.on(0, [&] {
        (*c).command({"BLPOP", "nothing", "0"}, [p](std::error_code ec, const resp_reply&) { p->set_value(ec); });
    });
    std::this_thread::sleep_for(50ms);
    redis.kill();
    ASSERT_EQ(f.wait_for(3s), std::future_status::ready);
    const auto ec = f.get();
    EXPECT_TRUE(ec == make_error_code(net_errc::peer_closed) || ec == std::make_error_code(std::errc::connection_reset))
        << ec.message();
}

TEST(redis_client, an_unanswered_command_resets_the_connection) {
    redis_server redis;
    shard_env env;
    auto o = options_for(redis.port());
    o.command_timeout = 300ms;
    client_holder c(env, o);
    ASSERT_FALSE(call(env, *c, {"PING"}).ec);
    redis.pause();
    const auto t0 = std::chrono::steady_clock::now();
    auto r = call(env, *c, {"PING"});
    EXPECT_EQ(r.ec, make_error_code(redis_errc::timed_out));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
    redis.resume();
    ASSERT_TRUE(eventually([&] {
        auto x = call(env, *c, {"PING"});
        return !x.ec && x.reply.str == "PONG";
    }));
    EXPECT_GE(c.read([](redis_client& x) { return x.connects(); }), 2u);
}

TEST(redis_client, an_oversized_array_header_is_refused_before_allocating) {
    fake_redis fake("*2000000000\r\n");
    shard_env env;
    client_holder c(env, options_for(fake.port()));
    const auto r = call(env, *c, {"PING"});
    EXPECT_EQ(r.ec, make_error_code(net_errc::frame_too_large)) << r.ec.message();
    // It keeps trying (the fake answers every connection the same way).
    EXPECT_TRUE(eventually([&] { return fake.accepted() >= 2; }));
}

TEST(redis_client, an_oversized_bulk_is_refused_before_its_body) {
    fake_redis fake("$500000000\r\nabc");
    shard_env env;
    client_holder c(env, options_for(fake.port()));
    EXPECT_EQ(call(env, *c, {"GET", "k"}).ec, make_error_code(net_errc::frame_too_large));
}

TEST(redis_client, garbage_is_a_protocol_error) {
    fake_redis fake("!garbage\r\n");
    shard_env env;
    client_holder c(env, options_for(fake.port()));
    EXPECT_EQ(call(env, *c, {"PING"}).ec, make_error_code(net_errc::bad_frame));
}

TEST(redis_client, a_reply_nobody_asked_for_drops_the_connection) {
    fake_redis fake("+OK\r\n", true);
    shard_env env;
    client_holder c(env, options_for(fake.port()));
    ASSERT_TRUE(eventually([&] { return fake.accepted() >= 2; }));
    EXPECT_EQ(c.read([](redis_client& x) { return x.last_error(); }), make_error_code(redis_errc::protocol_error));
}

TEST(redis_client, pending_commands_are_capped_and_close_fails_them) {
    const auto port = free_port();
    shard_env env;
    auto o = options_for(port);
    o.max_pending = 3;
    o.command_timeout = 10s;
    client_holder c(env, o);
    std::mutex mu;
    std::vector<std::error_code> got;
    env.on(0, [&] {
        for (int i = 0; i < 4; ++i) {
            (*c).command({"PING"}, [&](std::error_code ec, const resp_reply&) {
                std::lock_guard lk(mu);
                got.push_back(ec);
            });
        }
    });
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lk(mu);
        return got.size() == 1;
    }));
    {
        std::lock_guard lk(mu);
        EXPECT_EQ(got[0], make_error_code(redis_errc::queue_full));
    }
    env.on(0, [&] { (*c).close(); });
    std::lock_guard lk(mu);
    ASSERT_EQ(got.size(), 4u);
    for (std::size_t i = 1; i < 4; ++i) EXPECT_EQ(got[i], make_error_code(redis_errc::closed));
}

}  // namespace
