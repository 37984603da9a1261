// Cluster mode end to end: one real redis-server, one PostgreSQL database, two strix-chat-server
// processes (--cluster, node ids 1 and 2). A room made on node A is joined from node B (which
// loads it from the shared database); both members chat at once and each sees every message of
// the room once, in one seq order, the same on both nodes; history (from the database) is the
// same from both nodes; the database holds them all. Then: delivery after the commit on the
// publishing node, and presence across nodes.
#include "../chat/chat_fixture.hpp"

#include <support/redis_server.hpp>

#include <hiredis/hiredis.h>

#include <map>
#include <set>

namespace {

using namespace strix;
using namespace strix::test;

class pg_environment : public ::testing::Environment {
public:
    void TearDown() override { stop_shared_pg_server(); }
};
const ::testing::Environment* const pg_registered = ::testing::AddGlobalTestEnvironment(new pg_environment);

std::vector<std::string> node_args(const redis_server& redis, unsigned node) {
    return {"--cluster", "redis://127.0.0.1:" + std::to_string(redis.port()), "--node-id", std::to_string(node)};
}

// How many connections Redis has subscribed to `channel` (PUBSUB NUMSUB); -1 on failure.
long long subscribers(std::uint16_t port, const std::string& channel) {
    timeval tv{5, 0};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
    long long n = -1;
    if (c != nullptr && c->err == 0) {
        auto* r = static_cast<redisReply*>(redisCommand(c, "PUBSUB NUMSUB %s", channel.c_str()));
        if (r != nullptr && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_INTEGER)
            n = r->element[1]->integer;
        if (r != nullptr) freeReplyObject(r);
    }
    if (c != nullptr) redisFree(c);
    return n;
}

// The room's chat_msgs until `count` arrived (other frames, e.g. member notices, skipped).
std::vector<chat_line> collect_chat(chat_client& c, std::size_t count) {
    std::vector<chat_line> out;
    while (out.size() < count) {
        auto f = c.recv(std::chrono::seconds(10));
        if (!f) break;
        if (f->type == proto::msg_type::chat_msg) out.push_back(to_line(*f->as<proto::chat_msg>()));
    }
    return out;
}

TEST(cross_node_chat, MembersOnTwoNodesSeeEveryMessageOnceInOneOrder) {
    redis_server redis;
    const std::string db = shared_pg_server().create_database();
    temp_dir dir;
    server_process a(db, dir.path() + "/a.log", 2, node_args(redis, 1));
    ASSERT_TRUE(a.ready()) << a.log();
    server_process b(db, dir.path() + "/b.log", 2, node_args(redis, 2));
    ASSERT_TRUE(b.ready()) << b.log();

    chat_client alice(a.port()), bob(b.port());
    const std::uint64_t alice_id = alice.login("alice");
    const std::uint64_t bob_id = bob.login("bob");
    ASSERT_NE(alice_id, 0u);
    ASSERT_NE(bob_id, 0u);
    const std::uint64_t room = alice.create("hall");
    ASSERT_NE(room, 0u);
    // Node B never saw this room: it reads it from the database, members and all.
    const auto names = bob.join(room);
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), (std::set<std::string>{"alice", "bob"}));
    alice.expect_member_event(proto::msg_type::member_joined, room, "bob");

    constexpr std::uint64_t per_sender = 50;
    for (std::uint64_t i = 1; i <= per_sender; ++i) {
        ASSERT_TRUE(alice.send_chat("a" + std::to_string(i), i));
        ASSERT_TRUE(bob.send_chat("b" + std::to_string(i), i));
    }
    const auto seen_a = collect_chat(alice, 2 * per_sender);
    const auto seen_b = collect_chat(bob, 2 * per_sender);
    ASSERT_EQ(seen_a.size(), 2 * per_sender) << a.log();
    ASSERT_EQ(seen_b.size(), 2 * per_sender) << b.log();
    for (const auto* seen : {&seen_a, &seen_b}) {
        std::map<std::uint64_t, std::uint64_t> next{{alice_id, 1}, {bob_id, 1}};
        for (std::size_t i = 0; i < seen->size(); ++i) {
            const chat_line& l = (*seen)[i];
            EXPECT_EQ(l.room_id, room);
            EXPECT_EQ(l.seq, i + 1) << "seqs from 1 without holes or repeats, in order";
            // Each sender's messages in the order it sent them, each once.
            const std::string who = l.sender_id == alice_id ? "a" : "b";
            EXPECT_EQ(l.text, who + std::to_string(next[l.sender_id]));
            EXPECT_EQ(l.client_seq, next[l.sender_id]);
            ++next[l.sender_id];
        }
    }
    EXPECT_EQ(seen_a, seen_b) << "both nodes deliver the same messages with the same seqs";
    alice.expect_nothing(std::chrono::milliseconds(200));
    bob.expect_nothing(std::chrono::milliseconds(200));

    // History comes from the shared database: the same on both nodes (every message was
    // committed once both members had all of them: each got its own only after the commit).
    for (chat_client* c : {&alice, &bob}) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createhistory_req(fbb, room, 0, 0, 40));
        ASSERT_TRUE(c->send(fbb, proto::msg_type::history_req));
        auto f = c->expect(proto::msg_type::history_res);
        auto* r = f.as<proto::history_res>();
        ASSERT_TRUE(r && r->messages());
        ASSERT_EQ(r->messages()->size(), 40u);
        for (std::size_t i = 0; i < 40; ++i) {
            EXPECT_EQ(r->messages()->Get(static_cast<flatbuffers::uoffset_t>(i))->seq(), 2 * per_sender - 40 + i + 1);
            EXPECT_EQ(r->messages()->Get(static_cast<flatbuffers::uoffset_t>(i))->text()->str(),
                      seen_a[2 * per_sender - 40 + i].text);
        }
    }

    // Stopped cleanly, the database holds every message at the seq Redis gave it.
    EXPECT_EQ(a.stop(), 0) << a.log();
    EXPECT_EQ(b.stop(), 0) << b.log();
    auto store = open_chat_store(db, password_policy::fast_for_tests());
    const auto stored = store->room_history(room, 4 * per_sender);
    ASSERT_EQ(stored.size(), 2 * per_sender);
    for (std::size_t i = 0; i < stored.size(); ++i) {
        EXPECT_EQ(stored[i].seq, seen_a[i].seq);
        EXPECT_EQ(stored[i].text, seen_a[i].text);
        EXPECT_EQ(stored[i].sender_id, seen_a[i].sender_id);
    }
}

// --ack stored holds in cluster mode too: a member's copy of a message (the sender's is its
// acknowledgement) goes out once the database holds it, although Redis published it at once.
// The log writer here waits up to 300 ms per commit, so a delivery ahead of it would be seen.
TEST(cross_node_chat, DeliveryFollowsTheCommitOnThePublishingNode) {
    redis_server redis;
    const std::string db = shared_pg_server().create_database();
    temp_dir dir;
    auto args = node_args(redis, 1);
    args.insert(args.end(), {"--commit-delay-us", "300000"});
    server_process a(db, dir.path() + "/a.log", 2, args);
    ASSERT_TRUE(a.ready()) << a.log();
    chat_client alice(a.port());
    ASSERT_NE(alice.login("alice"), 0u);
    const std::uint64_t room = alice.create("hall");
    ASSERT_NE(room, 0u);
    auto store = open_chat_store(db, password_policy::fast_for_tests());
    for (std::uint64_t i = 1; i <= 3; ++i) {
        ASSERT_TRUE(alice.send_chat("m" + std::to_string(i), i));
        const chat_line l = alice.expect_chat();
        EXPECT_EQ(l.seq, i);
        const auto stored = store->room_history(room, 10);
        ASSERT_EQ(stored.size(), i) << "chat_msg " << i << " went out before its commit";
        EXPECT_EQ(stored.back().seq, i);
    }
    store.reset();
    EXPECT_EQ(a.stop(), 0) << a.log();
}

// Membership and presence of one node's sessions reach the members on the other node: a join,
// a disconnect (offline), a login that puts the member back (online) and a leave.
TEST(cross_node_chat, PresenceCrossesNodes) {
    redis_server redis;
    const std::string db = shared_pg_server().create_database();
    temp_dir dir;
    server_process a(db, dir.path() + "/a.log", 2, node_args(redis, 1));
    ASSERT_TRUE(a.ready()) << a.log();
    server_process b(db, dir.path() + "/b.log", 2, node_args(redis, 2));
    ASSERT_TRUE(b.ready()) << b.log();
    chat_client alice(a.port());
    ASSERT_NE(alice.login("alice"), 0u);
    const std::uint64_t room = alice.create("hall");
    ASSERT_NE(room, 0u);
    // Node A follows the room's presence channel from the creation on (what a node misses before
    // it subscribes it reads from the room's online hash: cluster_presence_test).
    const std::string channel = "chat:{" + std::to_string(room) + "}:p";
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (subscribers(redis.port(), channel) < 1 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_EQ(subscribers(redis.port(), channel), 1) << "node A watches the room's presence";
    {
        chat_client bob(b.port());
        ASSERT_NE(bob.login("bob"), 0u);
        bob.join(room);
        alice.expect_member_event(proto::msg_type::member_joined, room, "bob");
    }  // bob's connection closes: still a member, offline
    alice.expect_presence(room, "bob", false);
    chat_client bob(b.port());
    ASSERT_NE(bob.login("bob"), 0u);  // the login puts bob back in the room
    alice.expect_presence(room, "bob", true);
    bob.send_leave();
    alice.expect_member_event(proto::msg_type::member_left, room, "bob");
    alice.expect_nothing(std::chrono::milliseconds(200));
    EXPECT_EQ(a.stop(), 0) << a.log();
    EXPECT_EQ(b.stop(), 0) << b.log();
}

}  // namespace
