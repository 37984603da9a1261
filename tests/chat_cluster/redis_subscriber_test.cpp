// redis_subscriber against a real redis-server: messages after the confirmation, unsubscribe,
// every channel subscribed again within 2 s of a Redis restart, and a silent Redis noticed by
// the PING deadline.
#include "cluster_fixture.hpp"

#include "apps/chat/cluster/redis_errc.hpp"

namespace {

using namespace strix;
using namespace strix::chat;
using namespace strix::test;

// What a subscriber heard, read from the test thread.
struct heard {
    std::mutex mu;
    std::vector<std::pair<std::string, std::string>> messages;
    std::vector<std::string> subscribed;
    int ups = 0, downs = 0;

    redis_subscriber::events events() {
        return {[this](std::string_view ch, std::string_view m) {
                    std::lock_guard lk(mu);
                    messages.emplace_back(ch, m);
                },
                [this](std::string_view ch) {
                    std::lock_guard lk(mu);
                    subscribed.emplace_back(ch);
                },
                [this](bool up) {
                    std::lock_guard lk(mu);
                    (up ? ups : downs)++;
                }};
    }
    template <class F>
    auto read(F f) {
        std::lock_guard lk(mu);
        return f();
    }
};

struct subscriber_holder {
    subscriber_holder(shard_env& e, redis_options o, heard& h) : env(e) {
        env.on(0, [&] { s = std::make_unique<redis_subscriber>(env.eng.at(0), std::move(o), h.events()); });
    }
    ~subscriber_holder() {
        env.on(0, [&] { s.reset(); });
    }
    void subscribe(const std::string& ch) {
        env.on(0, [&] { s->subscribe(ch); });
    }
    void unsubscribe(const std::string& ch) {
        env.on(0, [&] { s->unsubscribe(ch); });
    }
    shard_env& env;
    std::unique_ptr<redis_subscriber> s;
};

TEST(redis_subscriber, delivers_messages_of_subscribed_channels_in_order) {
    redis_server redis;
    shard_env env;
    heard h;
    subscriber_holder sub(env, options_for(redis.port()), h);
    sub.subscribe("a");
    sub.subscribe("b");
    sub.subscribe("a");  // already wanted: no second confirmation
    ASSERT_TRUE(eventually([&] { return h.read([&] { return h.subscribed.size() == 2; }); }));
    direct_redis d(redis.port());
    for (int i = 0; i < 100; ++i) EXPECT_EQ(d.integer({"PUBLISH", i % 2 ? "a" : "b", std::to_string(i)}), 1);
    EXPECT_EQ(d.integer({"PUBLISH", "c", "nobody"}), 0);
    ASSERT_TRUE(eventually([&] { return h.read([&] { return h.messages.size() == 100; }); }));
    h.read([&] {
        for (int i = 0; i < 100; ++i) {
            EXPECT_EQ(h.messages[static_cast<std::size_t>(i)].first, i % 2 ? "a" : "b");
            EXPECT_EQ(h.messages[static_cast<std::size_t>(i)].second, std::to_string(i));
        }
        return 0;
    });
    EXPECT_EQ(h.read([&] { return h.subscribed.size(); }), 2u);
}

TEST(redis_subscriber, unsubscribe_stops_delivery) {
    redis_server redis;
    shard_env env;
    heard h;
    subscriber_holder sub(env, options_for(redis.port()), h);
    sub.subscribe("a");
    ASSERT_TRUE(eventually([&] { return h.read([&] { return h.subscribed.size() == 1; }); }));
    sub.unsubscribe("a");
    direct_redis d(redis.port());
    // Messages published before Redis applied the UNSUBSCRIBE still reach us and are dropped.
    ASSERT_TRUE(eventually([&] { return d.integer({"PUBLISH", "a", "x"}) == 0; }));
    // Subscribing again confirms again and delivers again.
    sub.subscribe("a");
    ASSERT_TRUE(eventually([&] { return h.read([&] { return h.subscribed.size() == 2; }); }));
    EXPECT_EQ(d.integer({"PUBLISH", "a", "y"}), 1);
    ASSERT_TRUE(eventually([&] { return h.read([&] { return !h.messages.empty(); }); }));
    std::this_thread::sleep_for(50ms);
    h.read([&] {
        ASSERT_EQ(h.messages.size(), 1u);
        EXPECT_EQ(h.messages[0].second, "y");
    });
}

TEST(redis_subscriber, resubscribes_every_channel_within_two_seconds_of_a_restart) {
    redis_server redis;
    shard_env env;
    heard h;
    subscriber_holder sub(env, options_for(redis.port()), h);
    for (int i = 0; i < 600; ++i) sub.subscribe("room:" + std::to_string(i));  // more than one SUBSCRIBE batch
    ASSERT_TRUE(eventually([&] { return h.read([&] { return h.subscribed.size() == 600; }); }));
    redis.kill();
    ASSERT_TRUE(eventually([&] { return h.read([&] { return h.downs == 1; }); }));
    const auto t0 = std::chrono::steady_clock::now();
    redis.start();
    ASSERT_TRUE(eventually([&] { return h.read([&] { return h.subscribed.size() == 1200; }); }, 5s));
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(took, 2s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
    direct_redis d(redis.port());
    EXPECT_EQ(d.integer({"PUBLISH", "room:599", "after"}), 1);
    ASSERT_TRUE(eventually([&] { return h.read([&] { return h.messages.size() == 1; }); }));
    EXPECT_EQ(h.read([&] { return h.ups; }), 2);
}

TEST(redis_subscriber, a_silent_redis_is_noticed_by_the_ping_deadline) {
    redis_server redis;
    shard_env env;
    heard h;
    auto o = options_for(redis.port());
    o.ping_interval = 100ms;
    o.command_timeout = 300ms;
    subscriber_holder sub(env, o, h);
    sub.subscribe("a");
    ASSERT_TRUE(eventually([&] { return h.read([&] { return h.subscribed.size() == 1; }); }));
    // Idle but alive: pings are answered, nothing happens.
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(h.read([&] { return h.downs; }), 0);
    redis.pause();
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(eventually([&] { return h.read([&] { return h.downs >= 1; }); }, 3s));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
    EXPECT_EQ(env.on(0, [&] { return sub.s->last_error(); }), make_error_code(redis_errc::timed_out));
    redis.resume();
    ASSERT_TRUE(eventually([&] { return h.read([&] { return h.subscribed.size() >= 2; }); }));
}

}  // namespace
