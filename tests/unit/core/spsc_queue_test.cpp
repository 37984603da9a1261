#include <strix/core/spsc_queue.hpp>

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

struct point {
    point(int px, int py) : x(px), y(py) {}
    int x;
    int y;
};

TEST(spsc_queue, rounds_capacity_up_to_a_power_of_two) {
    EXPECT_EQ(strix::spsc_queue<int>(1).capacity(), 1u);
    EXPECT_EQ(strix::spsc_queue<int>(2).capacity(), 2u);
    EXPECT_EQ(strix::spsc_queue<int>(3).capacity(), 4u);
    EXPECT_EQ(strix::spsc_queue<int>(1000).capacity(), 1024u);
    EXPECT_EQ(strix::spsc_queue<int>(1024).capacity(), 1024u);
    EXPECT_EQ(strix::spsc_queue<int>(1025).capacity(), 2048u);
    EXPECT_THROW(strix::spsc_queue<int>(0), std::invalid_argument);
    EXPECT_THROW(strix::spsc_queue<int>(~std::size_t{0}), std::invalid_argument);
}

TEST(spsc_queue, keeps_fifo_order_and_rejects_at_full_and_empty) {
    strix::spsc_queue<int> q(4);
    int out = -1;
    EXPECT_TRUE(q.empty_approx());
    EXPECT_FALSE(q.try_pop(out));
    EXPECT_EQ(out, -1);  // untouched when empty
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(q.try_push(i));
    EXPECT_EQ(q.size_approx(), 4u);
    EXPECT_FALSE(q.try_push(99));
    EXPECT_FALSE(q.try_emplace(99));
    ASSERT_TRUE(q.try_pop(out));
    EXPECT_EQ(out, 0);
    EXPECT_TRUE(q.try_push(4));  // one cell freed, one push fits
    EXPECT_FALSE(q.try_push(5));
    for (int want = 1; want <= 4; ++want) {
        ASSERT_TRUE(q.try_pop(out));
        EXPECT_EQ(out, want);
    }
    EXPECT_FALSE(q.try_pop(out));
    EXPECT_EQ(out, 4);
    EXPECT_TRUE(q.empty_approx());
    EXPECT_EQ(q.size_approx(), 0u);
}

TEST(spsc_queue, capacity_one_alternates_full_and_empty) {
    strix::spsc_queue<int> q(1);
    int out = 0;
    for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(q.try_push(i));
        ASSERT_FALSE(q.try_push(i + 1000));
        ASSERT_TRUE(q.try_pop(out));
        ASSERT_EQ(out, i);
        ASSERT_FALSE(q.try_pop(out));
    }
}

TEST(spsc_queue, wraps_around_many_times_in_order) {
    strix::spsc_queue<std::uint64_t> q(8);
    std::uint64_t next_in = 0;
    std::uint64_t next_out = 0;
    for (int round = 0; round < 20000; ++round) {
        const int k = round % 8 + 1;  // every fill level from 1 to full
        for (int i = 0; i < k; ++i) ASSERT_TRUE(q.try_push(next_in++));
        ASSERT_EQ(q.size_approx(), static_cast<std::size_t>(k));
        for (int i = 0; i < k; ++i) {
            std::uint64_t v = 0;
            ASSERT_TRUE(q.try_pop(v));
            ASSERT_EQ(v, next_out++);
        }
    }
    EXPECT_EQ(next_out, 90000u);  // 2500 rounds of 1+..+8; the ring wrapped ~11,000 times
    EXPECT_TRUE(q.empty_approx());
}

TEST(spsc_queue, push_by_const_ref_copies_and_failed_move_push_keeps_the_source) {
    strix::spsc_queue<std::string> q(2);
    const std::string a = "alpha";
    ASSERT_TRUE(q.try_push(a));
    EXPECT_EQ(a, "alpha");
    ASSERT_TRUE(q.try_emplace(3u, 'z'));

    auto p = std::make_unique<int>(7);
    strix::spsc_queue<std::unique_ptr<int>> full(1);
    ASSERT_TRUE(full.try_push(std::make_unique<int>(1)));
    EXPECT_FALSE(full.try_push(std::move(p)));
    ASSERT_NE(p, nullptr);  // rejected, so not moved from
    EXPECT_EQ(*p, 7);

    std::string out;
    ASSERT_TRUE(q.try_pop(out));
    EXPECT_EQ(out, "alpha");
    ASSERT_TRUE(q.try_pop(out));
    EXPECT_EQ(out, "zzz");
}

TEST(spsc_queue, carries_move_only_items) {
    strix::spsc_queue<std::unique_ptr<int>> q(4);
    for (int i = 0; i < 10; ++i) {
        ASSERT_TRUE(q.try_push(std::make_unique<int>(i)));
        std::unique_ptr<int> out;
        ASSERT_TRUE(q.try_pop(out));
        ASSERT_NE(out, nullptr);
        EXPECT_EQ(*out, i);
    }
}

TEST(spsc_queue, carries_non_default_constructible_items) {
    strix::spsc_queue<point> q(4);
    ASSERT_TRUE(q.try_emplace(1, 2));
    ASSERT_TRUE(q.try_push(point{3, 4}));
    point out{0, 0};
    ASSERT_TRUE(q.try_pop(out));
    EXPECT_EQ(out.x, 1);
    EXPECT_EQ(out.y, 2);
    std::vector<int> seen;
    EXPECT_EQ(q.pop_batch([&](point&& p) { seen = {p.x, p.y}; }, 8), 1u);
    EXPECT_EQ(seen, (std::vector<int>{3, 4}));
}

TEST(spsc_queue, batch_push_is_partial_when_nearly_full) {
    strix::spsc_queue<std::unique_ptr<int>> q(8);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(q.try_push(std::make_unique<int>(i)));
    std::vector<std::unique_ptr<int>> src;
    for (int i = 5; i < 11; ++i) src.push_back(std::make_unique<int>(i));

    EXPECT_EQ(q.try_push_batch(src.begin(), src.size()), 3u);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(src[i], nullptr) << i;  // taken
    for (std::size_t i = 3; i < 6; ++i) ASSERT_NE(src[i], nullptr) << i;  // left alone
    EXPECT_EQ(q.size_approx(), 8u);
    EXPECT_EQ(q.try_push_batch(src.begin() + 3, 3), 0u);
    EXPECT_NE(src[3], nullptr);
    EXPECT_EQ(q.try_push_batch(src.begin() + 3, 0), 0u);

    for (int want = 0; want < 8; ++want) {
        std::unique_ptr<int> out;
        ASSERT_TRUE(q.try_pop(out));
        EXPECT_EQ(*out, want);
    }
    // Now empty: the rest goes in whole, across the wrap point.
    EXPECT_EQ(q.try_push_batch(src.begin() + 3, 3), 3u);
    std::vector<int> got;
    EXPECT_EQ(q.pop_batch([&](std::unique_ptr<int>&& p) { got.push_back(*p); }, 100), 3u);
    EXPECT_EQ(got, (std::vector<int>{8, 9, 10}));
}

// Its move constructor throws once the shared budget of moves runs out.
struct fragile {
    explicit fragile(int v, int* budget) : value(v), moves_left(budget) {}
    fragile(fragile&& o) : value(o.value), moves_left(o.moves_left) {
        if ((*moves_left)-- == 0) throw std::runtime_error("move failed");
    }
    fragile& operator=(fragile&&) = default;
    int value;
    int* moves_left;
};

TEST(spsc_queue, batch_push_publishes_the_items_moved_before_a_throw) {
    int budget = 100;
    strix::spsc_queue<fragile> q(8);
    std::vector<fragile> src;
    src.reserve(5);
    for (int i = 0; i < 5; ++i) src.emplace_back(i, &budget);
    budget = 2;  // the third move throws
    EXPECT_THROW(q.try_push_batch(src.begin(), src.size()), std::runtime_error);
    EXPECT_EQ(q.size_approx(), 2u);
    budget = 100;
    std::vector<int> got;
    EXPECT_EQ(q.pop_batch([&](fragile&& f) { got.push_back(f.value); }, 8), 2u);
    EXPECT_EQ(got, (std::vector<int>{0, 1}));
}

TEST(spsc_queue, pop_batch_takes_at_most_max_in_order) {
    strix::spsc_queue<int> q(8);
    std::vector<int> got;
    auto collect = [&](int&& v) { got.push_back(v); };
    EXPECT_EQ(q.pop_batch(collect, 4), 0u);
    EXPECT_TRUE(got.empty());
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(q.try_push(i));
    EXPECT_EQ(q.pop_batch(collect, 0), 0u);
    EXPECT_EQ(q.pop_batch(collect, 3), 3u);
    EXPECT_EQ(got, (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(q.size_approx(), 2u);
    EXPECT_EQ(q.pop_batch(collect, 10), 2u);
    EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3, 4}));
    EXPECT_EQ(q.pop_batch(collect, 10), 0u);
    // The cells came back: a full ring's worth fits again.
    for (int i = 0; i < 8; ++i) ASSERT_TRUE(q.try_push(i));
    EXPECT_FALSE(q.try_push(8));
}

TEST(spsc_queue, pop_batch_leaves_the_item_it_threw_on_at_the_front) {
    strix::spsc_queue<int> q(8);
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

TEST(spsc_queue, destroys_each_item_once_including_leftovers) {
    life_counts counts;
    {
        tracked out(-1, &counts);
        {
            strix::spsc_queue<tracked> q(4);
            for (int i = 0; i < 2; ++i) ASSERT_TRUE(q.try_emplace(i, &counts));
            for (int i = 0; i < 2; ++i) ASSERT_TRUE(q.try_pop(out));
            EXPECT_EQ(counts.live(), 1);  // only `out`: popped items were destroyed in the ring
            for (int i = 2; i < 5; ++i) ASSERT_TRUE(q.try_emplace(i, &counts));
            int batch_seen = 0;
            EXPECT_EQ(q.pop_batch([&](tracked&& t) { batch_seen = t.value; }, 1), 1u);
            EXPECT_EQ(batch_seen, 2);
            EXPECT_EQ(counts.live(), 1 + 2);
            const tracked extra(5, &counts);
            ASSERT_TRUE(q.try_push(extra));  // a copy
            // Leftovers are indices 3, 4, 5: cells 3, 0, 1, straddling the end of the ring.
            EXPECT_EQ(counts.live(), 1 + 3 + 1);  // out, three queued, extra
        }
        // The queue's destructor destroyed exactly its three leftovers; `extra` left its scope.
        EXPECT_EQ(counts.live(), 1);
        EXPECT_EQ(out.value, 1);
    }
    EXPECT_EQ(counts.live(), 0);
    EXPECT_EQ(counts.constructed, 1 + 5 + 1 + 1);  // out, 5 emplaced, extra, its copy
}

TEST(spsc_queue, one_producer_one_consumer_deliver_every_value_once_in_order) {
    const std::uint64_t total = 5'000'000 / load_divisor;
    strix::spsc_queue<std::uint64_t> q(1024);
    stall_watch watch;
    std::thread producer([&] {
        for (std::uint64_t i = 0; i < total;) {
            if (q.try_push(i)) {
                ++i;
            } else {
                if (watch.abandon.load()) return;
                std::this_thread::yield();  // full: let the consumer run on a busy machine
            }
        }
    });
    std::uint64_t expected = 0;
    std::uint64_t mismatches = 0;
    while (expected < total) {
        std::uint64_t v = 0;
        if (!q.try_pop(v)) {
            if (watch.stalled(expected)) break;
            std::this_thread::yield();
            continue;
        }
        if (v != expected) ++mismatches;
        expected = v + 1;  // resynchronise so one fault is reported once, not for every later item
    }
    watch.abandon.store(true);
    producer.join();
    EXPECT_EQ(mismatches, 0u);
    EXPECT_EQ(expected, total);
    std::uint64_t extra = 0;
    EXPECT_FALSE(q.try_pop(extra)) << "unexpected extra value " << extra;
}

TEST(spsc_queue, batch_push_and_batch_pop_mixed_deliver_every_value_once_in_order) {
    const std::uint64_t total = 5'000'000 / load_divisor;
    strix::spsc_queue<std::uint64_t> q(1024);
    stall_watch watch;
    std::thread producer([&] {
        std::vector<std::uint64_t> batch(97);
        std::uint64_t next = 0;
        std::size_t round = 0;
        while (next < total) {
            ++round;
            if (round % 5 == 0) {  // every fifth round a single push, to interleave both paths
                if (q.try_push(next))
                    ++next;
                else if (watch.abandon.load())
                    return;
                else
                    std::this_thread::yield();
                continue;
            }
            const std::uint64_t want = round % 97 + 1;
            const std::size_t n = static_cast<std::size_t>(want < total - next ? want : total - next);
            for (std::size_t i = 0; i < n; ++i) batch[i] = next + i;
            std::size_t sent = 0;
            while (sent < n) {
                const std::size_t k = q.try_push_batch(batch.begin() + static_cast<std::ptrdiff_t>(sent), n - sent);
                if (k == 0) {
                    if (watch.abandon.load()) return;
                    std::this_thread::yield();
                }
                sent += k;
            }
            next += n;
        }
    });
    std::uint64_t expected = 0;
    std::uint64_t mismatches = 0;
    std::size_t round = 0;
    auto check = [&](std::uint64_t&& v) {
        if (v != expected) ++mismatches;
        expected = v + 1;
    };
    while (expected < total) {
        ++round;
        std::size_t got = 0;
        if (round % 3 == 0) {
            std::uint64_t v = 0;
            if (q.try_pop(v)) {
                check(std::move(v));
                got = 1;
            }
        } else {
            got = q.pop_batch(check, round % 61 + 1);
        }
        if (got == 0) {
            if (watch.stalled(expected)) break;
            std::this_thread::yield();
        }
    }
    watch.abandon.store(true);
    producer.join();
    EXPECT_EQ(mismatches, 0u);
    EXPECT_EQ(expected, total);
    EXPECT_TRUE(q.empty_approx());
}

TEST(spsc_queue, move_only_items_cross_threads_intact) {
    const int total = 200'000 / static_cast<int>(load_divisor);
    strix::spsc_queue<std::unique_ptr<int>> q(64);
    stall_watch watch;
    std::thread producer([&] {
        for (int i = 0; i < total;) {
            if (q.try_emplace(std::make_unique<int>(i)))
                ++i;
            else if (watch.abandon.load())
                return;
            else
                std::this_thread::yield();
        }
    });
    int expected = 0;
    int mismatches = 0;
    while (expected < total) {
        std::unique_ptr<int> p;
        if (!q.try_pop(p)) {
            if (watch.stalled(static_cast<std::uint64_t>(expected))) break;
            std::this_thread::yield();
            continue;
        }
        if (p == nullptr || *p != expected) ++mismatches;
        ++expected;
    }
    watch.abandon.store(true);
    producer.join();
    EXPECT_EQ(mismatches, 0);
    EXPECT_EQ(expected, total);
    EXPECT_TRUE(q.empty_approx());
}

}  // namespace
