// Direct rooms, blocks, roles and moderation on both back ends: roles stored by joins and role
// changes, bans and mutes replaced, lifted and filtered by expiry when rooms are loaded, deleted
// messages kept as tombstones, open_direct's outcomes (including two connections racing for one
// pair) and set_block, and the migration that gives rooms made before roles an owner.

#include "apps/chat/storage/chat_store.hpp"
#include "apps/chat/storage/migrations.hpp"
#include "apps/chat/storage/password.hpp"

#include "storage_test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <latch>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using namespace strix;
using namespace strix::chat;
using strix::test::backend;
using k = room_change::kind;
using st = direct_result::status;

room_change created(std::uint64_t room) { return {k::created, room, 0, "r" + std::to_string(room), 1}; }
room_change joined(std::uint64_t room, std::uint64_t acct, std::int64_t at, std::uint8_t role = 0) {
    room_change c{k::joined, room, acct, {}, at};
    c.role = role;
    return c;
}
room_change left(std::uint64_t room, std::uint64_t acct) { return {k::left, room, acct, {}, 2}; }
room_change deleted(std::uint64_t room) { return {k::deleted, room, 0, {}, 3}; }
room_change role(std::uint64_t room, std::uint64_t acct, std::uint8_t r) {
    room_change c{k::role, room, acct};
    c.role = r;
    return c;
}
room_change sanction(std::uint64_t room, std::uint64_t acct, std::uint8_t what, std::int64_t until, std::uint64_t by,
                     std::int64_t at) {
    room_change c{k::sanction, room, acct, {}, at};
    c.sanction = what;
    c.until_us = until;
    c.by = by;
    return c;
}
room_change lift(std::uint64_t room, std::uint64_t acct, std::uint8_t what) {
    room_change c{k::lift, room, acct};
    c.sanction = what;
    return c;
}
room_change erase(std::uint64_t room, std::uint64_t seq) { return {k::erase, room, 0, {}, 0, seq}; }

std::int64_t now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

constexpr std::uint64_t hall = (4u << 8) | 1, yard = (3u << 8) | 2;
constexpr std::size_t no_limit = 1000;

class moderation_store_test : public test::store_test {
protected:
    void open_with_accounts() {
        store_ = open();
        ann_ = store_->login("ann", "pw", true).acct.id;
        ben_ = store_->login("ben", "pw", true).acct.id;
        cat_ = store_->login("cat", "pw", true).acct.id;
        ASSERT_TRUE(ann_ != 0 && ben_ != 0 && cat_ != 0);
    }

    void apply(const std::vector<room_change>& changes) { store_->write_batch(changes, {}); }

    std::string raw(const std::string& sql) {
        auto v = test::raw_query_value(GetParam(), url_, sql);
        return v ? *v : "<no row>";
    }
    std::string count(const std::string& table_and_where) { return raw("SELECT COUNT(*) FROM " + table_and_where); }

    direct_result open_direct(std::uint64_t from, const std::string& to, std::uint64_t new_id,
                              std::size_t max_rooms = no_limit) {
        return store_->open_direct(from, to, new_id, 1000, max_rooms);
    }

    // The members of `room` as load_room reads them, with their roles.
    std::vector<std::pair<std::uint64_t, std::uint8_t>> roles_in(std::uint64_t room) {
        std::vector<std::pair<std::uint64_t, std::uint8_t>> out;
        const auto r = store_->load_room(room);
        if (!r) return out;
        EXPECT_EQ(r->members.size(), r->member_roles.size()) << "roles aligned with members";
        for (std::size_t i = 0; i < r->members.size() && i < r->member_roles.size(); ++i)
            out.emplace_back(r->members[i], r->member_roles[i]);
        return out;
    }

    std::unique_ptr<chat_store> store_;
    std::uint64_t ann_ = 0, ben_ = 0, cat_ = 0;
};

using roles = std::vector<std::pair<std::uint64_t, std::uint8_t>>;

TEST_P(moderation_store_test, RolesComeFromTheJoinAndFromRoleChanges) {
    open_with_accounts();
    apply({created(hall), joined(hall, ann_, 10, 2), joined(hall, ben_, 11), joined(hall, cat_, 12, 1)});
    EXPECT_EQ(roles_in(hall), (roles{{ann_, 2}, {ben_, 0}, {cat_, 1}}));
    // A join of a member keeps its role; a role change needs a membership.
    apply({joined(hall, ann_, 20, 0), role(hall, ben_, 1), role(hall, cat_, 0), role(yard, ben_, 2)});
    EXPECT_EQ(roles_in(hall), (roles{{ann_, 2}, {ben_, 1}, {cat_, 0}}));
    EXPECT_EQ(count("account_rooms WHERE room_id = " + std::to_string(yard)), "0") << "no row for a non-member";
    // A leave ends the role; the next join brings its own.
    apply({left(hall, ann_), joined(hall, ann_, 30, 0)});
    EXPECT_EQ(roles_in(hall), (roles{{ann_, 0}, {ben_, 1}, {cat_, 0}}));
    const auto all = store_->load_rooms();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0], store_->load_room(hall)) << "load_rooms reads the same roles";
    EXPECT_EQ(all[0].kind, 0) << "a group room";
}

TEST_P(moderation_store_test, SanctionsAreReplacedLiftedAndFilteredByExpiry) {
    open_with_accounts();
    const std::int64_t now = now_us(), hour = 3'600'000'000;
    apply({created(hall), created(yard), joined(hall, ann_, 10), joined(hall, ben_, 11), joined(hall, cat_, 12)});
    const std::vector<room_change> first{
        sanction(hall, ben_, 1, 0, ann_, 100),             // banned for good
        sanction(hall, ann_, 2, now + hour, cat_, 101),     // muted for an hour
        sanction(hall, ann_, 1, now + 2 * hour, cat_, 102), // and banned for two
        sanction(hall, cat_, 2, now - 1'000'000, ann_, 103), // a mute that ended a second ago
        sanction(yard, cat_, 1, 0, ann_, 104),
    };
    apply(first);
    apply(first);  // a retried batch
    EXPECT_EQ(count("room_sanctions"), "5") << "the ended mute is stored, only not loaded";
    std::vector<room_sanction> in_force{{ann_, 1, now + 2 * hour}, {ann_, 2, now + hour}, {ben_, 1, 0}};
    std::sort(in_force.begin(), in_force.end(), [](const auto& a, const auto& b) {
        return std::pair(a.account_id, a.kind) < std::pair(b.account_id, b.kind);
    });
    auto r = store_->load_room(hall);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->sanctions, in_force) << "by account, then kind; the ended mute left out";
    EXPECT_EQ(r->members.size(), 3u) << "a ban does not end the membership";
    EXPECT_EQ(store_->load_rooms().at(1).sanctions, in_force);
    EXPECT_EQ(store_->load_room(yard)->sanctions, (std::vector<room_sanction>{{cat_, 1, 0}}));

    // The same kind again replaces the row (until, by, at); a lift removes that kind only.
    apply({sanction(hall, ben_, 1, now + hour, cat_, 200), lift(hall, ann_, 2), lift(hall, ann_, 2),
           lift(hall, cat_, 1)});
    EXPECT_EQ(count("room_sanctions WHERE room_id = " + std::to_string(hall)), "3");
    EXPECT_EQ(raw("SELECT by_account FROM room_sanctions WHERE account_id = " + std::to_string(ben_)),
              std::to_string(cat_));
    EXPECT_EQ(raw("SELECT at_us FROM room_sanctions WHERE account_id = " + std::to_string(ben_)), "200");
    in_force = {{ann_, 1, now + 2 * hour}, {ben_, 1, now + hour}};
    std::sort(in_force.begin(), in_force.end(),
              [](const auto& a, const auto& b) { return a.account_id < b.account_id; });
    EXPECT_EQ(store_->load_room(hall)->sanctions, in_force);
}

TEST_P(moderation_store_test, AnErasedMessageIsATombstoneInTheHistory) {
    open_with_accounts();
    std::vector<chat_log_entry> logs;
    for (std::uint64_t seq = 1; seq <= 4; ++seq) logs.push_back(test::make_entry(hall, seq));
    logs[3].kind = 1;  // a notice
    logs[3].text = "\x01notice";
    store_->write_batch(std::vector<room_change>{created(hall)}, logs);
    EXPECT_EQ(store_->history_page({hall, 0, 0, 10}), logs) << "kinds are stored and read back";

    const std::vector<room_change> er{erase(hall, 2), erase(hall, 9), erase(yard, 2)};
    store_->write_batch(er, {});
    store_->write_batch(er, {});  // retried
    auto want = logs;
    want[1].kind = 2;
    want[1].text.clear();
    EXPECT_EQ(store_->history_page({hall, 0, 0, 10}), want) << "the same seq, sender and time; no text";
    EXPECT_EQ(store_->history_page({hall, 3, 0, 10}), (std::vector<chat_log_entry>{want[0], want[1]}));
    EXPECT_EQ(store_->history_page({hall, 0, 1, 10}), (std::vector<chat_log_entry>{want[1], want[2], want[3]}));
    EXPECT_EQ(store_->room_history(hall, 10), want);
    EXPECT_EQ(store_->count_chat_logs(), 4u) << "an unknown seq is not made up";
    EXPECT_EQ(store_->room_log_range(hall), (log_range{1, 4}));
}

TEST_P(moderation_store_test, OpenDirectCreatesThenFindsTheRoomOfAPair) {
    open_with_accounts();
    constexpr std::uint64_t first = (10u << 8) | 1, second = (11u << 8) | 2;
    const auto r = open_direct(ann_, "ben", first);
    EXPECT_EQ(r.outcome, st::ok);
    EXPECT_EQ(r.room_id, first);
    EXPECT_TRUE(r.created);
    EXPECT_TRUE(r.joined_peer);
    EXPECT_EQ(r.peer.id, ben_);
    EXPECT_EQ(r.peer.name, "ben");
    const auto room = open()->load_room(first);  // committed
    ASSERT_TRUE(room.has_value());
    EXPECT_EQ(room->kind, 1);
    EXPECT_EQ(room->name, "");
    EXPECT_EQ(roles_in(first), (roles{{std::min(ann_, ben_), 0}, {std::max(ann_, ben_), 0}}));
    EXPECT_TRUE(room->blocks.empty());
    EXPECT_EQ(store_->login("ben", "pw", false).rooms, (std::vector<account_room>{{first, 1000, 0}}));
    EXPECT_EQ(raw("SELECT low_id FROM direct_rooms"), std::to_string(std::min(ann_, ben_)));
    EXPECT_EQ(raw("SELECT high_id FROM direct_rooms"), std::to_string(std::max(ann_, ben_)));

    // Either of the two finds it again: the new id is not used.
    for (const auto& [from, to] : {std::pair{ben_, "ann"}, std::pair{ann_, "ben"}}) {
        const auto again = open_direct(from, to, second);
        EXPECT_EQ(again.outcome, st::ok);
        EXPECT_EQ(again.room_id, first);
        EXPECT_FALSE(again.created);
        EXPECT_FALSE(again.joined_peer);
    }
    EXPECT_EQ(count("rooms"), "1");
    EXPECT_EQ(store_->max_room_id(), first);

    EXPECT_EQ(open_direct(ann_, "ann", second).outcome, st::self);
    EXPECT_EQ(open_direct(ann_, "nobody", second).outcome, st::unknown_account);
    EXPECT_EQ(count("rooms"), "1");
    EXPECT_EQ(count("direct_rooms"), "1");
}

TEST_P(moderation_store_test, OpenDirectIsRefusedWhenThePeerBlocksTheSender) {
    open_with_accounts();
    auto b = store_->set_block(ben_, "ann", true, 50);
    EXPECT_TRUE(b.found);
    EXPECT_EQ(b.peer.id, ann_);
    EXPECT_EQ(b.direct_room, 0u) << "they have none";
    const auto r = open_direct(ann_, "ben", 100);
    EXPECT_EQ(r.outcome, st::blocked);
    EXPECT_EQ(r.peer.id, ben_);
    EXPECT_EQ(r.room_id, 0u);
    EXPECT_EQ(count("rooms"), "0");
    EXPECT_EQ(count("account_rooms"), "0");
    // The blocker may still open it: a block refuses the blocked account only.
    EXPECT_EQ(open_direct(ben_, "ann", 100).outcome, st::ok);
    store_->set_block(ben_, "ann", false, 60);
    EXPECT_EQ(open_direct(ann_, "ben", 101).room_id, 100u) << "after the unblock";
    // The sender's own block of the peer does not refuse the sender.
    store_->set_block(ann_, "cat", true, 70);
    EXPECT_EQ(open_direct(ann_, "cat", 102).outcome, st::ok);
    EXPECT_EQ(open_direct(cat_, "ann", 103).outcome, st::blocked);
}

TEST_P(moderation_store_test, OpenDirectKeepsBothAccountsUnderTheRoomLimit) {
    open_with_accounts();
    apply({created(hall), created(yard), joined(hall, ann_, 10), joined(yard, ann_, 11)});
    auto r = open_direct(ann_, "ben", 100, 2);
    EXPECT_EQ(r.outcome, st::room_limit);
    EXPECT_FALSE(r.peer_at_limit);
    EXPECT_EQ(r.peer.id, ben_);
    r = open_direct(ben_, "ann", 100, 2);
    EXPECT_EQ(r.outcome, st::room_limit);
    EXPECT_TRUE(r.peer_at_limit);
    EXPECT_EQ(count("direct_rooms"), "0") << "a refusal changes nothing";
    EXPECT_EQ(count("rooms WHERE id = 100"), "0");
    EXPECT_EQ(open_direct(ben_, "ann", 100, 3).outcome, st::ok) << "below the limit";

    // A member of the room is not counted again: ann has three rooms and the limit is three.
    EXPECT_EQ(open_direct(ann_, "ben", 101, 3).outcome, st::ok);
    // A membership of a deleted room does not count (a join stored after the deletion).
    apply({left(yard, ann_), deleted(yard), joined(yard, ann_, 12)});
    EXPECT_EQ(count("account_rooms WHERE account_id = " + std::to_string(ann_)), "3");
    EXPECT_EQ(open_direct(ann_, "cat", 102, 3).outcome, st::ok);
}

TEST_P(moderation_store_test, AMemberWhoLeftADirectRoomBelongsAgain) {
    open_with_accounts();
    ASSERT_EQ(open_direct(ann_, "ben", 100).outcome, st::ok);
    store_->write_batch(std::vector<room_change>{{k::read, 100, ben_, {}, 0, 5}}, {});
    apply({left(100, ben_)});
    auto r = open_direct(ann_, "ben", 101);
    EXPECT_EQ(r.outcome, st::ok);
    EXPECT_EQ(r.room_id, 100u);
    EXPECT_FALSE(r.created);
    EXPECT_TRUE(r.joined_peer);
    EXPECT_EQ(store_->login("ben", "pw", false).rooms, (std::vector<account_room>{{100, 1000, 0}}));
    // The sender too; the peer is then not joined by this call.
    apply({left(100, ann_)});
    r = open_direct(ann_, "ben", 101);
    EXPECT_EQ(r.room_id, 100u);
    EXPECT_FALSE(r.joined_peer);
    EXPECT_EQ(store_->load_room(100)->members.size(), 2u);
    // The peer left and is at the limit: refused.
    apply({left(100, ben_), created(hall), joined(hall, ben_, 10)});
    r = open_direct(ann_, "ben", 101, 1);
    EXPECT_EQ(r.outcome, st::room_limit);
    EXPECT_TRUE(r.peer_at_limit);
    // Both left and the room was deleted: the pair gets a new room.
    apply({left(100, ann_)});
    ASSERT_TRUE(store_->delete_room_if_empty(100, 20));
    r = open_direct(ben_, "ann", 101);
    EXPECT_EQ(r.outcome, st::ok);
    EXPECT_EQ(r.room_id, 101u);
    EXPECT_TRUE(r.created);
    EXPECT_EQ(raw("SELECT room_id FROM direct_rooms"), "101");
    EXPECT_EQ(store_->load_room(101)->kind, 1);
}

TEST_P(moderation_store_test, TwoConnectionsRacingForOnePairGetOneRoom) {
    open_with_accounts();
    constexpr int pairs = 6;
    std::vector<std::uint64_t> peers;
    for (int i = 0; i < pairs; ++i) peers.push_back(store_->login("p" + std::to_string(i), "pw", true).acct.id);
    std::vector<direct_result> a(pairs), b(pairs);
    std::vector<std::string> errors(2);
    std::latch go(2);
    auto racer = [&](int side) {
        try {
            auto store = open();
            go.arrive_and_wait();
            for (int i = 0; i < pairs; ++i) {
                const std::uint64_t id = static_cast<std::uint64_t>(1000 + i * 2 + side);
                if (side == 0) {
                    a[static_cast<std::size_t>(i)] = store->open_direct(ann_, "p" + std::to_string(i), id, 1000, 100);
                } else {
                    b[static_cast<std::size_t>(i)] =
                        store->open_direct(peers[static_cast<std::size_t>(i)], "ann", id, 1000, 100);
                }
            }
        } catch (const std::exception& e) {
            errors[static_cast<std::size_t>(side)] = e.what();
        }
    };
    std::thread t0(racer, 0), t1(racer, 1);
    t0.join();
    t1.join();
    EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
    for (std::size_t i = 0; i < pairs; ++i) {
        EXPECT_EQ(a[i].outcome, st::ok) << i;
        EXPECT_EQ(b[i].outcome, st::ok) << i;
        EXPECT_EQ(a[i].room_id, b[i].room_id) << "pair " << i;
        EXPECT_NE(a[i].created, b[i].created) << "exactly one created pair " << i;
        EXPECT_EQ(count("account_rooms WHERE room_id = " + std::to_string(a[i].room_id)), "2") << i;
    }
    EXPECT_EQ(count("rooms"), std::to_string(pairs));
    EXPECT_EQ(count("direct_rooms"), std::to_string(pairs));
}

TEST_P(moderation_store_test, BlocksAreIdempotentAndLoadedWithTheirDirectRoom) {
    open_with_accounts();
    EXPECT_FALSE(store_->set_block(ann_, "nobody", true, 10).found);
    ASSERT_EQ(open_direct(ann_, "ben", 100).outcome, st::ok);
    apply({created(hall), joined(hall, ann_, 10), joined(hall, cat_, 11)});
    for (int i = 0; i < 2; ++i) {
        const auto b = store_->set_block(ann_, "ben", true, 20 + i);
        EXPECT_TRUE(b.found);
        EXPECT_EQ(b.peer.id, ben_);
        EXPECT_EQ(b.peer.name, "ben");
        EXPECT_EQ(b.direct_room, 100u);
    }
    EXPECT_EQ(count("account_blocks"), "1");
    EXPECT_EQ(raw("SELECT at_us FROM account_blocks"), "20") << "the first block is kept";
    store_->set_block(ann_, "cat", true, 30);  // cat shares a group room with ann, not a direct one
    EXPECT_EQ(store_->load_room(100)->blocks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{ann_, ben_}}));
    EXPECT_TRUE(store_->load_room(hall)->blocks.empty()) << "a group room lists no blocks";

    store_->set_block(ben_, "ann", true, 40);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> both{{ann_, ben_}, {ben_, ann_}};
    std::sort(both.begin(), both.end());
    EXPECT_EQ(store_->load_room(100)->blocks, both);
    const auto all = store_->load_rooms();
    const auto direct = std::find_if(all.begin(), all.end(), [](const auto& r) { return r.id == 100; });
    ASSERT_NE(direct, all.end());
    EXPECT_EQ(direct->kind, 1);
    EXPECT_EQ(direct->blocks, both);
    EXPECT_EQ(*direct, store_->load_room(100));

    for (int i = 0; i < 2; ++i) EXPECT_EQ(store_->set_block(ann_, "ben", false, 50).direct_room, 100u);
    EXPECT_EQ(store_->load_room(100)->blocks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{ben_, ann_}}));
    EXPECT_EQ(count("account_blocks"), "2");
}

// A database at schema version 6 (before roles) is built from the released steps' own SQL,
// then opened by this build: each room's first member becomes its owner.
TEST_P(moderation_store_test, RoomsFromBeforeRolesGetTheirFirstMemberAsOwner) {
    const bool lite = GetParam() == backend::sqlite;
    constexpr std::uint32_t previous = 6;
    std::string sql = std::string(lite ? storage_detail::sqlite_schema_version_table
                                       : storage_detail::postgres_schema_version_table) +
                      ";";
    for (const auto& m : storage_detail::all_migrations()) {
        if (m.version > previous) break;
        sql += std::string(lite ? m.sqlite_sql : m.postgres_sql) + ";INSERT INTO schema_version VALUES (" +
               std::to_string(m.version) + ", 1);";
    }
    const std::string hash = hash_password("pw", password_policy::fast_for_tests());
    for (int id = 21; id <= 23; ++id) {
        sql += "INSERT INTO accounts (id, name, password_hash, created_at_us) VALUES (" + std::to_string(id) + ", 'u" +
               std::to_string(id) + "', '" + hash + "', 1);";
    }
    // hall: 22 and 23 joined first, at the same time (the smaller id wins); yard: 23 first.
    sql += "INSERT INTO rooms (id, name, created_at_us) VALUES (" + std::to_string(hall) + ", 'hall', 1), (" +
           std::to_string(yard) + ", 'yard', 1);";
    sql += "INSERT INTO account_rooms (account_id, room_id, joined_at_us, last_read_seq) VALUES (21, " +
           std::to_string(hall) + ", 300, 4), (23, " + std::to_string(hall) + ", 100, 0), (22, " +
           std::to_string(hall) + ", 100, 0), (21, " + std::to_string(yard) + ", 60, 0), (23, " + std::to_string(yard) +
           ", 50, 0);";
    sql += "INSERT INTO chat_logs (room_id, seq, sender_id, sender_name, server_ts_us, text) VALUES (" +
           std::to_string(hall) + ", 1, 21, 'u21', 5, " + (lite ? "X'6869'" : "'\\x6869'::bytea") + ");";
    try {
        test::raw_exec(GetParam(), url_, sql);
    } catch (const std::exception& e) {
        FAIL() << e.what();
    }
    ASSERT_EQ(raw("SELECT MAX(version) FROM schema_version"), "6");

    store_ = open();
    EXPECT_EQ(store_->schema_version(), latest_schema_version());
    EXPECT_EQ(roles_in(hall), (roles{{21, 0}, {22, 2}, {23, 0}}));
    EXPECT_EQ(roles_in(yard), (roles{{21, 0}, {23, 2}}));
    EXPECT_EQ(count("account_rooms WHERE role = 2"), "2");
    EXPECT_EQ(store_->load_room(hall)->kind, 0);
    EXPECT_EQ(raw("SELECT last_read_seq FROM account_rooms WHERE account_id = 21 AND room_id = " +
                  std::to_string(hall)),
              "4");
    const auto logs = store_->room_history(hall, 10);
    ASSERT_EQ(logs.size(), 1u);
    EXPECT_EQ(logs[0].text, "hi");
    EXPECT_EQ(logs[0].kind, 0);
    // The new tables are there.
    const auto d = store_->open_direct(21, "u22", (30u << 8) | 1, 7, no_limit);
    EXPECT_EQ(d.outcome, st::ok);
    EXPECT_TRUE(d.created);
    store_.reset();
    EXPECT_EQ(open()->schema_version(), latest_schema_version()) << "reopening applies nothing again";
    EXPECT_EQ(count("account_rooms WHERE role = 2"), "2") << "the owner step ran once";
}

INSTANTIATE_TEST_SUITE_P(backends, moderation_store_test, ::testing::Values(backend::sqlite, backend::postgres),
                         test::backend_name);

}  // namespace
