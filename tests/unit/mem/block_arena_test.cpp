#include <strix/mem/block_arena.hpp>

#include "unit/mem/fill_pattern.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

using strix_test::aligned_to;
using strix_test::fill;
using strix_test::holds;

struct rec {
    void* p;
    std::size_t n;
    std::uint64_t id;
};

TEST(block_arena, aligns_every_allocation_for_alignments_8_to_256) {
    strix::block_arena arena(4096);
    std::vector<rec> recs;
    std::uint64_t id = 0;
    for (int pass = 0; pass < 2; ++pass) {  // the second pass runs over kept blocks
        for (std::size_t align : {8u, 16u, 32u, 64u, 128u, 256u}) {
            for (std::size_t n : {1u, 7u, 24u, 100u, 333u, 4096u, 5000u}) {
                void* p = arena.allocate(n, align);
                ASSERT_NE(p, nullptr);
                EXPECT_TRUE(aligned_to(p, align)) << "align " << align << " n " << n << " pass " << pass;
                fill(p, n, id);
                recs.push_back({p, n, id++});
            }
        }
        for (const rec& r : recs) ASSERT_TRUE(holds(r.p, r.n, r.id)) << "allocation " << r.id;
        recs.clear();
        arena.reset();
    }
}

TEST(block_arena, grows_by_blocks_and_gives_large_requests_their_own) {
    strix::block_arena arena(1024);
    EXPECT_EQ(arena.block_size(), 1024u);
    EXPECT_EQ(arena.blocks(), 0u);  // nothing taken before the first allocate

    // Expected block counts after 16 x 64 B, the 17th, a 2000 B request and a 16 B one.
    auto run = [&arena](std::size_t b16, std::size_t b17, std::size_t b_big, std::size_t b_tail) {
        std::vector<void*> ptrs;
        for (int i = 0; i < 16; ++i) ptrs.push_back(arena.allocate(64));
        EXPECT_EQ(arena.blocks(), b16);
        for (int i = 1; i < 16; ++i) EXPECT_EQ(static_cast<char*>(ptrs[i]) - static_cast<char*>(ptrs[i - 1]), 64);
        ptrs.push_back(arena.allocate(64));
        EXPECT_EQ(arena.blocks(), b17);
        ptrs.push_back(arena.allocate(2000));
        EXPECT_EQ(arena.blocks(), b_big);
        ptrs.push_back(arena.allocate(16));
        EXPECT_EQ(arena.blocks(), b_tail);
        return ptrs;
    };
    // 16 x 64 B fill one 1 KiB block, the 17th needs a second one, 2000 B (larger than a block)
    // gets a block of its own, and 16 B fit in that block's tail.
    const std::vector<void*> first = run(1, 2, 3, 3);

    // reset() keeps the blocks: the same request pattern gets the same addresses, in order,
    // and takes nothing new from the system.
    arena.reset();
    EXPECT_EQ(arena.blocks(), 3u);
    const std::vector<void*> second = run(3, 3, 3, 3);
    EXPECT_EQ(second, first);

    // A large request that no kept block can hold is placed right after the current block, so the
    // kept blocks after it are still used in this round.
    arena.reset();
    void* big = arena.allocate(3000);
    EXPECT_EQ(arena.blocks(), 4u);
    EXPECT_NE(big, first[0]);
    void* small = arena.allocate(64);  // the new block's tail is too short: next kept block
    EXPECT_EQ(small, first[16]);
    EXPECT_EQ(arena.blocks(), 4u);

    arena.release();
    EXPECT_EQ(arena.blocks(), 0u);
    EXPECT_NE(arena.allocate(64), nullptr);
    EXPECT_EQ(arena.blocks(), 1u);
}

TEST(block_arena, stats_follow_a_known_sequence_exactly) {
    strix::block_arena arena(1024);
    (void)arena.allocate(1000);  // block 1 [0, 1000)
    (void)arena.allocate(100);   // 1008 + 100 > 1024: block 2 [0, 100); block 1's tail is skipped
    EXPECT_EQ(arena.blocks(), 2u);
    EXPECT_EQ(arena.stats().in_use, 1100u);
    EXPECT_EQ(arena.stats().reused, 0u);
    arena.reset();
    EXPECT_EQ(arena.stats().in_use, 0u);
    EXPECT_EQ(arena.stats().frees, 2u);

    (void)arena.allocate(100);   // block 1 [0, 100): below its old high mark 1000, reused
    (void)arena.allocate(1000);  // 112 + 1000 > 1024: block 2 [0, 1000), below its mark 100, reused
    (void)arena.allocate(16);    // block 2 [1008, 1024): beyond its mark, new memory
    strix::alloc_stats s = arena.stats();
    EXPECT_EQ(s.allocs, 5u);
    EXPECT_EQ(s.frees, 2u);
    EXPECT_EQ(s.reused, 2u);
    EXPECT_EQ(s.in_use, 100u + 1000u + 24u);  // 8 bytes of padding before the last one
    EXPECT_EQ(s.peak, 1124u);
    EXPECT_DOUBLE_EQ(s.reuse_pct(), 40.0);
    EXPECT_EQ(arena.blocks(), 2u);

    arena.release();
    s = arena.stats();
    EXPECT_EQ(s.in_use, 0u);
    EXPECT_EQ(s.frees, 5u);
    EXPECT_EQ(s.peak, 1124u);
    (void)arena.allocate(8);  // a fresh block: nothing to reuse
    s = arena.stats();
    EXPECT_EQ(s.allocs, 6u);
    EXPECT_EQ(s.reused, 2u);
    EXPECT_EQ(s.in_use, 8u);
}

TEST(block_arena, random_requests_across_resets_keep_contents_intact) {
    strix::block_arena arena(2048);
    std::mt19937 rng(11);
    std::uint64_t id = 0;
    for (int round = 0; round < 120; ++round) {
        std::vector<rec> recs;
        const int count = 1 + static_cast<int>(rng() % 200);
        for (int i = 0; i < count; ++i) {
            // Mostly small, sometimes larger than a block.
            const std::size_t n = rng() % 10 == 0 ? 2048 + rng() % 4000 : 1 + rng() % 256;
            const std::size_t align = std::size_t{1} << (rng() % 9);  // 1 .. 256
            void* p = arena.allocate(n, align);
            ASSERT_TRUE(aligned_to(p, align));
            fill(p, n, id);
            recs.push_back({p, n, id++});
        }
        for (const rec& r : recs) ASSERT_TRUE(holds(r.p, r.n, r.id)) << "round " << round << " id " << r.id;
        if (round % 30 == 29) {
            arena.release();
            EXPECT_EQ(arena.blocks(), 0u);
        } else {
            arena.reset();
        }
    }
    EXPECT_EQ(arena.stats().allocs, id);
    EXPECT_EQ(arena.stats().frees, id);
    EXPECT_EQ(arena.stats().in_use, 0u);
    EXPECT_GT(arena.stats().reused, 0u);
    EXPECT_LT(arena.stats().reused, id);
}

TEST(block_arena_death, a_non_power_of_two_alignment_aborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    strix::block_arena arena;
    EXPECT_DEATH((void)arena.allocate(8, 12), "not a power of two");
}

}  // namespace
