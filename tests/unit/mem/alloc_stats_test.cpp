#include <strix/mem/alloc_stats.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <type_traits>

namespace {

TEST(alloc_stats, starts_at_zero_and_reuse_pct_is_zero_without_allocations) {
    strix::alloc_stats s;
    EXPECT_EQ(s.in_use, 0u);
    EXPECT_EQ(s.peak, 0u);
    EXPECT_EQ(s.allocs, 0u);
    EXPECT_EQ(s.frees, 0u);
    EXPECT_EQ(s.reused, 0u);
    EXPECT_EQ(s.reuse_pct(), 0.0);
}

TEST(alloc_stats, reuse_pct_is_reused_over_allocs_in_percent) {
    strix::alloc_stats s;
    s.allocs = 8;
    s.reused = 2;
    EXPECT_DOUBLE_EQ(s.reuse_pct(), 25.0);
    s.reused = 8;
    EXPECT_DOUBLE_EQ(s.reuse_pct(), 100.0);
    s.allocs = 3;
    s.reused = 1;
    EXPECT_DOUBLE_EQ(s.reuse_pct(), 100.0 / 3.0);
}

TEST(alloc_stats, snapshot_by_memcpy_keeps_every_field) {
    static_assert(std::is_trivially_copyable_v<strix::alloc_stats>);
    strix::alloc_stats live{5, 9, 40, 35, 30};
    unsigned char wire[sizeof(strix::alloc_stats)];
    std::memcpy(wire, &live, sizeof live);
    live.in_use = 0;  // the allocator moves on; the snapshot must not
    strix::alloc_stats snap;
    std::memcpy(&snap, wire, sizeof snap);
    EXPECT_EQ(snap.in_use, 5u);
    EXPECT_EQ(snap.peak, 9u);
    EXPECT_EQ(snap.allocs, 40u);
    EXPECT_EQ(snap.frees, 35u);
    EXPECT_EQ(snap.reused, 30u);
    EXPECT_DOUBLE_EQ(snap.reuse_pct(), 75.0);
}

}  // namespace
