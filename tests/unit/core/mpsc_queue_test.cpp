#include <strix/core/mpsc_queue.hpp>

#include "unit/core/queue_test_support.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using queue_test::life_counts;
using queue_test::load_divisor;
using queue_test::stall_watch;
using queue_test::tracked;

// Its constructor may throw, so try_emplace must build it before claiming a cell.
struct picky {
    picky(int v, bool fail) : value(v) {
        if (fail) throw std::runtime_error("constructor failed");
    }
    int value;
};

TEST(mpsc_queue, rounds_capacity_up_to_a_power_of_two_of_at_least_two) {
    EXPECT_EQ(strix::mpsc_queue<int>(1).capacity(), 2u);
    EXPECT_EQ(strix::mpsc_queue<int>(2).capacity(), 2u);
    EXPECT_EQ(strix::mpsc_queue<int>(3).capacity(), 4u);
    EXPECT_EQ(strix::mpsc_queue<int>(1000).capacity(), 1024u);
    EXPECT_EQ(strix::mpsc_queue<int>(1024).capacity(), 1024u);
    EXPECT_EQ(strix::mpsc_queue<int>(1025).capacity(), 2048u);
    EXPECT_THROW(strix::mpsc_queue<int>(0), std::invalid_argument);
    EXPECT_THROW(strix::mpsc_queue<int>(~std::size_t{0}), std::invalid_argument);
}

TEST(mpsc_queue, keeps_fifo_order_and_rejects_at_full_and_empty) {
    strix::mpsc_queue<int> q(4);
    int out = -1;
    EXPECT_TRUE(q.empty_approx());
    EXPECT_FALSE(q.try_pop(out));
    EXPECT_EQ(out, -1);
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(q.try_push(i));
    EXPECT_EQ(q.size_approx(), 4u);
    EXPECT_FALSE(q.try_push(99));
    EXPECT_FALSE(q.try_emplace(99));
    ASSERT_TRUE(q.try_pop(out));
    EXPECT_EQ(out, 0);
    EXPECT_TRUE(q.try_push(4));
    EXPECT_FALSE(q.try_push(5));
    for (int want = 1; want <= 4; ++want) {
        ASSERT_TRUE(q.try_pop(out));
        EXPECT_EQ(out, want);
    }
    EXPECT_FALSE(q.try_pop(out));
    EXPECT_EQ(out, 4);
    EXPECT_TRUE(q.empty_approx());
}

TEST(mpsc_queue, smallest_ring_alternates_full_and_empty) {
    strix::mpsc_queue<int> q(1);  // rounded to 2
    int out = 0;
    for (int i = 0; i < 100; i += 2) {
        ASSERT_TRUE(q.try_push(i));
        ASSERT_TRUE(q.try_push(i + 1));
        ASSERT_FALSE(q.try_push(-1));
        ASSERT_TRUE(q.try_pop(out));
        ASSERT_EQ(out, i);
        ASSERT_TRUE(q.try_pop(out));
        ASSERT_EQ(out, i + 1);
        ASSERT_FALSE(q.try_pop(out));
    }
}

TEST(mpsc_queue, wraps_around_many_times_in_order) {
    strix::mpsc_queue<std::uint64_t> q(8);
    std::uint64_t next_in = 0;
    std::uint64_t next_out = 0;
    for (int round = 0; round < 20000; ++round) {
        const int k = round % 8 + 1;
        for (int i = 0; i < k; ++i) ASSERT_TRUE(q.try_push(next_in++));
        ASSERT_EQ(q.size_approx(), static_cast<std::size_t>(k));
        ASSERT_FALSE(k == 8 && q.try_push(0));
        for (int i = 0; i < k; ++i) {
            std::uint64_t v = 0;
            ASSERT_TRUE(q.try_pop(v));
            ASSERT_EQ(v, next_out++);
        }
    }
    EXPECT_EQ(next_out, 90000u);
    EXPECT_TRUE(q.empty_approx());
}

TEST(mpsc_queue, carries_move_only_and_non_default_constructible_items) {
    strix::mpsc_queue<std::unique_ptr<int>> q(4);
    auto p = std::make_unique<int>(7);
    ASSERT_TRUE(q.try_push(std::move(p)));
    EXPECT_EQ(p, nullptr);
    std::unique_ptr<int> out;
    ASSERT_TRUE(q.try_pop(out));
    EXPECT_EQ(*out, 7);

    life_counts counts;
    strix::mpsc_queue<tracked> t(4);
    ASSERT_TRUE(t.try_emplace(5, &counts));
    tracked got(0, &counts);
    ASSERT_TRUE(t.try_pop(got));
    EXPECT_EQ(got.value, 5);
    EXPECT_EQ(counts.live(), 1);
}

TEST(mpsc_queue, failed_push_leaves_the_source_untouched) {
    strix::mpsc_queue<std::unique_ptr<int>> q(2);
    ASSERT_TRUE(q.try_push(std::make_unique<int>(1)));
    ASSERT_TRUE(q.try_push(std::make_unique<int>(2)));
    auto p = std::make_unique<int>(3);
    EXPECT_FALSE(q.try_push(std::move(p)));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(*p, 3);

    strix::mpsc_queue<std::string> s(2);
    const std::string a = "alpha";
    ASSERT_TRUE(s.try_push(a));
    EXPECT_EQ(a, "alpha");
    std::string out;
    ASSERT_TRUE(s.try_pop(out));
    EXPECT_EQ(out, "alpha");
}

TEST(mpsc_queue, throwing_constructor_leaves_no_claimed_cell_behind) {
    strix::mpsc_queue<picky> q(2);
    ASSERT_TRUE(q.try_emplace(1, false));
    EXPECT_THROW(q.try_emplace(2, true), std::runtime_error);
    EXPECT_EQ(q.size_approx(), 1u);
    // Had the throw claimed a cell, this push would fail (ring full) or the pop would stall.
    ASSERT_TRUE(q.try_emplace(3, false));
    picky out(0, false);
    ASSERT_TRUE(q.try_pop(out));
    EXPECT_EQ(out.value, 1);
    ASSERT_TRUE(q.try_pop(out));
    EXPECT_EQ(out.value, 3);
    EXPECT_FALSE(q.try_pop(out));
}

TEST(mpsc_queue, pop_batch_takes_at_most_max_in_order) {
    strix::mpsc_queue<int> q(8);
    std::vector<int> got;
    auto collect = [&](int&& v) { got.push_back(v); };
    EXPECT_EQ(q.pop_batch(collect, 4), 0u);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(q.try_push(i));
    EXPECT_EQ(q.pop_batch(collect, 0), 0u);
    EXPECT_EQ(q.pop_batch(collect, 3), 3u);
    EXPECT_EQ(got, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(q.size_approx(), 2u);
    EXPECT_EQ(q.pop_batch(collect, 10), 2u);
    EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3, 4}));
    EXPECT_EQ(q.pop_batch(collect, 10), 0u);
    // Every cell was handed back: a full ring's worth fits again, across the wrap point.
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(q.try_push(i));
    EXPECT_FALSE(q.try_push(8));
    EXPECT_EQ(q.pop_batch(collect, 100), 8u);
    EXPECT_EQ(got.size(), 13u);
    EXPECT_EQ(got.back(), 7);
}

TEST(mpsc_queue, pop_batch_leaves_the_item_it_threw_on_at_the_front) {
    strix::mpsc_queue<int> q(8);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(q.try_push(i));
    std::vector<int> got;
    EXPECT_THROW(q.pop_batch(
                     [&](int&& v) {
                         if (v == 2) throw std::runtime_error("handler failed");
                         got.push_back(v);
                     },
                     5),
                 std::runtime_error);
    EXPECT_EQ(got, (std::vector<int>{0, 1}));
    EXPECT_EQ(q.size_approx(), 3u);
    int out = -1;
    ASSERT_TRUE(q.try_pop(out));
    EXPECT_EQ(out, 2);
}

TEST(mpsc_queue, destroys_each_item_once_including_leftovers) {
    life_counts counts;
    {
        tracked out(-1, &counts);
        {
            strix::mpsc_queue<tracked> q(4);
            for (int i = 0; i < 2; ++i) ASSERT_TRUE(q.try_emplace(i, &counts));
            for (int i = 0; i < 2; ++i) ASSERT_TRUE(q.try_pop(out));
            EXPECT_EQ(counts.live(), 1);
            for (int i = 2; i < 5; ++i) ASSERT_TRUE(q.try_emplace(i, &counts));
            int batch_seen = 0;
            EXPECT_EQ(q.pop_batch([&](tracked&& t) { batch_seen = t.value; }, 1), 1u);
            EXPECT_EQ(batch_seen, 2);
            const tracked extra(5, &counts);
            ASSERT_TRUE(q.try_push(extra));
            // Leftovers are indices 3, 4, 5: cells 3, 0, 1, straddling the end of the ring.
            EXPECT_EQ(counts.live(), 1 + 3 + 1);
        }
        EXPECT_EQ(counts.live(), 1);
        EXPECT_EQ(out.value, 1);
    }
    EXPECT_EQ(counts.live(), 0);
    EXPECT_EQ(counts.constructed, 1 + 5 + 1 + 1);
}

// Runs `producers` threads each pushing `per_producer` values tagged (producer << 32 | seq)
// through a ring of `capacity`, while this thread consumes, alternating try_pop and pop_batch.
// Checks that nothing is lost or duplicated and that each producer's values arrive in order.
void run_tagged_producers(int producers, std::uint32_t per_producer, std::size_t capacity) {
    strix::mpsc_queue<std::uint64_t> q(capacity);
    stall_watch watch;
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
        threads.emplace_back([&q, &watch, p, per_producer] {
            const std::uint64_t tag = static_cast<std::uint64_t>(p) << 32;
            for (std::uint32_t seq = 0; seq < per_producer;) {
                if (q.try_push(tag | seq))
                    ++seq;
                else if (watch.abandon.load())
                    return;
                else
                    std::this_thread::yield();  // full: let the consumer run on a busy machine
            }
        });
    }
    const std::uint64_t total = static_cast<std::uint64_t>(producers) * per_producer;
    std::vector<std::uint64_t> next(static_cast<std::size_t>(producers), 0);
    std::uint64_t received = 0;
    std::uint64_t bad_tag = 0;
    std::uint64_t out_of_order = 0;
    auto check = [&](std::uint64_t&& v) {
        ++received;
        const std::uint64_t p = v >> 32;
        if (p >= next.size()) {
            ++bad_tag;
            return;
        }
        const std::uint64_t seq = v & 0xffff'ffffu;
        if (seq != next[p]) ++out_of_order;
        next[p] = seq + 1;  // resynchronise so one fault is counted once
    };
    std::size_t round = 0;
    while (received < total) {
        ++round;
        std::size_t got = 0;
        if (round % 2 == 0) {
            std::uint64_t v = 0;
            if (q.try_pop(v)) {
                check(std::move(v));
                got = 1;
            }
        } else {
            got = q.pop_batch(check, round % 50 + 1);
        }
        if (got == 0) {
            if (watch.stalled(received)) break;
            std::this_thread::yield();
        }
    }
    watch.abandon.store(true);
    for (auto& t : threads) t.join();
    EXPECT_EQ(received, total);
    EXPECT_EQ(bad_tag, 0u);
    EXPECT_EQ(out_of_order, 0u);
    for (std::size_t p = 0; p < next.size(); ++p) EXPECT_EQ(next[p], per_producer) << "producer " << p;
    std::uint64_t extra = 0;
    EXPECT_FALSE(q.try_pop(extra)) << "unexpected extra value " << extra;
}

TEST(mpsc_queue, four_producers_deliver_every_item_once_in_per_producer_order) {
    run_tagged_producers(4, static_cast<std::uint32_t>(1'000'000 / load_divisor), 1024);
}

TEST(mpsc_queue, four_producers_through_the_smallest_ring) {
    // Two cells: nearly every push meets a full ring and nearly every pop an empty one.
    run_tagged_producers(4, static_cast<std::uint32_t>(50'000 / load_divisor), 2);
}

TEST(mpsc_queue, move_only_items_cross_threads_intact) {
    constexpr int producers = 3;
    constexpr int per_producer = 100'000 / static_cast<int>(load_divisor);
    strix::mpsc_queue<std::unique_ptr<int>> q(64);
    stall_watch watch;
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
        threads.emplace_back([&q, &watch] {
            for (int i = 0; i < per_producer;) {
                if (q.try_emplace(std::make_unique<int>(i)))
                    ++i;
                else if (watch.abandon.load())
                    return;
                else
                    std::this_thread::yield();
            }
        });
    }
    std::int64_t sum = 0;
    int received = 0;
    int null_items = 0;
    while (received < producers * per_producer) {
        std::unique_ptr<int> v;
        if (!q.try_pop(v)) {
            if (watch.stalled(static_cast<std::uint64_t>(received))) break;
            std::this_thread::yield();
            continue;
        }
        ++received;
        if (v == nullptr)
            ++null_items;
        else
            sum += *v;
    }
    watch.abandon.store(true);
    for (auto& t : threads) t.join();
    EXPECT_EQ(received, producers * per_producer);
    EXPECT_EQ(null_items, 0);
    const std::int64_t n = per_producer;
    EXPECT_EQ(sum, producers * n * (n - 1) / 2);
    EXPECT_TRUE(q.empty_approx());
}

}  // namespace
