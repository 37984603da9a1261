// chat_log_writer: group commit against both real back ends, and its queue, retry and shutdown
// rules against a scripted store.

#include "apps/chat/storage/chat_log_writer.hpp"

#include "fake_store.hpp"
#include "storage_test_support.hpp"

#include <gtest/gtest.h>

#include <latch>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace {

using namespace strix;
using namespace strix::chat;
using strix::test::backend;

std::vector<chat_log_entry> entries(std::uint64_t room, std::uint64_t first, std::uint64_t n) {
    std::vector<chat_log_entry> v;
    for (std::uint64_t s = first; s < first + n; ++s) v.push_back(test::make_entry(room, s));
    return v;
}

class chat_log_writer_db_test : public test::store_test {};

TEST_P(chat_log_writer_db_test, GroupCommits50kEntriesFromTwoThreadsExactlyOnce) {
    constexpr std::uint64_t rooms_per_thread = 10, per_room = 2500;
    constexpr std::uint64_t total = 2 * rooms_per_thread * per_room;  // 50,000
    chat_log_writer writer(open(), {.capacity = 65536, .batch_limit = 1000});

    std::latch go(2);
    std::vector<std::uint64_t> refused(2, 0);
    std::vector<std::thread> producers;
    for (std::uint64_t t = 0; t < 2; ++t) {
        producers.emplace_back([&, t] {
            go.arrive_and_wait();
            // Rooms 1-10 and 101-110; each producer interleaves its rooms, in seq order per room.
            for (std::uint64_t seq = 1; seq <= per_room; ++seq) {
                for (std::uint64_t r = 1; r <= rooms_per_thread; ++r) {
                    if (!writer.try_enqueue(test::make_entry(t * 100 + r, seq))) ++refused[t];
                }
            }
        });
    }
    for (auto& p : producers) p.join();
    ASSERT_EQ(refused[0] + refused[1], 0u) << "capacity exceeds the total; nothing may be refused";
    EXPECT_EQ(writer.stop(), 0u);

    const auto st = writer.stats();
    EXPECT_EQ(st.enqueued, total);
    EXPECT_EQ(st.written, total);
    EXPECT_EQ(st.lost, 0u);
    EXPECT_EQ(st.duplicates, 0u);
    EXPECT_EQ(st.failures, 0u);
    EXPECT_EQ(st.queue_depth, 0u);
    EXPECT_GE(st.queue_peak, 1u);
    EXPECT_LE(st.queue_peak, total);
    // Group commit happened: fewer transactions than entries, none above the batch limit.
    EXPECT_LT(st.batches, total);
    EXPECT_GE(st.batches, total / 1000);
    EXPECT_GE(st.max_lag_us, st.last_lag_us);

    auto store = open();
    EXPECT_EQ(store->count_chat_logs(), total);
    for (std::uint64_t t = 0; t < 2; ++t) {
        for (std::uint64_t r = 1; r <= rooms_per_thread; ++r) {
            const std::uint64_t room = t * 100 + r;
            const auto h = store->room_history(room, per_room * 2);
            ASSERT_EQ(h.size(), per_room) << "room " << room;
            for (std::uint64_t i = 0; i < per_room; ++i) {
                ASSERT_EQ(h[i], test::make_entry(room, i + 1)) << "room " << room << " index " << i;
            }
        }
    }
    EXPECT_EQ(store->max_room_id(), 110u);
}

TEST_P(chat_log_writer_db_test, FlushReturnsOnceEarlierEntriesAreCommitted) {
    chat_log_writer writer(open());
    for (const auto& e : entries(9, 1, 100)) ASSERT_TRUE(writer.try_enqueue(e));
    writer.flush();
    // Visible to another connection before stop(): flush() means committed.
    auto reader = open();
    EXPECT_EQ(reader->count_chat_logs(), 100u);
    EXPECT_EQ(reader->room_history(9, 1000), entries(9, 1, 100));
    EXPECT_EQ(writer.stats().written, 100u);
    EXPECT_EQ(writer.stop(), 0u);
}

TEST_P(chat_log_writer_db_test, ReusedKeysAreCountedAsDuplicatesNotLost) {
    chat_log_writer writer(open());
    auto a = test::make_entry(4, 1);
    auto b = a;
    b.text = "a reused (room, seq)";
    ASSERT_TRUE(writer.try_enqueue(a));
    writer.flush();
    ASSERT_TRUE(writer.try_enqueue(b));
    ASSERT_TRUE(writer.try_enqueue(test::make_entry(4, 2)));
    EXPECT_EQ(writer.stop(), 0u);
    const auto st = writer.stats();
    EXPECT_EQ(st.written, 3u);
    EXPECT_EQ(st.duplicates, 1u);
    EXPECT_EQ(st.lost, 0u);
    auto store = open();
    EXPECT_EQ(store->room_history(4, 10), (std::vector{a, test::make_entry(4, 2)}));
}

// A copy of a message another writer may have stored (cluster mode): stored when absent, the
// stored row kept when present, counted as a copy either way.
TEST_P(chat_log_writer_db_test, CopiesAreStoredIfAbsentAndTheStoredRowWins) {
    chat_log_writer writer(open());
    auto mine = test::make_entry(5, 1);
    ASSERT_TRUE(writer.try_enqueue(mine));
    writer.flush();
    auto copy = mine;
    copy.text = "the stream's copy";
    ASSERT_TRUE(writer.try_enqueue_copy(copy));
    ASSERT_TRUE(writer.try_enqueue_copy(test::make_entry(5, 2)));
    EXPECT_EQ(writer.stop(), 0u);
    const auto st = writer.stats();
    EXPECT_EQ(st.written, 3u);
    EXPECT_EQ(st.copies, 2u);
    EXPECT_EQ(st.duplicates, 1u);
    auto store = open();
    EXPECT_EQ(store->room_history(5, 10), (std::vector{mine, test::make_entry(5, 2)}));
}

INSTANTIATE_TEST_SUITE_P(backends, chat_log_writer_db_test, ::testing::Values(backend::sqlite, backend::postgres),
                         test::backend_name);

// ---- queue, retry and shutdown rules, with a scripted store ----

struct scripted {
    std::shared_ptr<test::fake_state> state = std::make_shared<test::fake_state>();
    std::unique_ptr<chat_store> store() { return std::make_unique<test::fake_store>(state); }
};

TEST(chat_log_writer, TryEnqueueRefusesWhenFullAndKeepsOrder) {
    scripted s;
    s.state->gate_open = false;
    chat_log_writer writer(s.store(), {.capacity = 4, .batch_limit = 2});
    const auto all = entries(1, 1, 6);
    ASSERT_TRUE(writer.try_enqueue(all[0]));
    ASSERT_TRUE(s.state->wait_entered(1));  // the writer holds entry 1 at the gate
    for (int i = 1; i <= 4; ++i) EXPECT_TRUE(writer.try_enqueue(all[static_cast<std::size_t>(i)])) << i;
    EXPECT_FALSE(writer.try_enqueue(all[5]));  // 4 queued = capacity
    auto st = writer.stats();
    EXPECT_EQ(st.enqueued, 5u);
    EXPECT_EQ(st.rejected, 1u);
    EXPECT_EQ(st.queue_depth, 4u);
    EXPECT_EQ(st.queue_peak, 4u);

    s.state->open_gate();
    EXPECT_EQ(writer.stop(), 0u);
    EXPECT_EQ(s.state->rows, std::vector(all.begin(), all.begin() + 5));
    EXPECT_EQ(s.state->batch_sizes, (std::vector<std::size_t>{1, 2, 2}));
    st = writer.stats();
    EXPECT_EQ(st.written, 5u);
    EXPECT_EQ(st.batches, 3u);
    EXPECT_EQ(st.queue_depth, 0u);
    EXPECT_FALSE(writer.try_enqueue(all[5]));  // stopped
    EXPECT_EQ(writer.stats().rejected, 2u);
}

TEST(chat_log_writer, EachCommittedBatchReportsItsTagsOnceInOrderAfterTheCommit) {
    scripted s;
    s.state->gate_open = false;
    std::mutex mu;
    std::vector<std::vector<std::uint64_t>> reports;
    std::vector<std::size_t> rows_at_report;  // rows committed when each report came
    chat_log_writer writer(s.store(), {.capacity = 3,
                                       .batch_limit = 100,
                                       .commit_delay = std::chrono::microseconds(0),
                                       .committed = [&](std::span<const std::uint64_t> tags) {
                                           std::size_t rows = 0;
                                           {
                                               std::lock_guard lk(s.state->mu);
                                               rows = s.state->rows.size() + s.state->changes.size();
                                           }
                                           std::lock_guard lk(mu);
                                           reports.emplace_back(tags.begin(), tags.end());
                                           rows_at_report.push_back(rows);
                                       }});
    using k = room_change::kind;
    ASSERT_TRUE(writer.try_enqueue(room_change{k::created, 7, 0, "r", 1}, 11));
    ASSERT_TRUE(s.state->wait_entered(1));  // batch 1: the room alone, held at the gate
    ASSERT_TRUE(writer.try_enqueue(test::make_entry(7, 1), 12));
    ASSERT_TRUE(writer.try_enqueue(test::make_entry(7, 2)));  // no tag: committed, not reported
    ASSERT_TRUE(writer.try_enqueue(test::make_entry(7, 3), 13));
    EXPECT_FALSE(writer.try_enqueue(test::make_entry(7, 4), 14)) << "full";
    EXPECT_FALSE(writer.try_enqueue(room_change{k::joined, 7, 5, {}, 2}, 15)) << "full";
    // A change that must not fail goes in beyond the capacity.
    EXPECT_TRUE(writer.try_enqueue(room_change{k::left, 7, 5, {}, 3}, 16, true));
    {
        std::lock_guard lk(mu);
        EXPECT_TRUE(reports.empty()) << "nothing is reported before its commit";
    }
    s.state->open_gate();
    writer.flush();
    ASSERT_TRUE(writer.try_enqueue(test::make_entry(8, 1)));  // a batch without tags: no report
    EXPECT_EQ(writer.stop(), 0u);
    EXPECT_EQ(reports, (std::vector<std::vector<std::uint64_t>>{{11}, {12, 13, 16}}));
    EXPECT_EQ(rows_at_report, (std::vector<std::size_t>{1, 5}));
    EXPECT_EQ(s.state->batch_sizes, (std::vector<std::size_t>{1, 4, 1}));
    EXPECT_EQ(s.state->changes.size(), 2u);
    EXPECT_EQ(writer.stats().room_changes, 2u);
    EXPECT_EQ(writer.stats().written, 4u);
}

TEST(chat_log_writer, FailedCommitsAreRetriedWithoutLossOrReordering) {
    scripted s;
    s.state->fail_next = 3;
    chat_log_writer writer(s.store(),
                           {.retry_initial = std::chrono::milliseconds(1), .retry_max = std::chrono::milliseconds(4)});
    const auto all = entries(2, 1, 15);
    for (std::size_t i = 0; i < 10; ++i) ASSERT_TRUE(writer.try_enqueue(all[i]));
    writer.flush();
    {
        std::lock_guard lk(s.state->mu);
        EXPECT_EQ(s.state->rows, std::vector(all.begin(), all.begin() + 10));
    }
    for (std::size_t i = 10; i < 15; ++i) ASSERT_TRUE(writer.try_enqueue(all[i]));
    EXPECT_EQ(writer.stop(), 0u);
    EXPECT_EQ(s.state->rows, all);
    const auto st = writer.stats();
    EXPECT_EQ(st.failures, 3u);
    EXPECT_EQ(st.written, 15u);
    EXPECT_EQ(st.lost, 0u);
}

TEST(chat_log_writer, StopWritesEverythingQueuedBeyondOneBatch) {
    scripted s;
    s.state->gate_open = false;
    chat_log_writer writer(s.store(), {.capacity = 10'000, .batch_limit = 1000});
    std::vector<chat_log_entry> accepted;
    for (std::uint64_t seq = 1; seq <= 2501; ++seq) {
        auto e = test::make_entry(3, seq);
        ASSERT_TRUE(writer.try_enqueue(e));
        accepted.push_back(std::move(e));
        if (seq == 1) {
            ASSERT_TRUE(s.state->wait_entered(1));  // batch 1 = entry 1 alone
        }
    }
    std::uint64_t unwritten = 99;
    std::thread stopper([&] { unwritten = writer.stop(); });
    // Entries are refused once stop() has begun; whatever got in before must still be written.
    for (std::uint64_t seq = 2502; seq < 1'000'000; ++seq) {
        auto e = test::make_entry(3, seq);
        if (!writer.try_enqueue(e)) break;
        accepted.push_back(std::move(e));
    }
    s.state->open_gate();
    stopper.join();
    EXPECT_EQ(unwritten, 0u);
    EXPECT_EQ(s.state->rows, accepted);
    ASSERT_GE(s.state->batch_sizes.size(), 4u);
    EXPECT_EQ(s.state->batch_sizes[0], 1u);
    EXPECT_EQ(s.state->batch_sizes[1], 1000u);
    for (auto n : s.state->batch_sizes) EXPECT_LE(n, 1000u);
    EXPECT_EQ(writer.stats().written, accepted.size());
}

TEST(chat_log_writer, StopGivesUpAfterBoundedAttemptsAndReportsTheLoss) {
    scripted s;
    s.state->always_fail = true;
    chat_log_writer writer(s.store(), {.batch_limit = 3,
                                       .retry_initial = std::chrono::milliseconds(1),
                                       .retry_max = std::chrono::milliseconds(2),
                                       .stop_attempts = 3});
    for (const auto& e : entries(6, 1, 7)) ASSERT_TRUE(writer.try_enqueue(e));
    ASSERT_TRUE(s.state->wait_entered(2));  // it is retrying while running
    EXPECT_EQ(writer.stop(), 7u);           // terminates, and says how many were not written
    const auto st = writer.stats();
    EXPECT_EQ(st.lost, 7u);
    EXPECT_EQ(st.written, 0u);
    EXPECT_GE(st.failures, 3u);
    EXPECT_TRUE(s.state->rows.empty());
    writer.flush();                   // nothing pending: returns at once
    EXPECT_EQ(writer.stop(), 0u);     // idempotent
}

TEST(chat_log_writer, WriteLagCoversTheTimeAnEntryWaited) {
    scripted s;
    s.state->gate_open = false;
    chat_log_writer writer(s.store());
    ASSERT_TRUE(writer.try_enqueue(test::make_entry(8, 1)));
    ASSERT_TRUE(s.state->wait_entered(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    s.state->open_gate();
    writer.flush();
    const auto st = writer.stats();
    // A lower bound only: the entry certainly waited at the gate for the 20 ms sleep.
    EXPECT_GE(st.last_lag_us, 20'000u);
    EXPECT_EQ(st.max_lag_us, st.last_lag_us);
    EXPECT_EQ(st.batches, 1u);
}

}  // namespace
