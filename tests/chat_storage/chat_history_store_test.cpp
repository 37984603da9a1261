// chat_store's history, log ranges, retention and resume tokens against both back ends (a fresh
// SQLite file, a fresh database on the test binary's PostgreSQL), and chat_retention's passes.

#include "apps/chat/storage/chat_retention.hpp"
#include "apps/chat/storage/chat_store.hpp"
#include "apps/chat/storage/device_token.hpp"

#include "storage_test_support.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using namespace strix;
using namespace strix::chat;
using strix::test::backend;

class chat_history_store : public test::store_test {
protected:
    // Messages first..last of `room`, message seq at `base_us + seq` microseconds.
    static std::vector<chat_log_entry> range(std::uint64_t room, std::uint64_t first, std::uint64_t last,
                                             std::int64_t base_us = 0) {
        std::vector<chat_log_entry> out;
        for (std::uint64_t s = first; s <= last; ++s) {
            out.push_back(test::make_entry(room, s));
            if (base_us != 0) out.back().server_ts_us = base_us + static_cast<std::int64_t>(s);
        }
        return out;
    }

    static std::vector<std::uint64_t> seqs(const std::vector<chat_log_entry>& v) {
        std::vector<std::uint64_t> out;
        for (const auto& e : v) out.push_back(e.seq);
        return out;
    }

    static std::vector<std::uint64_t> iota(std::uint64_t first, std::uint64_t last) {
        std::vector<std::uint64_t> out;
        for (std::uint64_t s = first; s <= last; ++s) out.push_back(s);
        return out;
    }
};

TEST_P(chat_history_store, HistoryPagesGoBothWaysInSeqOrder) {
    auto store = open();
    const std::uint64_t a = (1u << 8) | 0, b = (2u << 8) | 1;
    store->append_chat_logs(range(a, 1, 30));
    store->append_chat_logs(range(b, 1, 5));
    EXPECT_EQ(seqs(store->history_page({a, 0, 0, 4})), iota(27, 30)) << "newest";
    EXPECT_EQ(seqs(store->history_page({a, 10, 0, 4})), iota(6, 9)) << "before 10";
    EXPECT_EQ(seqs(store->history_page({a, 3, 0, 4})), iota(1, 2)) << "before 3: only two";
    EXPECT_EQ(seqs(store->history_page({a, 0, 10, 4})), iota(11, 14)) << "after 10";
    EXPECT_EQ(seqs(store->history_page({a, 0, 28, 4})), iota(29, 30)) << "after 28: only two";
    EXPECT_TRUE(store->history_page({a, 0, 30, 4}).empty());
    EXPECT_TRUE(store->history_page({a, 0, 0, 0}).empty());
    auto page = store->history_page({b, 0, 0, 50});
    ASSERT_EQ(page.size(), 5u);
    EXPECT_EQ(page[2], test::make_entry(b, 3)) << "every field as stored";
    EXPECT_EQ(store->room_log_range(a), (log_range{1, 30}));
    EXPECT_EQ(store->room_log_range(99), (log_range{0, 0}));
    EXPECT_EQ(store->log_rooms_after(0, 10), (std::vector<std::uint64_t>{a, b}));
    EXPECT_EQ(store->log_rooms_after(a, 10), (std::vector<std::uint64_t>{b}));
    EXPECT_EQ(store->log_rooms_after(0, 1), (std::vector<std::uint64_t>{a}));
}

TEST_P(chat_history_store, RetentionByCountDeletesTheOldestInBatchesAndKeepsTheRest) {
    auto store = open();
    const std::uint64_t a = (1u << 8) | 0, b = (2u << 8) | 1;
    store->append_chat_logs(range(a, 1, 1000));
    store->append_chat_logs(range(b, 1, 40));
    // Keep the newest 100 of each room, 300 rows per DELETE: a needs 3 full batches and a last.
    EXPECT_EQ(store->trim_room_logs(a, 100, 0, 300), 300u);
    EXPECT_EQ(store->room_log_range(a), (log_range{301, 1000}));
    EXPECT_EQ(chat_retention::run_pass(*store, {.max_per_room = 100, .batch = 300}, 0), 600u);
    EXPECT_EQ(store->room_log_range(a), (log_range{901, 1000}));
    EXPECT_EQ(store->room_log_range(b), (log_range{1, 40})) << "under the limit: untouched";
    EXPECT_EQ(seqs(store->history_page({a, 0, 0, 1000})), iota(901, 1000)) << "exactly the newest 100 stay";
    EXPECT_EQ(store->count_chat_logs(), 140u);
    EXPECT_EQ(chat_retention::run_pass(*store, {.max_per_room = 100, .batch = 300}, 0), 0u) << "nothing more";
    // New messages push the window on.
    store->append_chat_logs(range(a, 1001, 1010));
    EXPECT_EQ(chat_retention::run_pass(*store, {.max_per_room = 100, .batch = 300}, 0), 10u);
    EXPECT_EQ(store->room_log_range(a), (log_range{911, 1010}));
}

TEST_P(chat_history_store, RetentionByAgeDeletesOnlyAPrefixOfOldMessages) {
    auto store = open();
    const std::uint64_t a = (1u << 8) | 0;
    const std::int64_t t0 = 1'800'000'000'000'000;
    auto logs = range(a, 1, 50, t0);  // message s at t0 + s us
    logs[29].server_ts_us = t0;       // seq 30 looks old (a clock that stepped back): it must stay,
                                      // since seq 21..29 after the cutoff stay
    store->append_chat_logs(logs);
    // Older than t0 + 21 us: seq 1..20 go.
    retention_policy p;
    p.max_age = std::chrono::seconds(1);
    p.batch = 7;
    const std::int64_t now = t0 + 21 + 1'000'000;
    EXPECT_EQ(chat_retention::run_pass(*store, p, now), 20u);
    EXPECT_EQ(store->room_log_range(a), (log_range{21, 50}));
    EXPECT_EQ(seqs(store->history_page({a, 0, 0, 100})), iota(21, 50)) << "contiguous: seq 30 kept";
    // Age and count together: the stricter wins.
    p.max_per_room = 5;
    EXPECT_EQ(chat_retention::run_pass(*store, p, now), 25u);
    EXPECT_EQ(store->room_log_range(a), (log_range{46, 50}));
}

TEST_P(chat_history_store, ResumeTokensLiveApartFromDeviceTokens) {
    auto store = open();
    const auto ann = store->login("ann", "pw", true).acct;
    const std::uint64_t room = (3u << 8) | 0;
    using k = room_change::kind;
    store->write_batch(std::vector<room_change>{{k::created, room, 0, "r", 1}, {k::joined, room, ann.id, {}, 2}}, {});
    const auto resume = hash_device_token(make_device_token());
    device_token_change c{ann.id, resume, 100, 200, std::nullopt, 16};
    c.kind = token_kind::resume;
    store->store_device_token(c);
    auto rec = store->find_device_token(resume, token_kind::resume);
    ASSERT_TRUE(rec);
    EXPECT_EQ(rec->account_id, ann.id);
    EXPECT_EQ(rec->account_name, "ann");
    EXPECT_EQ(rec->expires_at_us, 200);
    EXPECT_EQ(rec->room_id, room) << "a token login puts the session back in its room";
    EXPECT_FALSE(store->find_device_token(resume, token_kind::device)) << "a resume token is no device token";
    // Rotation: the next token replaces it.
    const auto next = hash_device_token(make_device_token());
    device_token_change r{ann.id, next, 150, 250, resume, 16};
    r.kind = token_kind::resume;
    store->store_device_token(r);
    EXPECT_FALSE(store->find_device_token(resume, token_kind::resume)) << "single use";
    EXPECT_TRUE(store->find_device_token(next, token_kind::resume));
    EXPECT_EQ(store->revoke_device_tokens(ann.id, token_kind::device), 0u);
    EXPECT_EQ(store->revoke_device_tokens(ann.id, token_kind::resume), 1u);
    EXPECT_FALSE(store->find_device_token(next, token_kind::resume));
}

INSTANTIATE_TEST_SUITE_P(backends, chat_history_store, ::testing::Values(backend::sqlite, backend::postgres),
                         test::backend_name);

}  // namespace
