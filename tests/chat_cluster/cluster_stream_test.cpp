// Messages a node published but never stored, end to end (two nodes, a redis-server, PostgreSQL).
// In cluster mode the other nodes' members get a message as soon as Redis publishes it, and its
// node commits it to the database after that; a node killed in between leaves a message some
// members have and the database lacks. A test plays that node ("node 9") by calling chat_publish
// in Redis directly, as a node does, and never writing the database:
//   - a member who resumes over that seq gets it complete, from Redis's stream, and the node
//     that answered stores it (so history has what the member was given), also when the
//     database holds messages past the range;
//   - once node 9's heartbeat expires, the nodes store what it published from the streams of the
//     rooms they watch, with no member resuming.
#include "cluster_nodes.hpp"
#include "apps/chat/server/rooms/wire_chat.hpp"

#include "apps/chat/cluster/room_backplane.hpp"

#include <cstdio>

namespace {

// Runs chat_publish for `room` as node `node` would (a text message in wire_chat.hpp's form);
// the seq Redis gave it, or -1.
long long publish_as(std::uint16_t port, std::uint64_t room, std::uint32_t node, std::uint64_t sender,
                     const std::string& name, const std::string& text) {
    const std::string body = strix::chat::encode_wire_chat({sender, 1700000000000000, 0, 0, node, 1, name, text});
    return redis_integer(port,
                         strix::chat::publish_command(std::to_string(room), body, 1000, strix::chat::new_epoch()));
}

// Waits until the database holds `seq` of `room`; its text, or nothing.
std::optional<std::string> stored_text(const std::string& db, std::uint64_t room, std::uint64_t seq,
                                       std::chrono::milliseconds within) {
    auto store = open_chat_store(db, password_policy::fast_for_tests());
    const auto until = clock_type::now() + within;
    do {
        for (auto& e : store->room_history(room, 1000))
            if (e.seq == seq) return e.text;
        std::this_thread::sleep_for(20ms);
    } while (clock_type::now() < until);
    return std::nullopt;
}

// The next frame of `type`, skipping member notices and the like.
frame next_of(chat_client& c, msg_type type) {
    for (;;) {
        auto f = c.recv(10s);
        if (!f) {
            ADD_FAILURE() << "no " << proto::EnumNamemsg_type(type) << " within 10 s";
            return {};
        }
        if (f->type == type) return std::move(*f);
    }
}

chat_line next_chat(chat_client& c) {
    frame f = next_of(c, msg_type::chat_msg);
    auto* m = f.as<proto::chat_msg>();
    return m ? to_line(*m) : chat_line{};
}

TEST(cluster_stream, AResumeTakesWhatTheDatabaseLacksFromTheStreamAndStoresIt) {
    redis_server redis;
    two_nodes n(redis.port());
    ASSERT_TRUE(n.a.ready()) << n.a.log();
    ASSERT_TRUE(n.b.ready()) << n.b.log();
    chat_client alice(n.a.port()), bob(n.b.port());
    auto carol = std::make_unique<chat_client>(n.b.port());
    const std::uint64_t alice_id = alice.login("alice");
    bob.login("bob");
    const bytes token = password_login(*carol, "carol");
    const std::uint64_t room = alice.create("hall");
    ASSERT_NE(room, 0u);
    bob.join(room);
    carol->join(room);
    ASSERT_TRUE(wait_subscribers(redis.port(), room, 2));
    received ra;
    say(alice, alice_id, ra, "m", 3);  // seqs 1..3, stored
    for (std::uint64_t s = 1; s <= 3; ++s) {
        EXPECT_EQ(next_chat(bob).seq, s);
        EXPECT_EQ(next_chat(*carol).seq, s);
    }
    carol.reset();  // carol goes with seq 3

    // Node 9 publishes seq 4 and dies before its commit: bob gets it live, the database never.
    ASSERT_EQ(publish_as(redis.port(), room, 9, 4242, "ghost", "published, never stored"), 4);
    const chat_line live = next_chat(bob);
    EXPECT_EQ(live.seq, 4u);
    EXPECT_EQ(live.text, "published, never stored");
    say(alice, alice_id, ra, "m", 1, 5);  // seq 5, stored by node A
    EXPECT_EQ(next_chat(bob).seq, 5u);
    ASSERT_FALSE(stored_text(n.db, room, 4, 0ms)) << "nobody stored seq 4 yet";

    // carol comes back on node B and resumes after 3: 4 from the stream, 5 from the database.
    chat_client carol2(n.b.port());
    EXPECT_EQ(token_login(carol2, "carol", token).size(), 32u);
    frame jf = next_of(carol2, msg_type::join_room_res);
    ASSERT_TRUE(jf.as<proto::join_room_res>());
    EXPECT_EQ(jf.as<proto::join_room_res>()->last_seq(), 5u);
    // Seq 6 is stored before the resume: the database's rows after 3 are 5, 6 (4 is the hole),
    // one past the range, which must not spoil it. carol gets 6 live.
    say(alice, alice_id, ra, "m", 1, 6);
    EXPECT_EQ(next_chat(bob).seq, 6u);
    EXPECT_EQ(next_chat(carol2).seq, 6u);
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(proto::Createresume_req(fbb, room, 3));
    carol2.send(fbb, msg_type::resume_req);
    frame f = next_of(carol2, msg_type::resume_res);
    auto* r = f.as<proto::resume_res>();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status(), proto::resume_status::complete) << n.b.log();
    EXPECT_FALSE(r->more());
    std::vector<chat_line> got;
    if (r->messages())
        for (auto* m : *r->messages()) got.push_back(to_line(*m));
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].seq, 4u);
    EXPECT_EQ(got[0].text, "published, never stored");
    EXPECT_EQ(got[0].sender_id, 4242u);
    EXPECT_EQ(got[0].sender, "ghost");
    EXPECT_EQ(got[1].seq, 5u);
    EXPECT_EQ(got[1].text, "m5");
    EXPECT_EQ(got[1].sender_id, alice_id);

    // What carol was given, the database keeps.
    EXPECT_EQ(stored_text(n.db, room, 4, 5s), std::optional<std::string>("published, never stored")) << n.b.log();
    EXPECT_EQ(n.a.stop(), 0) << n.a.log();
    EXPECT_EQ(n.b.stop(), 0) << n.b.log();
}

TEST(cluster_stream, ANodeFoundDownHasWhatItPublishedStoredByTheOthers) {
    redis_server redis;
    two_nodes n(redis.port(), {"--node-ttl-ms", "600", "--node-scan-ms", "100"});
    ASSERT_TRUE(n.a.ready()) << n.a.log();
    ASSERT_TRUE(n.b.ready()) << n.b.log();
    chat_client alice(n.a.port()), bob(n.b.port());
    const std::uint64_t alice_id = alice.login("alice");
    bob.login("bob");
    const std::uint64_t room = alice.create("hall");
    ASSERT_NE(room, 0u);
    bob.join(room);
    ASSERT_TRUE(wait_subscribers(redis.port(), room, 2));
    received ra;
    say(alice, alice_id, ra, "m", 2);  // seqs 1..2
    EXPECT_EQ(next_chat(bob).seq, 1u);
    EXPECT_EQ(next_chat(bob).seq, 2u);

    // Node 9 heartbeats once (as a node does: its key with an expiry, its id in the set), is seen
    // alive, publishes seq 3 and 4, and dies before committing them.
    EXPECT_EQ(redis_integer(redis.port(), {"SADD", "chat:nodes", "9"}), 1);
    ASSERT_EQ(redis_integer(redis.port(), {"SET", "chat:node:9", "ghostincarnation", "PX", "1500"}), -1);
    ASSERT_EQ(redis_integer(redis.port(), {"EXISTS", "chat:node:9"}), 1);
    std::this_thread::sleep_for(400ms);  // several scans of both nodes see it alive
    ASSERT_EQ(publish_as(redis.port(), room, 9, 4242, "ghost", "last words"), 3);
    ASSERT_EQ(publish_as(redis.port(), room, 9, 4242, "ghost", "very last words"), 4);
    EXPECT_EQ(next_chat(bob).text, "last words");
    EXPECT_EQ(next_chat(bob).text, "very last words");
    const auto t0 = clock_type::now();
    ASSERT_EQ(redis_integer(redis.port(), {"EXISTS", "chat:node:9"}), 1) << "node 9 counts as alive still";
    EXPECT_FALSE(stored_text(n.db, room, 3, 0ms)) << "nothing stores a live node's messages for it";
    // Its key expires 1.5 s after the beat; a scan then finds it down, and the stream's copies
    // of 3 and 4 are stored. Nobody resumes anything.
    EXPECT_EQ(stored_text(n.db, room, 3, 10s), std::optional<std::string>("last words")) << n.b.log();
    EXPECT_EQ(stored_text(n.db, room, 4, 1s), std::optional<std::string>("very last words"));
    const long long took = ms_since(t0);
    // And node A's own messages were never in question: stored once, as they were.
    EXPECT_EQ(stored_text(n.db, room, 2, 0ms), std::optional<std::string>("m2"));
    std::printf("[fault figures] a node found down: its 2 published, uncommitted messages stored by the others "
                "%lld ms after its last publish (heartbeat expiry 1.5 s after its beat, scans every 100 ms)\n",
                took);
    EXPECT_EQ(n.a.stop(), 0) << n.a.log();
    EXPECT_EQ(n.b.stop(), 0) << n.b.log();
}

}  // namespace
