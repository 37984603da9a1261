// The per-message Redis function against a real redis-server: one seq per room without holes,
// the stream and the channel carrying exactly what was published, reading what came after a
// seq, a trimmed stream reported as a gap, a Redis that lost its data detected by the epoch, and
// two shards publishing to one room at once getting one order.
#include "cluster_fixture.hpp"

#include "apps/chat/cluster/redis_errc.hpp"
#include "apps/chat/cluster/room_backplane.hpp"

#include <set>

namespace {

using namespace strix;
using namespace strix::chat;
using namespace strix::test;

struct clients {
    clients(shard_env& e, std::uint16_t port) : env(e), c(e.eng.shard_count()) {
        for (unsigned s = 0; s < c.size(); ++s) {
            env.on(s, [&, s] {
                c[s] = std::make_unique<redis_client>(env.eng.at(s), options_for(port),
                                                      std::vector<std::vector<std::string>>{backplane_load_command()});
            });
        }
    }
    ~clients() {
        for (unsigned s = 0; s < c.size(); ++s) env.on(s, [&, s] { c[s].reset(); });
    }
    room_position publish(const std::string& room, const std::string& msg, std::uint32_t max = 1000,
                          const std::string& epoch = "e1") {
        const auto r = call(env, *c[0], publish_command(room, msg, max, epoch));
        EXPECT_FALSE(r.ec) << r.ec.message() << " " << r.reply.describe();
        const auto p = parse_publish_reply(r.reply);
        EXPECT_TRUE(p) << r.reply.describe();
        return p.value_or(room_position{});
    }
    room_since since(const std::string& room, std::uint64_t after, std::uint32_t limit) {
        const auto r = call(env, *c[0], since_command(room, after, limit));
        EXPECT_FALSE(r.ec) << r.ec.message() << " " << r.reply.describe();
        const auto s = parse_since_reply(r.reply);
        EXPECT_TRUE(s) << r.reply.describe();
        return s.value_or(room_since{});
    }
    shard_env& env;
    std::vector<std::unique_ptr<redis_client>> c;
};

TEST(room_backplane, publish_gives_seqs_in_order_to_stream_and_channel) {
    redis_server redis;
    shard_env env;
    clients cl(env, redis.port());
    // A subscriber on the room's channel sees what the function published.
    std::mutex mu;
    std::vector<room_message> seen;
    std::atomic<bool> ready{false};
    std::unique_ptr<redis_subscriber> sub;
    env.on(0, [&] {
        sub = std::make_unique<redis_subscriber>(env.eng.at(0), options_for(redis.port()),
                                                 redis_subscriber::events{[&](std::string_view,
                                                                              std::string_view payload) {
                                                                              auto m = parse_channel_message(payload);
                                                                              std::lock_guard lk(mu);
                                                                              if (m) seen.push_back(*m);
                                                                          },
                                                                          [&](std::string_view) { ready = true; },
                                                                          {}});
        sub->subscribe(keys_for_room("7").channel);
    });
    ASSERT_TRUE(eventually([&] { return ready.load(); }));

    std::string epoch;
    for (int i = 1; i <= 50; ++i) {
        const auto p = cl.publish("7", "m" + std::to_string(i) + ":with:colons");
        EXPECT_EQ(p.seq, static_cast<std::uint64_t>(i));
        if (i == 1) epoch = p.epoch;
        EXPECT_EQ(p.epoch, epoch);
    }
    EXPECT_EQ(epoch, "e1");
    // Another room has its own seq.
    EXPECT_EQ(cl.publish("8", "other").seq, 1u);

    ASSERT_TRUE(eventually([&] {
        std::lock_guard lk(mu);
        return seen.size() == 50;
    }));
    {
        std::lock_guard lk(mu);
        for (std::size_t i = 0; i < 50; ++i) {
            EXPECT_EQ(seen[i].seq, i + 1);
            EXPECT_EQ(seen[i].epoch, "e1");
            EXPECT_EQ(seen[i].body, "m" + std::to_string(i + 1) + ":with:colons");
        }
    }
    env.on(0, [&] { sub.reset(); });

    const auto all = cl.since("7", 0, 100);
    EXPECT_EQ(all.at.seq, 50u);
    EXPECT_EQ(all.at.epoch, "e1");
    ASSERT_EQ(all.entries.size(), 50u);
    EXPECT_TRUE(all.contiguous_after(0));
    EXPECT_EQ(all.entries[49].body, "m50:with:colons");

    const auto tail = cl.since("7", 45, 100);
    ASSERT_EQ(tail.entries.size(), 5u);
    EXPECT_EQ(tail.entries[0].seq, 46u);
    EXPECT_TRUE(tail.contiguous_after(45));
    EXPECT_FALSE(tail.contiguous_after(44));

    const auto limited = cl.since("7", 10, 3);
    ASSERT_EQ(limited.entries.size(), 3u);
    EXPECT_EQ(limited.entries[2].seq, 13u);

    const auto position = cl.since("7", 0, 0);  // the periodic position check
    EXPECT_EQ(position.at.seq, 50u);
    EXPECT_TRUE(position.entries.empty());
    EXPECT_EQ(cl.since("7", 50, 10).entries.size(), 0u);
    EXPECT_TRUE(cl.since("7", 50, 10).contiguous_after(50));
}

TEST(room_backplane, a_trimmed_stream_is_a_gap_not_a_partial_recovery) {
    redis_server redis;
    shard_env env;
    clients cl(env, redis.port());
    for (int i = 1; i <= 400; ++i) cl.publish("9", std::to_string(i), 10);
    direct_redis d(redis.port());
    const long long len = d.integer({"XLEN", keys_for_room("9").stream});
    EXPECT_LT(len, 400);  // MAXLEN ~ trims whole nodes: about 10, never fewer
    EXPECT_GE(len, 10);
    const auto from_start = cl.since("9", 0, 1000);
    EXPECT_EQ(from_start.at.seq, 400u);
    EXPECT_FALSE(from_start.contiguous_after(0));
    const auto recent = cl.since("9", 395, 1000);
    EXPECT_TRUE(recent.contiguous_after(395));
    EXPECT_EQ(recent.entries.size(), 5u);
}

TEST(room_backplane, a_redis_that_lost_its_data_shows_a_new_epoch) {
    redis_server redis;
    shard_env env;
    clients cl(env, redis.port());
    for (int i = 0; i < 3; ++i) cl.publish("r", "before", 100, "first");
    EXPECT_EQ(cl.since("r", 0, 10).at.epoch, "first");
    redis.restart();
    ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return cl.c[0]->is_up(); }); }, 3s));
    const auto lost = cl.since("r", 3, 10);
    EXPECT_EQ(lost.at.seq, 0u);
    EXPECT_EQ(lost.at.epoch, "");
    const auto p = cl.publish("r", "after", 100, "second");
    EXPECT_EQ(p.seq, 1u);
    EXPECT_EQ(p.epoch, "second");
    // The candidate only counts when the room has no state.
    EXPECT_EQ(cl.publish("r", "again", 100, "third").epoch, "second");
    // A stream left behind without its hash (its hash expired or was evicted) is not mixed in.
    direct_redis d(redis.port());
    d.integer({"DEL", keys_for_room("r").meta});
    const auto q = cl.publish("r", "fresh", 100, "fourth");
    EXPECT_EQ(q.seq, 1u);
    EXPECT_EQ(q.epoch, "fourth");
    const auto s = cl.since("r", 0, 10);
    ASSERT_EQ(s.entries.size(), 1u);
    EXPECT_EQ(s.entries[0].body, "fresh");
}

TEST(room_backplane, positions_of_many_rooms_in_one_call) {
    redis_server redis;
    shard_env env;
    clients cl(env, redis.port());
    for (int i = 0; i < 3; ++i) cl.publish("p1", "x", 100, "ea");
    cl.publish("p3", "y", 100, "eb");
    const std::vector<std::string> rooms{"p1", "p2", "p3"};
    const auto r = call(env, *cl.c[0], positions_command(rooms));
    ASSERT_FALSE(r.ec) << r.reply.describe();
    const auto at = parse_positions_reply(r.reply, rooms.size());
    ASSERT_TRUE(at) << r.reply.describe();
    EXPECT_EQ((*at)[0].seq, 3u);
    EXPECT_EQ((*at)[0].epoch, "ea");
    EXPECT_EQ((*at)[1].seq, 0u);  // no state in Redis
    EXPECT_EQ((*at)[1].epoch, "");
    EXPECT_EQ((*at)[2].seq, 1u);
    EXPECT_EQ((*at)[2].epoch, "eb");
    EXPECT_FALSE(parse_positions_reply(r.reply, 2));  // a reply for another number of rooms
}

TEST(room_backplane, publishers_on_two_shards_share_one_order) {
    redis_server redis;
    shard_env env(2);
    clients cl(env, redis.port());
    constexpr int per_shard = 500;
    std::mutex mu;
    std::vector<std::uint64_t> seqs[2];
    int errors = 0;
    for (unsigned s = 0; s < 2; ++s) {
        env.on(s, [&, s] {
            for (int i = 0; i < per_shard; ++i) {
                const auto args = publish_command("shared", std::to_string(s) + "/" + std::to_string(i), 10000, "e");
                std::vector<std::string_view> a(args.begin(), args.end());
                cl.c[s]->command(a, [&, s](std::error_code ec, const resp_reply& r) {
                    std::lock_guard lk(mu);
                    const auto p = parse_publish_reply(r);
                    if (ec || !p) {
                        ++errors;
                        return;
                    }
                    seqs[s].push_back(p->seq);
                });
            }
        });
    }
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lk(mu);
        return seqs[0].size() + seqs[1].size() + static_cast<std::size_t>(errors) == 2 * per_shard;
    }));
    std::lock_guard lk(mu);
    EXPECT_EQ(errors, 0);
    std::set<std::uint64_t> all;
    for (const auto& v : seqs) {
        // Each shard's replies arrive in its sending order, so its seqs increase.
        for (std::size_t i = 1; i < v.size(); ++i) EXPECT_LT(v[i - 1], v[i]);
        all.insert(v.begin(), v.end());
    }
    ASSERT_EQ(all.size(), 2u * per_shard);
    EXPECT_EQ(*all.begin(), 1u);
    EXPECT_EQ(*all.rbegin(), 2u * per_shard);
    // The stream holds each shard's messages in its own order.
    const auto s = cl.since("shared", 0, 2 * per_shard);
    ASSERT_EQ(s.entries.size(), 2u * per_shard);
    EXPECT_TRUE(s.contiguous_after(0));
    int next[2] = {0, 0};
    for (const auto& e : s.entries) {
        const auto slash = e.body.find('/');
        const int shard_no = std::stoi(e.body.substr(0, slash));
        EXPECT_EQ(std::stoi(e.body.substr(slash + 1)), next[shard_no]++);
    }
}

// A publisher that has not waited for the other nodes' commits asks not to start a room Redis
// has no state of: told so (seq 0, no epoch), nothing created, nothing published. Once it may,
// the epoch starts after its floor, and a floor above an existing epoch's counter moves it.
TEST(room_backplane, a_room_without_state_is_started_only_when_asked_and_floors_only_raise_seqs) {
    redis_server redis;
    shard_env env;
    clients cl(env, redis.port());
    auto publish = [&](const std::string& msg, std::uint64_t floor, bool may_create) {
        const auto r = call(env, *cl.c[0], publish_command("9", msg, 1000, "e9", 0, floor, may_create));
        EXPECT_FALSE(r.ec) << r.ec.message();
        const auto p = parse_publish_reply(r.reply);
        EXPECT_TRUE(p) << r.reply.describe();
        return p.value_or(room_position{99, "unparsed"});
    };
    const room_position none = publish("early", 40, false);
    EXPECT_EQ(none.seq, 0u);
    EXPECT_TRUE(none.epoch.empty());
    const auto meta = keys_for_room("9").meta;
    EXPECT_EQ(direct_redis(redis.port()).integer({"EXISTS", meta}), 0) << "no state was created";
    EXPECT_EQ(cl.since("9", 0, 10).entries.size(), 0u);

    const room_position first = publish("first", 40, true);
    EXPECT_EQ(first.seq, 41u) << "the new epoch continues after the floor";
    EXPECT_EQ(first.epoch, "e9");
    EXPECT_EQ(publish("second", 0, false).seq, 42u) << "a room with state publishes whatever may_create says";
    EXPECT_EQ(publish("third", 30, true).seq, 43u) << "a floor below the counter changes nothing";
    EXPECT_EQ(publish("fourth", 50, false).seq, 51u) << "a floor above it: seqs up to it are taken elsewhere";
    const auto s = cl.since("9", 40, 10);
    ASSERT_EQ(s.entries.size(), 4u);
    EXPECT_EQ(s.entries[0].body, "first");
    EXPECT_EQ(s.entries[3].seq, 51u);
    EXPECT_EQ(s.entries[3].body, "fourth");
}

}  // namespace
