// account_rooms on both back ends: an account belongs to many rooms, each with its join time and
// read marker; logins and token lookups list them; joins, leaves, reads and room deletions touch
// only their own rows; a database at the previous schema migrates with its memberships. The same
// suite runs on a fresh SQLite file and on a fresh database of a real PostgreSQL server.

#include "apps/chat/storage/chat_store.hpp"
#include "apps/chat/storage/device_token.hpp"
#include "apps/chat/storage/migrations.hpp"
#include "apps/chat/storage/password.hpp"

#include "storage_test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using namespace strix;
using namespace strix::chat;
using strix::test::backend;
using k = room_change::kind;

room_change created(std::uint64_t room, std::int64_t at) {
    return {k::created, room, 0, "r" + std::to_string(room), at};
}
room_change deleted(std::uint64_t room, std::int64_t at) { return {k::deleted, room, 0, {}, at}; }
room_change joined(std::uint64_t room, std::uint64_t acct, std::int64_t at) { return {k::joined, room, acct, {}, at}; }
room_change left(std::uint64_t room, std::uint64_t acct, std::int64_t at) { return {k::left, room, acct, {}, at}; }
room_change read(std::uint64_t room, std::uint64_t acct, std::uint64_t seq) {
    return {k::read, room, acct, {}, 0, seq};
}

// Room ids whose order differs from the order the tests join them in.
constexpr std::uint64_t red = (5u << 8) | 1, green = (2u << 8) | 0, blue = (9u << 8) | 3, gray = (7u << 8) | 2;

class account_rooms_storage_test : public test::store_test {
protected:
    // A store with accounts ann and ben and the four rooms.
    void open_with_rooms() {
        store_ = open();
        ann_ = store_->login("ann", "pw", true).acct.id;
        ben_ = store_->login("ben", "pw", true).acct.id;
        ASSERT_NE(ann_, 0u);
        ASSERT_NE(ben_, 0u);
        apply({created(red, 1), created(green, 2), created(blue, 3), created(gray, 4)});
    }

    void apply(const std::vector<room_change>& changes) { store_->write_batch(changes, {}); }

    login_result login(const std::string& name) { return store_->login(name, "pw", false); }

    std::string raw(const std::string& sql) {
        auto v = test::raw_query_value(GetParam(), url_, sql);
        return v ? *v : "<no row>";
    }

    std::string rows_of(std::uint64_t acct) {
        return raw("SELECT COUNT(*) FROM account_rooms WHERE account_id = " + std::to_string(acct));
    }

    std::unique_ptr<chat_store> store_;
    std::uint64_t ann_ = 0, ben_ = 0;
};

TEST_P(account_rooms_storage_test, AnAccountInThreeRoomsIsListedInJoinOrderWithItsReadMarkers) {
    open_with_rooms();
    apply({joined(red, ann_, 100), joined(green, ann_, 200), joined(blue, ann_, 300), read(red, ann_, 7),
           read(blue, ann_, 2), joined(green, ben_, 150)});
    const std::vector<account_room> want{{red, 100, 7}, {green, 200, 0}, {blue, 300, 2}};
    const auto r = login("ann");
    ASSERT_EQ(r.outcome, login_outcome::ok);
    EXPECT_EQ(r.rooms, want);
    EXPECT_EQ(r.room_id, blue) << "the newest join";
    EXPECT_EQ(open()->login("ann", "pw", false).rooms, want) << "another connection sees the commit";
    EXPECT_EQ(login("ben").rooms, (std::vector<account_room>{{green, 150, 0}}));
    EXPECT_TRUE(store_->login("ann", "wrong", false).rooms.empty());
    EXPECT_EQ(rows_of(ann_), "3");

    // Device and resume tokens give the same list as the password login.
    const std::int64_t t0 = 1'700'000'000'000'000;
    for (const auto kind : {token_kind::device, token_kind::resume}) {
        const device_token_hash h = hash_device_token(make_device_token());
        store_->store_device_token({ann_, h, t0, t0 + 1'000'000, std::nullopt, 4, kind});
        const auto rec = store_->find_device_token(h, kind);
        ASSERT_TRUE(rec.has_value());
        EXPECT_EQ(rec->rooms, want);
        EXPECT_EQ(rec->room_id, blue);
    }

    // Joins at the same time are listed by room id; the newest is then the highest id.
    apply({joined(gray, ben_, 150), joined(red, ben_, 150)});
    const auto b = login("ben");
    EXPECT_EQ(b.rooms, (std::vector<account_room>{{green, 150, 0}, {red, 150, 0}, {gray, 150, 0}}));
    EXPECT_EQ(b.room_id, gray);
}

TEST_P(account_rooms_storage_test, ARejoinRenewsTheJoinTimeAndKeepsTheReadMarker) {
    open_with_rooms();
    apply({joined(red, ann_, 100), joined(green, ann_, 200), read(red, ann_, 9)});
    EXPECT_EQ(login("ann").room_id, green);
    const std::vector<room_change> rejoin{joined(red, ann_, 300)};
    apply(rejoin);
    apply(rejoin);  // a retried batch changes nothing more
    const auto r = login("ann");
    EXPECT_EQ(r.rooms, (std::vector<account_room>{{green, 200, 0}, {red, 300, 9}}));
    EXPECT_EQ(r.room_id, red) << "the rejoined room is now the newest";
    EXPECT_EQ(rows_of(ann_), "2");
    // A join after a leave is a new membership: the read marker starts over.
    apply({left(red, ann_, 400), joined(red, ann_, 500)});
    EXPECT_EQ(login("ann").rooms, (std::vector<account_room>{{green, 200, 0}, {red, 500, 0}}));
}

TEST_P(account_rooms_storage_test, ALeaveRemovesThatRoomOnly) {
    open_with_rooms();
    apply({joined(red, ann_, 100), joined(green, ann_, 200), joined(blue, ann_, 300), joined(green, ben_, 250)});
    apply({left(blue, ann_, 400)});
    auto r = login("ann");
    EXPECT_EQ(r.rooms, (std::vector<account_room>{{red, 100, 0}, {green, 200, 0}}));
    EXPECT_EQ(r.room_id, green) << "the newest join left: the one before it";
    apply({left(green, ann_, 500), left(green, ann_, 500), left(gray, ann_, 500)});  // again; never joined
    EXPECT_EQ(login("ann").rooms, (std::vector<account_room>{{red, 100, 0}}));
    EXPECT_EQ(login("ben").rooms, (std::vector<account_room>{{green, 250, 0}})) << "ben's row in green stays";
    apply({left(red, ann_, 600)});
    r = login("ann");
    EXPECT_TRUE(r.rooms.empty());
    EXPECT_EQ(r.room_id, 0u);
    EXPECT_EQ(rows_of(ann_), "0");
}

TEST_P(account_rooms_storage_test, AReadMarkerRisesNeverFallsAndNeedsAMembership) {
    open_with_rooms();
    apply({joined(red, ann_, 100), joined(green, ann_, 200), read(red, ann_, 5)});
    EXPECT_EQ(login("ann").rooms.at(0).last_read_seq, 5u);
    apply({read(red, ann_, 3)});
    EXPECT_EQ(login("ann").rooms.at(0).last_read_seq, 5u) << "an older marker does not lower it";
    const std::vector<room_change> up{read(red, ann_, 4), read(red, ann_, 12), read(red, ann_, 8)};
    apply(up);
    apply(up);  // retried
    auto r = login("ann");
    EXPECT_EQ(r.rooms, (std::vector<account_room>{{red, 100, 12}, {green, 200, 0}})) << "only red's marker moved";
    // Not a member: nothing is stored (no row appears), nor for another account's room.
    apply({read(blue, ann_, 4), joined(blue, ben_, 300), read(blue, ann_, 6)});
    EXPECT_EQ(rows_of(ann_), "2");
    EXPECT_EQ(login("ben").rooms, (std::vector<account_room>{{blue, 300, 0}}));
    // After a leave a late read marker is a no-op too.
    apply({left(green, ann_, 400), read(green, ann_, 3)});
    EXPECT_EQ(login("ann").rooms, (std::vector<account_room>{{red, 100, 12}}));
}

TEST_P(account_rooms_storage_test, ADeletedRoomIsNotListedAndOnlyItsMembershipsGo) {
    open_with_rooms();
    apply({joined(red, ann_, 100), joined(green, ann_, 200), joined(green, ben_, 210), joined(blue, ben_, 220)});
    apply({deleted(green, 300)});
    auto a = login("ann");
    EXPECT_EQ(a.rooms, (std::vector<account_room>{{red, 100, 0}}));
    EXPECT_EQ(a.room_id, red);
    EXPECT_EQ(login("ben").rooms, (std::vector<account_room>{{blue, 220, 0}}));
    EXPECT_EQ(raw("SELECT COUNT(*) FROM account_rooms"), "2");
    // A join stored after the deletion (cluster mode's race) leaves a row the login skips.
    apply({joined(green, ann_, 400)});
    EXPECT_EQ(rows_of(ann_), "2");
    a = login("ann");
    EXPECT_EQ(a.rooms, (std::vector<account_room>{{red, 100, 0}}));
    EXPECT_EQ(a.room_id, red) << "not the deleted room, though joined last";
}

TEST_P(account_rooms_storage_test, RoomLoadsAndEmptyDeletionsCountThatRoomsMembersOnly) {
    open_with_rooms();
    apply({joined(red, ann_, 100), joined(green, ann_, 200), joined(green, ben_, 210)});
    std::vector<std::uint64_t> both{ann_, ben_};
    std::sort(both.begin(), both.end());
    const std::vector<std::string> names =
        both[0] == ann_ ? std::vector<std::string>{"ann", "ben"} : std::vector<std::string>{"ben", "ann"};
    const auto rooms = store_->load_rooms();
    ASSERT_EQ(rooms.size(), 4u);  // ascending by id: green, red, gray, blue
    EXPECT_EQ(rooms[0], (stored_room{green, "r" + std::to_string(green), 0, both, names, {0, 0}}));
    EXPECT_EQ(rooms[1], (stored_room{red, "r" + std::to_string(red), 0, {ann_}, {"ann"}, {0}}));
    EXPECT_TRUE(rooms[2].members.empty());
    EXPECT_EQ(store_->load_room(green), rooms[0]);
    EXPECT_EQ(store_->load_room(red), rooms[1]);

    EXPECT_FALSE(store_->delete_room_if_empty(red, 300)) << "ann belongs to it";
    apply({left(red, ann_, 310)});
    EXPECT_TRUE(open()->delete_room_if_empty(red, 320)) << "ann's other room does not count here";
    EXPECT_FALSE(store_->delete_room_if_empty(green, 330)) << "ann and ben belong to it";
    EXPECT_TRUE(store_->delete_room_if_empty(gray, 340)) << "nobody ever belonged to it";
    EXPECT_EQ(store_->load_room(green), rooms[0]);
    EXPECT_EQ(login("ann").rooms, (std::vector<account_room>{{green, 200, 0}}));
}

// A database written by an older build (schema version 5: one account_rooms row per account) is
// built from the released steps' own SQL, then opened by this build.
TEST_P(account_rooms_storage_test, APreviousSchemaMigratesWithItsMemberships) {
    const bool lite = GetParam() == backend::sqlite;
    constexpr std::uint32_t previous = 5;
    ASSERT_GT(latest_schema_version(), previous + 1) << "this test builds the schema before the many-rooms step";
    std::string sql = std::string(lite ? storage_detail::sqlite_schema_version_table
                                       : storage_detail::postgres_schema_version_table) +
                      ";";
    for (const auto& m : storage_detail::all_migrations()) {
        if (m.version > previous) break;
        sql += std::string(lite ? m.sqlite_sql : m.postgres_sql) + ";INSERT INTO schema_version VALUES (" +
               std::to_string(m.version) + ", 1);";
    }
    const std::string hash = hash_password("pw", password_policy::fast_for_tests());
    sql += "INSERT INTO accounts (id, name, password_hash, created_at_us) VALUES (11, 'ann', '" + hash +
           "', 1), (12, 'ben', '" + hash + "', 2), (13, 'cat', '" + hash + "', 3);";
    sql += "INSERT INTO rooms (id, name, created_at_us, deleted_at_us) VALUES (" + std::to_string(red) +
           ", 'red', 4, NULL), (" + std::to_string(green) + ", 'green', 5, NULL), (" + std::to_string(gray) +
           ", 'gray', 6, 7);";
    sql += "INSERT INTO account_rooms (account_id, room_id, joined_at_us) VALUES (11, " + std::to_string(red) +
           ", 100), (12, " + std::to_string(green) + ", 200), (13, " + std::to_string(red) + ", 300);";
    try {
        test::raw_exec(GetParam(), url_, sql);
    } catch (const std::exception& e) {
        FAIL() << e.what();
    }
    ASSERT_EQ(raw("SELECT MAX(version) FROM schema_version"), "5");

    store_ = open();
    EXPECT_EQ(store_->schema_version(), latest_schema_version());
    EXPECT_EQ(raw("SELECT COUNT(*) FROM schema_version"), std::to_string(latest_schema_version()));
    EXPECT_EQ(raw("SELECT COUNT(*) FROM account_rooms"), "3") << "every membership kept";
    EXPECT_EQ(raw("SELECT COUNT(*) FROM account_rooms WHERE last_read_seq = 0"), "3");
    EXPECT_EQ(raw(lite ? "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'account_rooms_by_room'"
                       : "SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'account_rooms_by_room'"),
              "1");
    auto a = login("ann");
    ASSERT_EQ(a.outcome, login_outcome::ok);
    EXPECT_EQ(a.acct.id, 11u);
    EXPECT_EQ(a.rooms, (std::vector<account_room>{{red, 100, 0}}));
    EXPECT_EQ(a.room_id, red);
    EXPECT_EQ(login("ben").rooms, (std::vector<account_room>{{green, 200, 0}}));
    const auto rooms = store_->load_rooms();
    ASSERT_EQ(rooms.size(), 2u);
    // The role step made each room's first member its owner.
    EXPECT_EQ(rooms[0], (stored_room{green, "green", 0, {12}, {"ben"}, {2}}));
    EXPECT_EQ(rooms[1], (stored_room{red, "red", 0, {11, 13}, {"ann", "cat"}, {2, 0}}));

    // The new key: a second room for ann, and read markers on the migrated rows.
    apply({joined(green, 11, 400), read(red, 11, 6)});
    a = login("ann");
    EXPECT_EQ(a.rooms, (std::vector<account_room>{{red, 100, 6}, {green, 400, 0}}));
    EXPECT_EQ(a.room_id, green);
    store_.reset();
    EXPECT_EQ(open()->schema_version(), latest_schema_version()) << "reopening applies nothing again";
    EXPECT_EQ(raw("SELECT COUNT(*) FROM account_rooms"), "4");
}

INSTANTIATE_TEST_SUITE_P(backends, account_rooms_storage_test, ::testing::Values(backend::sqlite, backend::postgres),
                         test::backend_name);

}  // namespace
