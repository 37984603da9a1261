// room_feed with a real redis-server: one shard publishes (another "node"), another watches.
// Every message once and in order across nodes; catching up at watch; the pub/sub connection
// killed mid-load (refilled from the stream, nothing lost or doubled); a silent stall (messages
// in the stream that pub/sub never brought) caught by the position check; a Redis restart seen
// as an epoch change and reported as a gap; unwatch unsubscribing.
#include "cluster_fixture.hpp"

#include "apps/chat/cluster/room_backplane.hpp"
#include "apps/chat/cluster/room_feed.hpp"

namespace {

using namespace strix;
using namespace strix::chat;
using namespace strix::test;

struct got_gap {
    std::string room;
    std::uint64_t from, to;
    bool epoch_changed;
};

// Shard 0 publishes, shard 1 runs the feed (two nodes as far as Redis can tell).
struct two_nodes {
    explicit two_nodes(std::uint16_t port, room_feed_options fo = {}) : env(2) {
        env.on(0, [&] {
            pub = std::make_unique<redis_client>(env.eng.at(0), options_for(port),
                                                 std::vector<std::vector<std::string>>{backplane_load_command()});
        });
        env.on(1, [&] {
            feed = std::make_unique<room_feed>(
                env.eng.at(1), options_for(port),
                room_feed::sink{[this](std::string_view room, std::uint64_t seq, std::string_view body) {
                                    std::lock_guard lk(mu);
                                    messages.push_back({std::string(room), seq, std::string(body)});
                                },
                                [this](std::string_view room, std::uint64_t from, std::uint64_t to, bool epoch) {
                                    std::lock_guard lk(mu);
                                    gaps.push_back({std::string(room), from, to, epoch});
                                }},
                fo);
        });
    }
    ~two_nodes() {
        env.on(1, [&] { feed.reset(); });
        env.on(0, [&] { pub.reset(); });
    }
    void watch(const std::string& room, std::uint64_t after = 0) {
        env.on(1, [&] { feed->watch(room, after); });
    }
    bool in_sync() {
        return env.on(1, [&] { return feed->in_sync(); });
    }
    room_feed_stats stats() {
        return env.on(1, [&] { return feed->stats(); });
    }
    // Publishes n messages from shard 0 in one turn (pipelined); returns once all are answered.
    void publish(const std::string& room, int first, int n, const std::string& channel_override = {}) {
        std::atomic<int> done{0};
        env.on(0, [&] {
            for (int i = first; i < first + n; ++i) {
                auto args = publish_command(room, "m" + std::to_string(i), 100000, "e1");
                if (!channel_override.empty()) args[5] = channel_override;  // ARGV[1]: the channel
                std::vector<std::string_view> a(args.begin(), args.end());
                pub->command(a, [&](std::error_code ec, const resp_reply& r) {
                    EXPECT_FALSE(ec) << ec.message() << " " << r.describe();
                    ++done;
                });
            }
        });
        ASSERT_TRUE(eventually([&] { return done.load() == n; }));
    }
    std::size_t count() {
        std::lock_guard lk(mu);
        return messages.size();
    }
    // Every message of `room` from seq 1 to n exactly once, in order, body "m<seq>".
    void expect_exactly(const std::string& room, int n, std::uint64_t first_seq = 1) {
        std::lock_guard lk(mu);
        std::uint64_t next = first_seq;
        for (const auto& m : messages) {
            if (m.room != room) continue;
            ASSERT_EQ(m.seq, next) << "out of order, lost or doubled";
            EXPECT_EQ(m.body, "m" + std::to_string(m.seq));
            ++next;
        }
        EXPECT_EQ(next, first_seq + static_cast<std::uint64_t>(n));
    }

    struct msg {
        std::string room;
        std::uint64_t seq;
        std::string body;
    };
    shard_env env;
    std::unique_ptr<redis_client> pub;
    std::unique_ptr<room_feed> feed;
    std::mutex mu;
    std::vector<msg> messages;
    std::vector<got_gap> gaps;
};

TEST(room_feed, delivers_every_message_once_in_order_across_nodes) {
    redis_server redis;
    two_nodes n(redis.port());
    n.watch("a");
    n.watch("b");
    ASSERT_TRUE(eventually([&] { return n.in_sync(); }));
    n.publish("a", 1, 1000);
    n.publish("b", 1, 10);
    ASSERT_TRUE(eventually([&] { return n.count() == 1010; }));
    n.expect_exactly("a", 1000);
    n.expect_exactly("b", 10);
    const auto st = n.stats();
    EXPECT_EQ(st.delivered, 1010u);
    EXPECT_EQ(st.gaps, 0u);
    std::lock_guard lk(n.mu);
    EXPECT_TRUE(n.gaps.empty());
}

TEST(room_feed, catches_up_from_the_stream_when_watching_starts) {
    redis_server redis;
    two_nodes n(redis.port());
    n.publish("a", 1, 20);  // before anyone on the feed's node watched
    n.watch("a", 5);        // the node has delivered up to 5 (e.g. from the database)
    ASSERT_TRUE(eventually([&] { return n.count() == 15; }));
    n.publish("a", 21, 5);
    ASSERT_TRUE(eventually([&] { return n.count() == 20; }));
    n.expect_exactly("a", 20, 6);
    EXPECT_EQ(n.stats().from_stream, 15u);
}

TEST(room_feed, a_pubsub_connection_killed_mid_load_loses_and_doubles_nothing) {
    redis_server redis;
    two_nodes n(redis.port());
    n.watch("a");
    ASSERT_TRUE(eventually([&] { return n.in_sync(); }));
    direct_redis d(redis.port());
    int published = 0;
    for (int round = 0; round < 6; ++round) {
        n.publish("a", published + 1, 300);
        published += 300;
        if (round % 2 == 0) d.integer({"CLIENT", "KILL", "TYPE", "pubsub"});
    }
    ASSERT_TRUE(eventually([&] { return n.count() == static_cast<std::size_t>(published); }, 10s));
    std::this_thread::sleep_for(100ms);
    n.expect_exactly("a", published);
    const auto st = n.stats();
    EXPECT_GE(st.resubscribed, 1u);
    EXPECT_GT(st.from_stream, 0u);  // refilled what pub/sub missed while reconnecting
    EXPECT_EQ(st.gaps, 0u);
}

TEST(room_feed, a_silent_stall_is_caught_by_the_position_check) {
    redis_server redis;
    room_feed_options fo;
    fo.check_interval = 100ms;
    two_nodes n(redis.port(), fo);
    n.watch("a");
    ASSERT_TRUE(eventually([&] { return n.in_sync(); }));
    n.publish("a", 1, 3);
    ASSERT_TRUE(eventually([&] { return n.count() == 3; }));
    // Seqs 4..6 reach the stream but their PUBLISH goes to a channel nobody listens on: from
    // the feed's side exactly a pub/sub that stopped delivering without saying so.
    const auto t0 = std::chrono::steady_clock::now();
    n.publish("a", 4, 3, "chat:{elsewhere}");
    ASSERT_TRUE(eventually([&] { return n.count() == 6; }, 3s));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);  // two to three check intervals
    n.expect_exactly("a", 6);
    EXPECT_GE(n.stats().stalls, 1u);
}

TEST(room_feed, the_position_check_covers_many_rooms_in_batches) {
    redis_server redis;
    room_feed_options fo;
    fo.check_interval = 100ms;
    fo.check_batch = 16;
    two_nodes n(redis.port(), fo);
    for (int r = 0; r < 100; ++r) n.watch("r" + std::to_string(r));
    // In sync and one whole round of checks done: every room's catch-up read is over, so the
    // message below can reach us only through a position check (under ASan on a loaded machine
    // the catch-up of the last rooms could otherwise still be running and pick it up).
    ASSERT_TRUE(eventually([&] { return n.in_sync() && n.stats().checks >= 7; }, 10s));
    const auto before = n.stats();
    // A stall in the last room of the last batch.
    n.publish("r99", 1, 2, "chat:{elsewhere}");
    ASSERT_TRUE(eventually([&] { return n.count() == 2; }, 3s));
    n.expect_exactly("r99", 2);
    const auto st = n.stats();
    EXPECT_GE(st.stalls - before.stalls, 1u);
    // 100 rooms in batches of 16: up to 7 calls per interval (rooms being read sit one out), so
    // a full round takes 7, and far fewer calls than rooms were made per interval.
    EXPECT_GE(st.checks - before.checks, 1u);
    EXPECT_LT(st.checks - before.checks, 7u * 40);
}

TEST(room_feed, a_redis_restart_is_an_epoch_change_reported_as_a_gap) {
    redis_server redis;
    two_nodes n(redis.port());
    n.watch("a");
    ASSERT_TRUE(eventually([&] { return n.in_sync(); }));
    n.publish("a", 1, 10);
    ASSERT_TRUE(eventually([&] { return n.count() == 10; }));
    redis.restart();
    ASSERT_TRUE(eventually([&] { return n.in_sync(); }, 3s));
    // The publisher continues from the database's last seq (the floor) under a new epoch; seq
    // 11..13 were "published" during the outage and only the database has them.
    std::atomic<int> done{0};
    n.env.on(0, [&] {
        for (int i = 14; i <= 16; ++i) {
            const auto args = publish_command("a", "m" + std::to_string(i), 1000, "e2", 0, 13);
            std::vector<std::string_view> a(args.begin(), args.end());
            n.pub->command(a, [&](std::error_code ec, const resp_reply& r) {
                EXPECT_FALSE(ec) << r.describe();
                EXPECT_EQ(parse_publish_reply(r).value_or(room_position{}).epoch, "e2");
                ++done;
            });
        }
    });
    ASSERT_TRUE(eventually([&] { return done.load() == 3 && n.count() == 13; }, 5s));
    std::lock_guard lk(n.mu);
    ASSERT_EQ(n.gaps.size(), 1u);
    EXPECT_EQ(n.gaps[0].from, 10u);
    EXPECT_EQ(n.gaps[0].to, 13u);
    EXPECT_TRUE(n.gaps[0].epoch_changed);
    for (std::size_t i = 10; i < 13; ++i) EXPECT_EQ(n.messages[i].seq, i + 4);
}

TEST(room_feed, the_last_unwatch_unsubscribes) {
    redis_server redis;
    two_nodes n(redis.port());
    n.watch("a");
    n.watch("a");  // two local members
    ASSERT_TRUE(eventually([&] { return n.in_sync(); }));
    direct_redis d(redis.port());
    const auto channel = keys_for_room("a").channel;
    n.env.on(1, [&] { n.feed->unwatch("a"); });
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(d.integer({"PUBLISH", channel, "1:e:x"}), 1);  // still one member here
    n.env.on(1, [&] { n.feed->unwatch("a"); });
    EXPECT_TRUE(eventually([&] { return d.integer({"PUBLISH", channel, "2:e:x"}) == 0; }));
    EXPECT_FALSE(n.env.on(1, [&] { return n.feed->watching("a"); }));
}

}  // namespace
