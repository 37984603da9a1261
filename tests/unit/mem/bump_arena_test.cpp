#include <strix/mem/bump_arena.hpp>

#include "unit/mem/fill_pattern.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

using strix_test::aligned_to;
using strix_test::fill;
using strix_test::holds;

TEST(bump_arena, aligns_every_allocation_for_alignments_8_to_256) {
    strix::bump_arena arena(64 * 1024);
    const char* prev_end = nullptr;
    std::uint64_t id = 0;
    struct rec {
        void* p;
        std::size_t n;
        std::uint64_t id;
    };
    std::vector<rec> recs;
    for (std::size_t align : {8u, 16u, 32u, 64u, 128u, 256u}) {
        for (std::size_t n : {1u, 7u, 24u, 100u, 333u}) {
            void* p = arena.allocate(n, align);
            ASSERT_NE(p, nullptr);
            EXPECT_TRUE(aligned_to(p, align)) << "align " << align << " n " << n;
            // Monotonic: each allocation starts at or after the previous one's end.
            if (prev_end != nullptr) {
                EXPECT_GE(static_cast<const char*>(p), prev_end);
            }
            prev_end = static_cast<const char*>(p) + n;
            fill(p, n, id);
            recs.push_back({p, n, id++});
        }
    }
    for (const rec& r : recs) EXPECT_TRUE(holds(r.p, r.n, r.id)) << "allocation " << r.id;
    EXPECT_EQ(arena.stats().in_use, arena.used());
}

TEST(bump_arena, returns_null_exactly_when_capacity_runs_out) {
    strix::bump_arena arena(1024);
    EXPECT_EQ(arena.capacity(), 1024u);
    for (int i = 0; i < 16; ++i) ASSERT_NE(arena.allocate(64), nullptr) << i;
    EXPECT_EQ(arena.used(), 1024u);
    EXPECT_EQ(arena.allocate(64), nullptr);
    EXPECT_EQ(arena.allocate(1, 1), nullptr);
    EXPECT_NE(arena.allocate(0, 1), nullptr);  // an empty request still fits at the very end
    // A failed allocate changes nothing.
    EXPECT_EQ(arena.used(), 1024u);
    EXPECT_EQ(arena.stats().allocs, 17u);
    EXPECT_EQ(arena.stats().in_use, 1024u);
}

TEST(bump_arena, counts_alignment_padding_against_capacity) {
    strix::bump_arena arena(256);
    char* a = static_cast<char*>(arena.allocate(1, 1));
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(arena.used(), 1u);
    char* b = static_cast<char*>(arena.allocate(8, 64));  // 63 bytes of padding first
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b - a, 64);
    EXPECT_EQ(arena.used(), 72u);
    EXPECT_EQ(arena.allocate(177, 16), nullptr);  // would start at 80 and end at 257
    char* c = static_cast<char*>(arena.allocate(176, 16));  // ends exactly at 256
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c - a, 80);
    EXPECT_EQ(arena.used(), 256u);
    EXPECT_EQ(arena.stats().in_use, 256u);
    EXPECT_EQ(arena.stats().allocs, 3u);
}

TEST(bump_arena, reset_rewinds_and_counts_reuse_exactly) {
    strix::bump_arena arena(1024);
    void* first = arena.allocate(100);  // [0, 100)
    (void)arena.allocate(100);          // [112, 212)
    EXPECT_EQ(arena.stats().reused, 0u);
    EXPECT_EQ(arena.stats().in_use, 212u);
    arena.reset();
    EXPECT_EQ(arena.used(), 0u);
    EXPECT_EQ(arena.stats().in_use, 0u);
    EXPECT_EQ(arena.stats().frees, 2u);

    EXPECT_EQ(arena.allocate(50), first);  // [0, 50): same address, reused
    (void)arena.allocate(50);              // [64, 114): reused
    (void)arena.allocate(200);             // [128, 328): starts below 212, reused
    (void)arena.allocate(100);             // [336, 436): all new memory
    const strix::alloc_stats s = arena.stats();
    EXPECT_EQ(s.allocs, 6u);
    EXPECT_EQ(s.frees, 2u);
    EXPECT_EQ(s.reused, 3u);
    EXPECT_EQ(s.in_use, 436u);
    EXPECT_EQ(s.peak, 436u);
    EXPECT_DOUBLE_EQ(s.reuse_pct(), 50.0);

    arena.reset();
    (void)arena.allocate(16);
    EXPECT_EQ(arena.stats().frees, 6u);
    EXPECT_EQ(arena.stats().reused, 4u);
    EXPECT_EQ(arena.stats().in_use, 16u);
    EXPECT_EQ(arena.stats().peak, 436u);
}

TEST(bump_arena, per_request_cycles_keep_contents_intact) {
    strix::bump_arena arena(16 * 1024);
    std::mt19937 rng(7);
    std::uint64_t id = 0, allocs = 0;
    struct rec {
        void* p;
        std::size_t n;
        std::uint64_t id;
    };
    for (int request = 0; request < 200; ++request) {
        std::vector<rec> recs;
        for (;;) {
            const std::size_t n = 1 + rng() % 300;
            const std::size_t align = std::size_t{1} << (rng() % 9);  // 1 .. 256
            const std::size_t before = arena.used();
            void* p = arena.allocate(n, align);
            if (p == nullptr) {
                // Null only when the aligned request really does not fit.
                const std::size_t start = (before + align - 1) & ~(align - 1);  // buffer is 64-aligned
                ASSERT_TRUE(align > 64 || start + n > arena.capacity()) << "request " << request;
                EXPECT_EQ(arena.used(), before);
                break;
            }
            ASSERT_TRUE(aligned_to(p, align));
            fill(p, n, id);
            recs.push_back({p, n, id++});
            ++allocs;
        }
        for (const rec& r : recs) ASSERT_TRUE(holds(r.p, r.n, r.id)) << "request " << request << " id " << r.id;
        arena.reset();
    }
    EXPECT_EQ(arena.stats().allocs, allocs);
    EXPECT_EQ(arena.stats().frees, allocs);
    EXPECT_EQ(arena.stats().in_use, 0u);
}

TEST(bump_arena_death, a_non_power_of_two_alignment_aborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    strix::bump_arena arena(64);
    EXPECT_DEATH((void)arena.allocate(8, 24), "not a power of two");
}

}  // namespace
