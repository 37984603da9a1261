// The chat server's logic in-process (it is a library now): rooms, rate limits and names as plain
// objects, and the whole server started in this process so a test can look at its state (which
// shard owns a room, how many members each shard holds) while clients talk to it.
#include "chat_test_client.hpp"

#include "apps/chat/server/chat_server.hpp"
#include "apps/chat/server/net/names.hpp"
#include "apps/chat/server/rooms/room.hpp"
#include "apps/chat/server/service/token_bucket.hpp"

#include <support/loopback.hpp>

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace {

using namespace strix;
using namespace strix::chat;
using namespace strix::test;
using namespace std::chrono_literals;
using proto::msg_type;

member who(std::uint64_t session, unsigned shard, std::uint64_t player = 1) {
    return member{session, shard, player, "p" + std::to_string(player)};
}

TEST(room_logic, sessions_are_counted_per_shard_and_accounts_stay_members) {
    room r(room_id(42), "lobby", 3);
    EXPECT_EQ(r.add(who(1, 0, 1)), room::added::new_member);
    EXPECT_EQ(r.add(who(2, 2, 2)), room::added::new_member);
    EXPECT_EQ(r.add(who(3, 2, 3)), room::added::new_member);
    EXPECT_EQ(r.add(who(2, 2, 2)), room::added::duplicate) << "one session joins once";
    EXPECT_EQ(r.size(), 3u);
    EXPECT_EQ(r.members_on(0), 1u);
    EXPECT_EQ(r.members_on(1), 0u);
    EXPECT_EQ(r.members_on(2), 2u);
    auto gone = r.remove(2);
    ASSERT_TRUE(gone);
    EXPECT_EQ(gone->shard, 2u);
    EXPECT_EQ(gone->player_id, 2u);
    EXPECT_EQ(gone->name, "p2") << "a seat keeps no name: the account's is returned";
    EXPECT_EQ(r.members_on(2), 1u);
    EXPECT_FALSE(r.remove(2)) << "already gone";
    EXPECT_FALSE(r.contains(2));
    EXPECT_TRUE(r.contains(3));
    ASSERT_EQ(r.members().size(), 2u);
    EXPECT_EQ(r.members()[0].session_id, 1u);
    EXPECT_EQ(r.members()[1].session_id, 3u);
    // The account of the removed session is still a member, offline, in its join order.
    const auto accounts = r.listed_accounts(3);
    ASSERT_EQ(accounts.size(), 3u);
    EXPECT_EQ(accounts[0].player_id, 1u);
    EXPECT_EQ(accounts[1].player_id, 2u);
    EXPECT_FALSE(accounts[1].online());
    EXPECT_TRUE(accounts[2].online());
    EXPECT_EQ(r.summary().members, 3u);
    EXPECT_EQ(r.summary().online, 2u);
    EXPECT_EQ(r.add(who(4, 1, 2)), room::added::came_online);
    EXPECT_EQ(r.summary().online, 3u);
    EXPECT_EQ(r.add(who(5, 1, 2)), room::added::more_sessions);
    EXPECT_EQ(r.summary().members, 3u) << "a second session is not a second member";
}

// The counts room_info carries are kept as members come and go (never counted by walking them),
// and a room past the limit lists no accounts.
TEST(room_logic, online_counts_are_kept_and_a_large_room_lists_nobody) {
    room r(room_id(7), "big", 2);
    for (std::uint64_t p = 1; p <= 5; ++p) r.add(who(p, static_cast<unsigned>(p % 2), p));
    r.add(who(6, 0, 1));  // a second session of account 1
    r.mark_absent(9, "p9");
    EXPECT_EQ(r.summary().members, 6u);
    EXPECT_EQ(r.summary().online, 5u);
    EXPECT_EQ(r.absent_count(), 1u);
    r.remove(1);
    EXPECT_EQ(r.online_count(), 5u) << "account 1 still has session 6";
    r.remove(6);
    EXPECT_EQ(r.online_count(), 4u);
    ASSERT_NE(r.find(5), nullptr) << "a removal moved the last session into the gap";
    EXPECT_EQ(r.find(5)->player_id, 5u);
    r.remove(3);
    r.forget(3);
    EXPECT_EQ(r.summary().members, 5u);
    EXPECT_EQ(r.summary().online, 3u);
    // Cluster mode: online on another node counts once per account, whatever the node count.
    r.add_remote(9, 1);
    r.add_remote(9, 1);
    r.add_remote(2, 1);
    EXPECT_EQ(r.online_anywhere(), 4u);
    r.add_remote(9, -2);
    EXPECT_EQ(r.online_anywhere(), 3u);
    r.add_remote(2, 1);
    r.clear_remote();
    EXPECT_EQ(r.online_anywhere(), r.online_count());
    EXPECT_EQ(r.listed_accounts(5).size(), 5u);
    EXPECT_TRUE(r.listed_accounts(4).empty());
    EXPECT_TRUE(r.large(4));
    EXPECT_FALSE(r.large(5));
    std::vector<std::uint64_t> order;
    for (const auto& m : r.listed_accounts(5)) order.push_back(m.player_id);
    EXPECT_EQ(order, (std::vector<std::uint64_t>{1, 2, 4, 5, 9})) << "join order";
}

TEST(room_logic, a_sequence_number_is_only_consumed_by_an_accepted_message) {
    room r(room_id(1), "x", 1);
    EXPECT_EQ(r.next_seq(), 1u);
    EXPECT_EQ(r.next_seq(), 1u) << "peeking does not consume";
    EXPECT_EQ(r.take_seq(), 1u);
    EXPECT_EQ(r.take_seq(), 2u);
    EXPECT_EQ(r.next_seq(), 3u);
}

TEST(room_logic, belonging_is_per_account_and_outlives_a_disconnect) {
    room r(room_id(1), "x", 2);
    r.restore_seq(41);
    EXPECT_EQ(r.next_seq(), 42u) << "a restored room goes on after its last stored message";
    EXPECT_EQ(r.last_seq(), 41u);
    r.mark_absent(7, "p7");  // account 7 belongs (loaded from the database) but has no session here
    EXPECT_FALSE(r.abandoned());
    EXPECT_EQ(r.absent_count(), 1u);
    EXPECT_EQ(r.add(who(1, 0, 7)), room::added::came_online);
    EXPECT_EQ(r.absent_count(), 0u) << "present again";
    EXPECT_EQ(r.add(who(2, 1, 7)), room::added::more_sessions);  // a second session of the same account
    EXPECT_TRUE(r.has_player(7));
    r.remove(1);
    EXPECT_TRUE(r.has_player(7)) << "the other session is still here";
    r.remove(2);
    EXPECT_FALSE(r.has_player(7));
    EXPECT_TRUE(r.empty()) << "no session";
    EXPECT_FALSE(r.abandoned()) << "empty of sessions, but the account is still a member";
    EXPECT_EQ(r.absent_count(), 1u);
    r.forget(7);
    EXPECT_TRUE(r.abandoned()) << "its last member left";
}

TEST(room_logic, the_token_bucket_allows_a_burst_then_the_rate) {
    const auto t0 = token_bucket::clock::now();
    const rate_limit l{10.0, 3.0};  // 10 per second, burst of 3
    token_bucket b(l, t0);
    EXPECT_TRUE(b.try_take(l, t0));
    EXPECT_TRUE(b.try_take(l, t0));
    EXPECT_TRUE(b.try_take(l, t0));
    EXPECT_FALSE(b.try_take(l, t0)) << "the burst is spent";
    EXPECT_FALSE(b.try_take(l, t0 + 50ms)) << "half a token after 50 ms";
    EXPECT_TRUE(b.try_take(l, t0 + 110ms)) << "one token after 100 ms";
    EXPECT_TRUE(b.try_take(l, t0 + 10s));
    EXPECT_TRUE(b.try_take(l, t0 + 10s));
    EXPECT_TRUE(b.try_take(l, t0 + 10s));
    EXPECT_FALSE(b.try_take(l, t0 + 10s)) << "refill stops at the burst";
    static_assert(sizeof(token_bucket) == 16, "a bucket is its tokens and its last refill");
}

TEST(room_logic, names_are_checked_as_the_protocol_documents) {
    EXPECT_TRUE(valid_player_name("alice_1.x-y"));
    EXPECT_FALSE(valid_player_name(""));
    EXPECT_FALSE(valid_player_name("has space"));
    EXPECT_FALSE(valid_player_name(std::string(33, 'a')));
    EXPECT_TRUE(valid_room_name("Café ☕"));
    EXPECT_FALSE(valid_room_name(""));
    EXPECT_FALSE(valid_room_name("tab\there"));
    EXPECT_FALSE(valid_room_name(std::string(65, 'r')));
}

// The server library started in this process on a fresh SQLite file.
class in_process : public ::testing::Test {
protected:
    void SetUp() override {
        chat_options o;
        o.server.port = 0;
        o.db = "sqlite:" + dir_.path() + "/chat.db";
        o.metrics_port = 0;
        o.engine.shards = 2;
        o.engine.pin_threads = false;
        o.fast_passwords = true;
        srv_ = std::make_unique<chat_server>(o);
        srv_->start();
    }
    void TearDown() override { EXPECT_EQ(srv_->stop(), 0u) << "chat log entries lost at shutdown"; }

    // Rooms owned by each shard, asked on each shard.
    std::vector<std::size_t> rooms_per_shard() {
        std::vector<std::size_t> out;
        for (unsigned i = 0; i < srv_->shard_count(); ++i) {
            std::promise<std::size_t> p;
            auto f = p.get_future();
            srv_->eng().post(i, [&, i] { p.set_value(srv_->services().on(i).host().size()); });
            out.push_back(f.get());
        }
        return out;
    }

    temp_dir dir_;
    std::unique_ptr<chat_server> srv_;
};

TEST_F(in_process, a_room_lives_on_its_creators_shard_and_dies_when_nobody_belongs_to_it) {
    chat_client a(srv_->port());
    ASSERT_TRUE(a.send_login("alice", "pw"));
    a.expect(msg_type::login_res);
    ASSERT_TRUE(a.send_create("lobby"));
    auto created = a.expect(msg_type::create_room_res);
    auto* res = created.as<proto::create_room_res>();
    ASSERT_NE(res, nullptr);
    const std::uint64_t room_id = res->room()->id();
    const unsigned owner = static_cast<unsigned>(room_id & 0xff);
    auto per_shard = rooms_per_shard();
    ASSERT_EQ(per_shard.size(), 2u);
    EXPECT_EQ(per_shard[owner], 1u) << "the room is hosted by the shard its id names";
    EXPECT_EQ(per_shard[1 - owner], 0u);

    // A second member, wherever its session landed, joins the owner's room.
    chat_client b(srv_->port());
    ASSERT_TRUE(b.send_login("bob", "pw"));
    b.expect(msg_type::login_res);
    ASSERT_TRUE(b.send_join(room_id));
    b.expect(msg_type::join_room_res);
    a.expect(msg_type::member_joined);
    ASSERT_TRUE(a.send_chat("hi bob"));
    auto m1 = a.expect(msg_type::chat_msg);
    auto m2 = b.expect(msg_type::chat_msg);
    EXPECT_EQ(m1.bytes, m2.bytes) << "one encoding for every member";

    a.close();
    b.expect(msg_type::member_presence);  // alice is offline, still a member
    b.close();
    // Disconnected members still belong to the room (a login puts them back): it stays.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto n = rooms_per_shard();
    EXPECT_EQ(n[0] + n[1], 1u) << "a room whose members disconnected stays";

    // Back in by logging in, then out on purpose: the room nobody belongs to is deleted.
    for (const char* who : {"alice", "bob"}) {
        chat_client c(srv_->port());
        ASSERT_TRUE(c.send_login(who, "pw"));
        c.expect(msg_type::login_res);
        c.expect(msg_type::join_room_res);
        ASSERT_TRUE(c.send_leave());
        c.expect(msg_type::leave_room_res);
    }
    EXPECT_TRUE(eventually([&] {
        auto m = rooms_per_shard();
        return m[0] + m[1] == 0;
    })) << "the room nobody belongs to is deleted";
}

// The chat app's shard-only entry points check their thread in debug and sanitizer builds
// (STRIX_ASSERT_OWNER): a call from another thread aborts and names the entry point.
#if defined(STRIX_THREAD_CHECKS) && STRIX_THREAD_CHECKS
using owner_checks_death = in_process;

TEST_F(owner_checks_death, a_room_host_called_from_another_thread_aborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH((void)srv_->services().on(0).host().summaries(),
                 "room_host::summaries called on thread [0-9]+ \\(not a shard\\), but the object belongs to shard 0");
}

TEST_F(owner_checks_death, a_shard_posting_into_another_shards_room_host_aborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            srv_->eng().post(1, [this] { srv_->services().on(0).host().flush_notices(); });
            std::this_thread::sleep_for(2s);
        },
        "room_host::flush_notices called on shard 1, but the object belongs to shard 0");
}
#else
TEST(owner_checks_death, checks_are_compiled_only_into_debug_and_sanitizer_builds) {
    GTEST_SKIP() << "release build: STRIX_THREAD_CHECKS is off (make test SANITIZE=1 runs these)";
}
#endif

}  // namespace
