// chat_store against both back ends: the same suite runs on a fresh SQLite file and on a fresh
// database of a real PostgreSQL server (one server per test binary, see pg_server.hpp).

#include "apps/chat/storage/chat_store.hpp"
#include "apps/chat/storage/device_token.hpp"
#include "apps/chat/storage/password.hpp"

#include "storage_test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <latch>
#include <thread>
#include <vector>

namespace {

using namespace strix;
using namespace strix::chat;
using strix::test::backend;

class chat_store_test : public test::store_test {
protected:
    std::string raw(const std::string& sql) {
        auto v = test::raw_query_value(GetParam(), url_, sql);
        return v ? *v : "<no row>";
    }
};

TEST_P(chat_store_test, MigrationsApplyOnceAndReopenIsIdempotent) {
    ASSERT_EQ(latest_schema_version(), 8u);
    std::uint64_t alice_id = 0;
    {
        auto store = open();
        EXPECT_EQ(store->schema_version(), latest_schema_version());
        EXPECT_EQ(raw("SELECT COUNT(*) FROM schema_version"), std::to_string(latest_schema_version()));
        auto r = store->login("alice", "pw", true);
        ASSERT_EQ(r.outcome, login_outcome::created);
        alice_id = r.acct.id;
    }
    for (int i = 0; i < 2; ++i) {
        auto store = open();
        EXPECT_EQ(store->schema_version(), latest_schema_version());
        // Re-opening applies nothing again: still one row per step, and the data is untouched.
        EXPECT_EQ(raw("SELECT COUNT(*) FROM schema_version"), std::to_string(latest_schema_version()));
        EXPECT_EQ(raw("SELECT version FROM schema_version ORDER BY version LIMIT 1"), "1");
        auto found = store->find_account("alice");
        ASSERT_TRUE(found.has_value());
        EXPECT_EQ(found->id, alice_id);
    }
}

TEST_P(chat_store_test, ConcurrentOpenersOfAFreshDatabaseMigrateOnce) {
    constexpr int openers = 6;
    std::latch go(openers);
    std::vector<std::string> errors(openers);
    std::vector<std::uint32_t> versions(openers, 0);
    std::vector<std::thread> threads;
    for (int i = 0; i < openers; ++i) {
        threads.emplace_back([&, i] {
            go.arrive_and_wait();
            try {
                versions[static_cast<std::size_t>(i)] = open()->schema_version();
            } catch (const std::exception& e) {
                errors[static_cast<std::size_t>(i)] = e.what();
            }
        });
    }
    for (auto& t : threads) t.join();
    for (int i = 0; i < openers; ++i) {
        EXPECT_EQ(errors[static_cast<std::size_t>(i)], "") << "opener " << i;
        EXPECT_EQ(versions[static_cast<std::size_t>(i)], latest_schema_version()) << "opener " << i;
    }
    EXPECT_EQ(raw("SELECT COUNT(*) FROM schema_version"), std::to_string(latest_schema_version()));
}

TEST_P(chat_store_test, LoginCreatesVerifiesAndRejects) {
    auto store = open();
    EXPECT_FALSE(store->find_account("alice").has_value());

    auto created = store->login("alice", "correct horse", true);
    ASSERT_EQ(created.outcome, login_outcome::created);
    EXPECT_GT(created.acct.id, 0u);
    EXPECT_EQ(created.acct.name, "alice");

    auto again = store->login("alice", "correct horse", true);
    EXPECT_EQ(again.outcome, login_outcome::ok);
    EXPECT_EQ(again.acct.id, created.acct.id);
    EXPECT_EQ(again.acct.name, "alice");

    // Without auto_register an existing account still logs in.
    EXPECT_EQ(store->login("alice", "correct horse", false).outcome, login_outcome::ok);

    auto wrong = store->login("alice", "correct horsE", true);
    EXPECT_EQ(wrong.outcome, login_outcome::wrong_password);
    EXPECT_EQ(wrong.acct.id, 0u);
    EXPECT_EQ(store->login("alice", "", true).outcome, login_outcome::wrong_password);

    auto unknown = store->login("bob", "pw", false);
    EXPECT_EQ(unknown.outcome, login_outcome::unknown_account);
    EXPECT_FALSE(store->find_account("bob").has_value());  // nothing was created

    auto bob = store->login("bob", "pw", true);
    ASSERT_EQ(bob.outcome, login_outcome::created);
    EXPECT_NE(bob.acct.id, created.acct.id);

    auto found = store->find_account("alice");
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->id, created.acct.id);
    EXPECT_EQ(found->name, "alice");
    EXPECT_EQ(raw("SELECT COUNT(*) FROM accounts"), "2");
}

// An external login (a verified JWT's sub) creates a passwordless account once and finds it
// after; it never takes over a password account, and no password opens an external one.
TEST_P(chat_store_test, ExternalLoginsMakePasswordlessAccountsAndLeavePasswordOnesAlone) {
    auto store = open();
    auto first = store->login_external("app-user-7f3a");
    ASSERT_EQ(first.outcome, login_outcome::created);
    EXPECT_NE(first.acct.id, 0u);
    auto again = store->login_external("app-user-7f3a");
    ASSERT_EQ(again.outcome, login_outcome::ok);
    EXPECT_EQ(again.acct.id, first.acct.id);
    EXPECT_EQ(again.acct.name, "app-user-7f3a");
    EXPECT_EQ(store->login("app-user-7f3a", "!external", true).outcome, login_outcome::wrong_password);
    EXPECT_EQ(store->login("app-user-7f3a", "", true).outcome, login_outcome::wrong_password);

    ASSERT_EQ(store->login("carol", "pw", true).outcome, login_outcome::created);
    auto taken = store->login_external("carol");
    EXPECT_EQ(taken.outcome, login_outcome::password_account);
    EXPECT_EQ(taken.acct.id, 0u);
    EXPECT_EQ(store->login("carol", "pw", false).outcome, login_outcome::ok);
    EXPECT_EQ(raw("SELECT COUNT(*) FROM accounts"), "2");
}

// A batch of external logins (jwt_login_queue's): results in order, a name twice in the batch
// created once and then found, an existing account found, a password account left alone, all
// in one transaction; a second batch finds what the first created.
TEST_P(chat_store_test, ExternalLoginBatchesAnswerInOrderAndCreateEachAccountOnce) {
    auto store = open();
    ASSERT_EQ(store->login("carol", "pw", true).outcome, login_outcome::created);
    const auto known = store->login_external("known");
    ASSERT_EQ(known.outcome, login_outcome::created);
    const std::vector<std::string> names{"u1", "known", "u2", "u1", "carol"};
    const auto r = store->login_external_batch(names);
    ASSERT_EQ(r.size(), names.size());
    EXPECT_EQ(r[0].outcome, login_outcome::created);
    EXPECT_EQ(r[0].acct.name, "u1");
    EXPECT_EQ(r[1].outcome, login_outcome::ok);
    EXPECT_EQ(r[1].acct.id, known.acct.id);
    EXPECT_EQ(r[2].outcome, login_outcome::created);
    EXPECT_EQ(r[2].acct.name, "u2");
    EXPECT_NE(r[2].acct.id, r[0].acct.id);
    EXPECT_EQ(r[3].outcome, login_outcome::ok) << "the same name again in the batch is found, not created twice";
    EXPECT_EQ(r[3].acct.id, r[0].acct.id);
    EXPECT_EQ(r[4].outcome, login_outcome::password_account);
    EXPECT_EQ(raw("SELECT COUNT(*) FROM accounts"), "4");
    const auto again = store->login_external_batch(std::vector<std::string>{"u2", "u1"});
    ASSERT_EQ(again.size(), 2u);
    EXPECT_EQ(again[0].outcome, login_outcome::ok);
    EXPECT_EQ(again[0].acct.id, r[2].acct.id);
    EXPECT_EQ(again[1].acct.id, r[0].acct.id);
    EXPECT_TRUE(store->login_external_batch({}).empty());
}

// Device tokens: found by their hash with their account's name; the database holds the BLAKE2b
// hash, never the token; storing one deletes the token it replaces, the account's expired ones
// and all but its `keep` newest; revoking deletes an account's tokens and nobody else's.
TEST_P(chat_store_test, DeviceTokensAreStoredHashedRotatedTrimmedAndRevoked) {
    auto store = open();
    const auto ann = store->login("ann", "pw", true).acct.id;
    const auto bob = store->login("bob", "pw", true).acct.id;
    ASSERT_NE(ann, 0u);
    ASSERT_NE(bob, 0u);
    // Hex of a bytes column, the same spelling on both back ends.
    const auto hex_of = [&](const std::string& where) {
        return raw(GetParam() == backend::sqlite
                       ? "SELECT lower(hex(token_hash)) FROM device_tokens WHERE " + where
                       : "SELECT encode(token_hash, 'hex') FROM device_tokens WHERE " + where);
    };
    const std::int64_t t0 = 1'700'000'000'000'000;
    const std::int64_t day = 86'400'000'000;

    const device_token first = make_device_token();
    const device_token_hash first_hash = hash_device_token(first);
    ASSERT_NE(to_hex(first.bytes), to_hex(first_hash.bytes));
    store->store_device_token({ann, first_hash, t0, t0 + 30 * day, std::nullopt, 4});
    auto found = store->find_device_token(first_hash);
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->account_id, ann);
    EXPECT_EQ(found->account_name, "ann");
    EXPECT_EQ(found->created_at_us, t0);
    EXPECT_EQ(found->expires_at_us, t0 + 30 * day);
    EXPECT_EQ(hex_of("account_id = " + std::to_string(ann)), to_hex(first_hash.bytes));
    EXPECT_EQ(raw("SELECT COUNT(*) FROM device_tokens"), "1");
    // The token's own bytes, read as a hash, find nothing.
    device_token_hash as_hash;
    as_hash.bytes = first.bytes;
    EXPECT_FALSE(store->find_device_token(as_hash).has_value());
    // Storing the same hash again (a retried transaction) changes nothing.
    store->store_device_token({ann, first_hash, t0, t0 + 30 * day, std::nullopt, 4});
    EXPECT_EQ(raw("SELECT COUNT(*) FROM device_tokens"), "1");

    // Rotation: the presented token goes in the transaction that stores its successor.
    const device_token_hash second = hash_device_token(make_device_token());
    store->store_device_token({ann, second, t0 + 1, t0 + 30 * day, first_hash, 4});
    EXPECT_FALSE(store->find_device_token(first_hash).has_value());
    ASSERT_TRUE(store->find_device_token(second).has_value());

    // An expired token is still found (the caller decides), and goes at the account's next store.
    const device_token_hash old = hash_device_token(make_device_token());
    store->store_device_token({ann, old, t0 - 40 * day, t0 - 10 * day, std::nullopt, 4});
    ASSERT_TRUE(store->find_device_token(old).has_value());
    EXPECT_EQ(store->find_device_token(old)->expires_at_us, t0 - 10 * day);
    // bob's tokens are not ann's business: his expired one stays through her clean-up.
    const device_token_hash bobs = hash_device_token(make_device_token());
    store->store_device_token({bob, bobs, t0 - 40 * day, t0 - 10 * day, std::nullopt, 4});
    std::vector<device_token_hash> anns;
    for (int i = 0; i < 5; ++i) {
        anns.push_back(hash_device_token(make_device_token()));
        store->store_device_token({ann, anns.back(), t0 + 10 + i, t0 + 30 * day, std::nullopt, 4});
    }
    EXPECT_FALSE(store->find_device_token(old).has_value()) << "an expired token outlived a new one";
    EXPECT_TRUE(store->find_device_token(bobs).has_value());
    // keep = 4: `second` and the first of the five are the oldest, so they went.
    EXPECT_FALSE(store->find_device_token(second).has_value());
    EXPECT_FALSE(store->find_device_token(anns[0]).has_value());
    for (int i = 1; i < 5; ++i) EXPECT_TRUE(store->find_device_token(anns[static_cast<std::size_t>(i)]).has_value());
    EXPECT_EQ(raw("SELECT COUNT(*) FROM device_tokens WHERE account_id = " + std::to_string(ann)), "4");

    EXPECT_EQ(store->revoke_device_tokens(ann), 4u);
    EXPECT_EQ(store->revoke_device_tokens(ann), 0u);
    for (const auto& h : anns) EXPECT_FALSE(store->find_device_token(h).has_value());
    EXPECT_TRUE(store->find_device_token(bobs).has_value()) << "revoking ann's tokens took bob's";
}

TEST_P(chat_store_test, StoredHashIsArgon2idAndNotThePassword) {
    const std::string password = "s3cret-passw0rd";
    auto store = open();
    ASSERT_EQ(store->login("carol", password, true).outcome, login_outcome::created);
    const std::string hash = raw("SELECT password_hash FROM accounts WHERE name = 'carol'");
    EXPECT_TRUE(hash.starts_with("$argon2id$")) << hash;
    EXPECT_EQ(hash.find(password), std::string::npos);
    EXPECT_TRUE(verify_password(hash, password));
    EXPECT_FALSE(verify_password(hash, password + "x"));
    // Made with the store's policy (fast_for_tests: m=8 KiB, t=1).
    EXPECT_NE(hash.find("m=8,t=1,"), std::string::npos) << hash;
}

TEST_P(chat_store_test, ConcurrentFirstLoginOfOneNameCreatesOneAccount) {
    constexpr int threads_n = 8, rounds = 10;
    std::vector<std::unique_ptr<chat_store>> stores;
    for (int i = 0; i < threads_n; ++i) stores.push_back(open());
    // Several rounds, one new name each: the insert race (both SELECTs miss, one INSERT loses)
    // does not happen on every try, but it does within a few.
    for (int round = 0; round < rounds; ++round) {
        const std::string name = "dave" + std::to_string(round);
        std::vector<login_result> results(threads_n);
        std::vector<std::string> errors(threads_n);
        std::latch go(threads_n);
        std::vector<std::thread> threads;
        for (int i = 0; i < threads_n; ++i) {
            threads.emplace_back([&, i] {
                const auto k = static_cast<std::size_t>(i);
                go.arrive_and_wait();
                try {
                    results[k] = stores[k]->login(name, "same password", true);
                } catch (const std::exception& e) {
                    errors[k] = e.what();
                }
            });
        }
        for (auto& t : threads) t.join();

        int created = 0, ok = 0;
        for (int i = 0; i < threads_n; ++i) {
            const auto k = static_cast<std::size_t>(i);
            ASSERT_EQ(errors[k], "") << name << " thread " << i;
            if (results[k].outcome == login_outcome::created) ++created;
            if (results[k].outcome == login_outcome::ok) ++ok;
            EXPECT_EQ(results[k].acct.id, results[0].acct.id) << name << " thread " << i;
            EXPECT_EQ(results[k].acct.name, name);
        }
        EXPECT_EQ(created, 1) << name;
        EXPECT_EQ(ok, threads_n - 1) << name;
        auto found = stores[0]->find_account(name);
        ASSERT_TRUE(found.has_value()) << name;
        EXPECT_EQ(found->id, results[0].acct.id) << name;
        EXPECT_EQ(raw("SELECT COUNT(*) FROM accounts"), std::to_string(round + 1));
    }
}

TEST_P(chat_store_test, AppendCountAndHistoryAreExactAndOrdered) {
    auto store = open();
    EXPECT_EQ(store->count_chat_logs(), 0u);
    EXPECT_EQ(store->max_room_id(), 0u);

    std::vector<chat_log_entry> batch;
    // Interleaved rooms, and seq out of order inside the batch: history sorts by seq.
    for (std::uint64_t seq : {2, 1, 3, 5, 4}) batch.push_back(test::make_entry(1, seq));
    for (std::uint64_t seq : {1, 2, 3}) batch.push_back(test::make_entry(258, seq));
    static constexpr char not_utf8[] = "bytes \0\xff\xfe that are not UTF-8";
    batch[1].text = std::string(not_utf8, sizeof not_utf8 - 1);
    ASSERT_EQ(batch[1].text.size(), 28u);
    batch[2].text = "\xec\x95\x88\xeb\x85\x95 (annyeong)";
    batch[3].text = std::string(60'000, 'x');
    batch[3].text[59'999] = 'y';
    batch[6].sender_id = ~std::uint64_t{0};  // unsigned ids survive the signed columns
    batch[6].server_ts_us = -5;
    ASSERT_EQ(store->append_chat_logs(batch), batch.size());
    EXPECT_EQ(store->count_chat_logs(), 8u);
    EXPECT_EQ(store->max_room_id(), 258u);

    auto by_seq = [](std::vector<chat_log_entry> v) {
        std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.seq < b.seq; });
        return v;
    };
    const std::vector<chat_log_entry> room1 = by_seq({batch.begin(), batch.begin() + 5});
    const std::vector<chat_log_entry> room258 = by_seq({batch.begin() + 5, batch.end()});

    EXPECT_EQ(store->room_history(1, 100), room1);
    EXPECT_EQ(store->room_history(258, 100), room258);
    // limit keeps the NEWEST entries, still oldest-first.
    EXPECT_EQ(store->room_history(1, 2), (std::vector<chat_log_entry>{room1[3], room1[4]}));
    EXPECT_EQ(store->room_history(1, 5), room1);
    EXPECT_TRUE(store->room_history(1, 0).empty());
    EXPECT_TRUE(store->room_history(99, 10).empty());

    std::vector<chat_log_entry> more{test::make_entry(1, 6), test::make_entry(1, 7)};
    ASSERT_EQ(store->append_chat_logs(more), 2u);
    EXPECT_EQ(store->count_chat_logs(), 10u);
    EXPECT_EQ(store->room_history(1, 3), (std::vector<chat_log_entry>{room1[4], more[0], more[1]}));
    EXPECT_EQ(store->append_chat_logs({}), 0u);
    EXPECT_EQ(store->count_chat_logs(), 10u);
}

TEST_P(chat_store_test, DuplicateKeysAreSkippedAndCounted) {
    auto store = open();
    auto first = test::make_entry(5, 1);
    first.text = "first";
    ASSERT_EQ(store->append_chat_logs(std::vector{first}), 1u);
    auto second = first;
    second.text = "second";
    // The batch still commits (a retried batch must not wedge the writer); the stored row wins.
    EXPECT_EQ(store->append_chat_logs(std::vector{second, test::make_entry(5, 2)}), 1u);
    EXPECT_EQ(store->count_chat_logs(), 2u);
    auto h = store->room_history(5, 10);
    ASSERT_EQ(h.size(), 2u);
    EXPECT_EQ(h[0].text, "first");
    EXPECT_EQ(h[1], test::make_entry(5, 2));
}

TEST_P(chat_store_test, AccountsAndLogsSurviveRestart) {
    std::uint64_t id = 0;
    std::vector<chat_log_entry> logs;
    for (std::uint64_t s = 1; s <= 20; ++s) logs.push_back(test::make_entry(3, s));
    {
        auto store = open();
        auto r = store->login("erin", "pw-erin", true);
        ASSERT_EQ(r.outcome, login_outcome::created);
        id = r.acct.id;
        ASSERT_EQ(store->append_chat_logs(logs), logs.size());
    }
    auto store = open();  // a new connection, as after a server restart
    auto r = store->login("erin", "pw-erin", false);
    EXPECT_EQ(r.outcome, login_outcome::ok);
    EXPECT_EQ(r.acct.id, id);
    EXPECT_EQ(store->login("erin", "nope", false).outcome, login_outcome::wrong_password);
    EXPECT_EQ(store->count_chat_logs(), 20u);
    EXPECT_EQ(store->room_history(3, 100), logs);
    EXPECT_EQ(store->max_room_id(), 3u);
}

// A message stored with an idempotency key is found by it (per room); a second message with the
// same key is skipped like a duplicate seq, and messages without a key never collide.
TEST_P(chat_store_test, IdempotencyKeysFindTheirMessageAndAreStoredOnce) {
    auto store = open();
    auto keyed = [](std::uint64_t room, std::uint64_t seq, std::string key) {
        chat_log_entry e = test::make_entry(room, seq);
        e.idem_key = std::move(key);
        return e;
    };
    std::vector<chat_log_entry> logs{keyed(5, 1, "order-77"), keyed(5, 2, ""), keyed(5, 3, ""),
                                     keyed(6, 1, "order-77")};
    EXPECT_EQ(store->write_batch({}, logs), 4u);
    EXPECT_EQ(store->find_idempotent(5, "order-77"), std::optional<std::uint64_t>(1));
    EXPECT_EQ(store->find_idempotent(6, "order-77"), std::optional<std::uint64_t>(1));
    EXPECT_EQ(store->find_idempotent(5, "order-78"), std::nullopt);
    EXPECT_EQ(store->find_idempotent(5, ""), std::nullopt) << "no key is not a key";
    EXPECT_EQ(store->write_batch({}, std::vector<chat_log_entry>{keyed(5, 4, "order-77")}), 0u);
    EXPECT_EQ(store->room_log_range(5).newest, 3u);
}

TEST_P(chat_store_test, RoomsAndMembershipsAreStoredLoadedAndDeleted) {
    auto store = open();
    EXPECT_TRUE(store->load_rooms().empty());
    const auto ann = store->login("ann", "pw", true).acct.id;
    const auto ben = store->login("ben", "pw", true).acct.id;
    const auto cat = store->login("cat", "pw", true).acct.id;
    using k = room_change::kind;
    const std::uint64_t lobby = (7u << 8) | 1, attic = (9u << 8) | 0, gone = (8u << 8) | 3;
    std::vector<room_change> changes{
        {k::created, lobby, 0, "lobby", 10},
        {k::joined, lobby, ann, {}, 11},
        {k::created, attic, 0, "caf\xc3\xa9", 12},
        {k::joined, attic, ben, {}, 13},
        {k::joined, lobby, ben, {}, 14},     // ben is in both rooms now
        {k::created, gone, 0, "gone", 15},
        {k::joined, gone, cat, {}, 16},
        {k::left, attic, cat, {}, 17},       // not cat's room: nothing happens
    };
    std::vector<chat_log_entry> logs{test::make_entry(lobby, 1), test::make_entry(lobby, 2)};
    EXPECT_EQ(store->write_batch(changes, logs), 2u);
    // The same batch again (a retry after an unknown outcome) changes nothing.
    EXPECT_EQ(store->write_batch(changes, logs), 0u);
    EXPECT_EQ(store->write_batch(std::vector<room_change>{{k::deleted, gone, 0, {}, 20}}, {}), 0u);
    EXPECT_EQ(store->write_batch(std::vector<room_change>{{k::created, gone, 0, "again", 21}}, {}), 0u)
        << "a deleted room's id stays taken";

    auto rooms = open()->load_rooms();  // another connection sees the commit
    ASSERT_EQ(rooms.size(), 2u);  // ascending by id
    std::vector<std::uint64_t> lobby_members{ann, ben};
    std::sort(lobby_members.begin(), lobby_members.end());
    std::vector<std::string> lobby_names{lobby_members[0] == ann ? "ann" : "ben",
                                         lobby_members[0] == ann ? "ben" : "ann"};
    EXPECT_EQ(rooms[0], (stored_room{lobby, "lobby", 2, lobby_members, lobby_names, {0, 0}}));
    EXPECT_EQ(rooms[1], (stored_room{attic, "caf\xc3\xa9", 0, {ben}, {"ben"}, {0}}));
    // One room read alone (cluster mode's load on a join) is the same as in the list; a
    // deleted or unknown room is nothing.
    EXPECT_EQ(store->load_room(lobby), rooms[0]);
    EXPECT_EQ(store->load_room(attic), rooms[1]);
    EXPECT_EQ(store->load_room(gone), std::nullopt) << "deleted";
    EXPECT_EQ(store->load_room(12345), std::nullopt) << "unknown";
    // The largest id of any room (and of any chat log): new ids start above it.
    EXPECT_EQ(store->max_room_id(), attic);
    store->write_batch(std::vector<room_change>{{k::created, (20u << 8) | 5, 0, "x", 22},
                                                {k::deleted, (20u << 8) | 5, 0, {}, 23}},
                       {});
    EXPECT_EQ(store->max_room_id(), (20u << 8) | 5) << "deleted rooms count too";

    // A login tells the account's newest room; a leave clears it, a deleted room clears its members.
    EXPECT_EQ(store->login("ann", "pw", false).room_id, lobby);
    EXPECT_EQ(store->login("ben", "pw", false).room_id, lobby) << "joined after attic";
    EXPECT_EQ(store->login("cat", "pw", false).room_id, 0u) << "its room was deleted";
    EXPECT_EQ(store->login("ann", "wrong", false).room_id, 0u);
    store->write_batch(std::vector<room_change>{{k::left, lobby, ann, {}, 30}}, {});
    EXPECT_EQ(store->login("ann", "pw", false).room_id, 0u);
    rooms = store->load_rooms();
    ASSERT_EQ(rooms.size(), 2u);
    EXPECT_EQ(rooms[0].members, std::vector<std::uint64_t>{ben});
    EXPECT_EQ(rooms[0].member_names, std::vector<std::string>{"ben"});
    EXPECT_EQ(raw("SELECT COUNT(*) FROM rooms"), "4");
    EXPECT_EQ(raw("SELECT COUNT(*) FROM rooms WHERE deleted_at_us IS NOT NULL"), "2");
}

// Cluster mode's deletion: decided on the stored membership count, not on a node's view.
TEST_P(chat_store_test, ARoomIsDeletedIfEmptyOnlyWhenNobodyBelongsToIt) {
    auto store = open();
    const auto ann = store->login("ann", "pw", true).acct.id;
    const auto ben = store->login("ben", "pw", true).acct.id;
    using k = room_change::kind;
    const std::uint64_t hall = (3u << 8) | 1;
    store->write_batch(std::vector<room_change>{{k::created, hall, 0, "hall", 10},
                                                {k::joined, hall, ann, {}, 11},
                                                {k::joined, hall, ben, {}, 12}},
                       {});
    EXPECT_FALSE(store->delete_room_if_empty(hall, 20)) << "two members belong to it";
    store->write_batch(std::vector<room_change>{{k::left, hall, ann, {}, 21}}, {});
    EXPECT_FALSE(open()->delete_room_if_empty(hall, 22)) << "ben still belongs to it";
    ASSERT_EQ(store->load_rooms().size(), 1u);
    store->write_batch(std::vector<room_change>{{k::left, hall, ben, {}, 23}}, {});
    EXPECT_TRUE(open()->delete_room_if_empty(hall, 24)) << "nobody belongs to it";
    EXPECT_FALSE(store->delete_room_if_empty(hall, 25)) << "deleted once only";
    EXPECT_FALSE(store->delete_room_if_empty(hall + 256, 25)) << "an unknown room is not deleted";
    EXPECT_TRUE(store->load_rooms().empty());
    EXPECT_EQ(raw("SELECT COUNT(*) FROM rooms WHERE deleted_at_us = 24"), "1");
}

INSTANTIATE_TEST_SUITE_P(backends, chat_store_test, ::testing::Values(backend::sqlite, backend::postgres),
                         test::backend_name);

TEST(chat_store_postgres, ReconnectsAfterTheServerDropsTheConnection) {
    std::string url;
    try {
        url = test::shared_pg_server().create_database();
    } catch (const std::exception& e) {
        FAIL() << e.what();
    }
    auto store = open_chat_store(url, password_policy::fast_for_tests());
    auto created = store->login("gina", "pw", true);
    ASSERT_EQ(created.outcome, login_outcome::created);
    auto drop_connections = [&] {
        test::pg_server::exec_sql(url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                       "WHERE datname = current_database() AND pid <> pg_backend_pid()");
    };
    // Each operation kind survives a dropped connection (restart, failover, idle timeout).
    drop_connections();
    auto again = store->login("gina", "pw", false);
    EXPECT_EQ(again.outcome, login_outcome::ok);
    EXPECT_EQ(again.acct.id, created.acct.id);
    drop_connections();
    EXPECT_EQ(store->append_chat_logs(std::vector{test::make_entry(1, 1), test::make_entry(1, 2)}), 2u);
    drop_connections();
    EXPECT_EQ(store->count_chat_logs(), 2u);
    drop_connections();
    EXPECT_EQ(store->room_history(1, 10), (std::vector{test::make_entry(1, 1), test::make_entry(1, 2)}));
    drop_connections();
    EXPECT_TRUE(store->find_account("gina").has_value());
}

// ---- opening errors: one clear sentence naming the cause and the fix ----

std::string open_error(const std::string& url) {
    try {
        open_chat_store(url, password_policy::fast_for_tests());
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "<no exception>";
}

TEST(chat_store_open, RejectsUnsupportedUrl) {
    const auto msg = open_error("mysql://root:hunter2@db/chat");
    EXPECT_NE(msg.find("unsupported database URL"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sqlite:PATH"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("hunter2"), std::string::npos) << "password leaked: " << msg;
}

TEST(chat_store_open, RejectsSqliteInMissingDirectory) {
    const auto msg = open_error("sqlite:/nonexistent-strix-dir/sub/chat.db");
    EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;
    EXPECT_NE(msg.find("/nonexistent-strix-dir/sub"), std::string::npos) << msg;
}

TEST(chat_store_open, RejectsSqliteWithoutAFile) {
    EXPECT_NE(open_error("sqlite:").find("names no file"), std::string::npos);
    EXPECT_NE(open_error("sqlite::memory:").find("not a file path"), std::string::npos);
}

TEST(chat_store_open, RejectsAFileThatIsNotADatabase) {
    test::temp_dir dir;
    const std::string path = dir.path() + "/garbage.db";
    std::ofstream(path) << std::string(4096, 'g');
    const auto msg = open_error("sqlite:" + path);
    EXPECT_NE(msg.find("cannot use SQLite database"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not a database"), std::string::npos) << msg;
}

TEST(chat_store_open, SqliteUrlSpellingsOpenTheSameFile) {
    test::temp_dir dir;
    const std::string path = dir.path() + "/chat.db";
    open_chat_store("sqlite:" + path, password_policy::fast_for_tests())->login("frank", "pw", true);
    auto store = open_chat_store("sqlite://" + path, password_policy::fast_for_tests());
    EXPECT_TRUE(store->find_account("frank").has_value());
}

TEST(chat_store_open, ReportsUnreachablePostgres) {
    const auto msg = open_error("postgresql://strix:topsecret@/chat?host=/nonexistent-strix-socket-dir&port=1");
    EXPECT_NE(msg.find("cannot connect to PostgreSQL"), std::string::npos) << msg;
    EXPECT_NE(msg.find("check that the server is running"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("topsecret"), std::string::npos) << "password leaked: " << msg;
}

TEST(chat_store_open, ReportsMissingPostgresDatabase) {
    std::string url;
    try {
        url = test::shared_pg_server().url_for("no_such_database");
    } catch (const std::exception& e) {
        FAIL() << e.what();
    }
    const auto msg = open_error(url);
    EXPECT_NE(msg.find("cannot connect to PostgreSQL"), std::string::npos) << msg;
    EXPECT_NE(msg.find("no_such_database"), std::string::npos) << msg;
}

TEST(chat_store_open, RedactUrlHidesPasswords) {
    EXPECT_EQ(redact_url("postgresql://u:pw@h:5432/db"), "postgresql://u:***@h:5432/db");
    EXPECT_EQ(redact_url("postgresql://u@h/db?password=pw&sslmode=off"),
              "postgresql://u@h/db?password=***&sslmode=off");
    EXPECT_EQ(redact_url("postgresql://h/db"), "postgresql://h/db");
    EXPECT_EQ(redact_url("sqlite:var/chat.db"), "sqlite:var/chat.db");
}

}  // namespace
