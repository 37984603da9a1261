// Presence and membership across nodes (cluster mode): one real redis-server, one PostgreSQL
// database, two (or three) strix-chat-server processes. A member on node B sees a member on node A
// join, go offline, come online and leave; join_room_res on B lists A's online members as online,
// also after a Redis restart; a node killed with kill -9 has its members shown offline on the other
// node within --node-ttl-ms + --node-scan-ms (measured and printed); and the membership scenario
// across two nodes: one member disconnects, one leaves, the last leaves, and the room is gone
// (list_rooms agrees).
#include "../chat/chat_fixture.hpp"

#include <support/redis_server.hpp>

#include <hiredis/hiredis.h>

#include <csignal>
#include <cstdio>

namespace {

using namespace strix;
using namespace strix::test;
using namespace std::chrono_literals;

class pg_environment : public ::testing::Environment {
public:
    void TearDown() override { stop_shared_pg_server(); }
};
const ::testing::Environment* const pg_registered = ::testing::AddGlobalTestEnvironment(new pg_environment);

// Short node heartbeats: a dead node is noticed within about 1.5 s, while a beat that a loaded
// machine delays by a few hundred ms is not taken for a death.
constexpr int node_ttl_ms = 1500;
constexpr int node_scan_ms = 100;

std::vector<std::string> node_args(const redis_server& redis, unsigned node) {
    return {"--cluster",      "redis://127.0.0.1:" + std::to_string(redis.port()),
            "--node-id",      std::to_string(node),
            "--node-ttl-ms",  std::to_string(node_ttl_ms),
            "--node-scan-ms", std::to_string(node_scan_ms)};
}

// How many "<account>:<node>" entries (online somewhere) the room's online hash holds; -1 on
// failure.
long long online_entries(std::uint16_t port, std::uint64_t room) {
    timeval tv{5, 0};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
    long long n = -1;
    if (c != nullptr && c->err == 0) {
        const std::string key = "chat:{" + std::to_string(room) + "}:o";
        auto* r = static_cast<redisReply*>(redisCommand(c, "HKEYS %s", key.c_str()));
        if (r != nullptr && r->type == REDIS_REPLY_ARRAY) {
            n = 0;
            for (std::size_t i = 0; i < r->elements; ++i) {
                const std::string f(r->element[i]->str, r->element[i]->len);
                if (f.find(':') != std::string::npos && !f.ends_with(":left")) ++n;
            }
        }
        if (r != nullptr) freeReplyObject(r);
    }
    if (c != nullptr) redisFree(c);
    return n;
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds within = 5s) {
    const auto until = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < until) {
        if (pred()) return true;
        std::this_thread::sleep_for(5ms);
    }
    return pred();
}

// Joins and returns the join_room_res's members as "name" (online) or "name-" (offline).
std::vector<std::string> join_states(chat_client& c, std::uint64_t room) {
    EXPECT_TRUE(c.send_join(room));
    return chat_client::member_states(c.expect(proto::msg_type::join_room_res));
}

struct two_nodes {
    redis_server redis;
    std::string db = shared_pg_server().create_database();
    temp_dir dir;
    std::unique_ptr<server_process> a = start(1, "a");
    std::unique_ptr<server_process> b = start(2, "b");

    std::unique_ptr<server_process> start(unsigned node, const std::string& name) {
        return std::make_unique<server_process>(db, dir.path() + "/" + name + ".log", 2, node_args(redis, node));
    }
    std::string logs() const { return "--- node A\n" + a->log() + "--- node B\n" + b->log(); }
};

// A member on node B follows a member on node A: join, disconnect (offline), login (online
// again: the login puts it back), leave. B's first session in the room finds A's online member
// listed online in join_room_res.
TEST(cluster_presence, MemberOnBFollowsMemberOnAThroughJoinOfflineOnlineLeave) {
    two_nodes n;
    ASSERT_TRUE(n.a->ready() && n.b->ready()) << n.logs();
    chat_client alice(n.a->port()), bob(n.b->port());
    ASSERT_NE(alice.login("alice"), 0u);
    ASSERT_NE(bob.login("bob"), 0u);
    const std::uint64_t room = alice.create("hall");
    ASSERT_NE(room, 0u);
    EXPECT_EQ(join_states(bob, room), (std::vector<std::string>{"alice", "bob"})) << n.logs();
    alice.expect_member_event(proto::msg_type::member_joined, room, "bob");
    {
        chat_client carol(n.a->port());
        ASSERT_NE(carol.login("carol"), 0u);
        EXPECT_EQ(join_states(carol, room), (std::vector<std::string>{"alice", "bob", "carol"}));
        bob.expect_member_event(proto::msg_type::member_joined, room, "carol");
        alice.expect_member_event(proto::msg_type::member_joined, room, "carol");
    }  // carol's connection closes: a member still, offline
    bob.expect_presence(room, "carol", false);
    alice.expect_presence(room, "carol", false);
    chat_client carol(n.a->port());
    ASSERT_NE(carol.login("carol"), 0u);  // the login puts carol back in the room
    carol.expect(proto::msg_type::join_room_res);
    bob.expect_presence(room, "carol", true);
    alice.expect_presence(room, "carol", true);
    // A third member joins through B and sees everyone online, carol included.
    chat_client dave(n.b->port());
    ASSERT_NE(dave.login("dave"), 0u);
    EXPECT_EQ(join_states(dave, room), (std::vector<std::string>{"alice", "bob", "carol", "dave"}));
    for (chat_client* c : {&alice, &bob, &carol}) c->expect_member_event(proto::msg_type::member_joined, room, "dave");
    ASSERT_TRUE(carol.send_leave());
    carol.expect(proto::msg_type::leave_room_res);
    for (chat_client* c : {&alice, &bob, &dave}) c->expect_member_event(proto::msg_type::member_left, room, "carol");
    for (chat_client* c : {&alice, &bob, &dave}) c->expect_nothing(200ms);
    // Redis holds who is online where: alice on A, bob and dave on B.
    EXPECT_TRUE(eventually([&] { return online_entries(n.redis.port(), room) == 3; })) << n.logs();
    EXPECT_EQ(n.a->stop(), 0) << n.logs();
    EXPECT_EQ(n.b->stop(), 0) << n.logs();
}

// Redis restarted empty: the nodes put their online members back without telling anyone they
// went offline, and a node that starts watching the room afterwards lists them online.
TEST(cluster_presence, OnlineStateSurvivesARedisRestart) {
    two_nodes n;
    ASSERT_TRUE(n.a->ready() && n.b->ready()) << n.logs();
    chat_client alice(n.a->port());
    ASSERT_NE(alice.login("alice"), 0u);
    const std::uint64_t room = alice.create("hall");
    ASSERT_NE(room, 0u);
    {
        chat_client bob(n.b->port());
        ASSERT_NE(bob.login("bob"), 0u);
        EXPECT_EQ(join_states(bob, room), (std::vector<std::string>{"alice", "bob"}));
        ASSERT_TRUE(eventually([&] { return online_entries(n.redis.port(), room) == 2; })) << n.logs();
        n.redis.restart();
        EXPECT_TRUE(eventually([&] { return online_entries(n.redis.port(), room) == 2; })) << n.logs();
        // Nobody went anywhere: bob hears nothing of alice (no offline-then-online flicker while
        // the nodes put their entries back), through the grace and the read after it.
        int notices = 0;
        while (auto f = bob.recv(2500ms))
            if (f->type == proto::msg_type::member_presence) ++notices;
        EXPECT_EQ(notices, 0) << n.logs();
    }  // bob goes offline: node B has nobody in the room and stops watching it
    EXPECT_TRUE(eventually([&] { return online_entries(n.redis.port(), room) == 1; })) << n.logs();
    chat_client carol(n.b->port());
    ASSERT_NE(carol.login("carol"), 0u);
    EXPECT_EQ(join_states(carol, room), (std::vector<std::string>{"alice", "bob-", "carol"})) << n.logs();
    EXPECT_EQ(n.a->stop(), 0) << n.logs();
    EXPECT_EQ(n.b->stop(), 0) << n.logs();
}

// kill -9 of node A: its members are shown offline on node B within ttl + scan interval of
// A's last heartbeat, and their entries leave Redis; node A started again (a new incarnation)
// puts its members back online at their next login.
TEST(cluster_presence, AKilledNodesMembersGoOfflineWithinTheBound) {
    two_nodes n;
    ASSERT_TRUE(n.a->ready() && n.b->ready()) << n.logs();
    chat_client alice(n.a->port()), bob(n.b->port());
    ASSERT_NE(alice.login("alice"), 0u);
    ASSERT_NE(bob.login("bob"), 0u);
    const std::uint64_t room = alice.create("hall");
    ASSERT_NE(room, 0u);
    EXPECT_EQ(join_states(bob, room), (std::vector<std::string>{"alice", "bob"}));
    ASSERT_TRUE(eventually([&] { return online_entries(n.redis.port(), room) == 2; })) << n.logs();

    const auto killed = std::chrono::steady_clock::now();
    EXPECT_EQ(n.a->stop(SIGKILL), SIGKILL) << "wait status of the killed node";
    bob.expect_presence(room, "alice", false);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed);
    std::printf("killed node's member shown offline after %lld ms (bound: ttl %d ms + scan %d ms)\n",
                static_cast<long long>(took.count()), node_ttl_ms, node_scan_ms);
    // The bound counts from the last heartbeat, which precedes the kill; the slack is for this
    // shared machine (and sanitizers).
    EXPECT_LT(took.count(), node_ttl_ms + node_scan_ms + 1500);
    EXPECT_TRUE(eventually([&] { return online_entries(n.redis.port(), room) == 1; })) << "alice's entry cleared";

    n.a = n.start(1, "a2");
    ASSERT_TRUE(n.a->ready()) << n.logs();
    chat_client alice2(n.a->port());
    ASSERT_NE(alice2.login("alice"), 0u);
    EXPECT_EQ(chat_client::member_states(alice2.expect(proto::msg_type::join_room_res)),
              (std::vector<std::string>{"alice", "bob"}));
    bob.expect_presence(room, "alice", true);
    bob.expect_nothing(200ms);
    EXPECT_EQ(n.a->stop(), 0) << n.logs();
    EXPECT_EQ(n.b->stop(), 0) << n.logs();
}

using listing = std::vector<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>>;

// list_rooms until it shows `want` (a leave's database write and the online hash may trail the
// reply a client got by a moment), or 5 s passed; returns the last listing.
listing list_until(chat_client& c, const listing& want) {
    listing got;
    eventually([&] { return (got = c.list_online()) == want; });
    return got;
}

// The membership scenario across two nodes: three members, one disconnects (offline, not
// gone), one leaves, the last leaves; the room is deleted only when nobody belongs to it any
// more, decided by the database, and list_rooms (from either node) agrees.
TEST(cluster_presence, TheRoomGoesWithItsLastMemberAcrossTwoNodes) {
    two_nodes n;
    ASSERT_TRUE(n.a->ready() && n.b->ready()) << n.logs();
    chat_client a(n.a->port()), b(n.b->port()), c(n.a->port()), d(n.b->port());
    ASSERT_NE(a.login("ann"), 0u);
    ASSERT_NE(b.login("ben"), 0u);
    ASSERT_NE(c.login("cat"), 0u);
    ASSERT_NE(d.login("dan"), 0u);
    const std::uint64_t room = a.create("trio");
    ASSERT_NE(room, 0u);
    EXPECT_EQ(join_states(b, room), (std::vector<std::string>{"ann", "ben"}));
    a.expect_member_event(proto::msg_type::member_joined, room, "ben");
    EXPECT_EQ(join_states(c, room), (std::vector<std::string>{"ann", "ben", "cat"}));
    a.expect_member_event(proto::msg_type::member_joined, room, "cat");
    b.expect_member_event(proto::msg_type::member_joined, room, "cat");

    // ann (node A) disconnects: still a member, offline, on both nodes.
    a.close();
    b.expect_presence(room, "ann", false);
    c.expect_presence(room, "ann", false);
    EXPECT_EQ(list_until(d, {{room, 3, 2}}), (listing{{room, 3, 2}})) << n.logs();

    // ben (node B) leaves, then cat (node A): ann still belongs, so the room stays.
    ASSERT_TRUE(b.send_leave());
    b.expect(proto::msg_type::leave_room_res);
    c.expect_member_event(proto::msg_type::member_left, room, "ben");
    ASSERT_TRUE(c.send_leave());
    c.expect(proto::msg_type::leave_room_res);
    EXPECT_EQ(list_until(d, {{room, 1, 0}}), (listing{{room, 1, 0}})) << n.logs();
    EXPECT_EQ(list_until(c, {{room, 1, 0}}), (listing{{room, 1, 0}})) << "the same from node A";
    b.expect_nothing();
    c.expect_nothing();

    // dan joins on B and sees ann offline; ann's login on A brings her back as presence.
    EXPECT_EQ(join_states(d, room), (std::vector<std::string>{"ann-", "dan"})) << n.logs();
    chat_client a2(n.a->port());
    ASSERT_NE(a2.login("ann"), 0u);
    EXPECT_EQ(chat_client::member_states(a2.expect(proto::msg_type::join_room_res)),
              (std::vector<std::string>{"ann", "dan"}));
    d.expect_presence(room, "ann", true);

    // dan leaves (B), then ann (A), the last member: the room is deleted, on both nodes.
    ASSERT_TRUE(d.send_leave());
    d.expect(proto::msg_type::leave_room_res);
    a2.expect_member_event(proto::msg_type::member_left, room, "dan");
    ASSERT_TRUE(a2.send_leave());
    a2.expect(proto::msg_type::leave_room_res);
    EXPECT_EQ(list_until(d, {}), listing{}) << "the last member left: the room is gone\n" << n.logs();
    EXPECT_EQ(list_until(a2, {}), listing{}) << "the same from node A";
    for (chat_client* x : {&d, &a2}) {
        ASSERT_TRUE(x->send_join(room));
        x->expect_error(proto::msg_type::join_room_req, proto::error_code::unknown_room);
    }
    // A later login of a former member puts nobody anywhere.
    chat_client a3(n.b->port());
    ASSERT_NE(a3.login("ann"), 0u);
    a3.expect_nothing();
    if (HasFailure()) std::fprintf(stderr, "%s", n.logs().c_str());
    EXPECT_EQ(n.a->stop(), 0) << n.logs();
    EXPECT_EQ(n.b->stop(), 0) << n.logs();
}

}  // namespace
