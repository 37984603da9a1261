#include <strix/mem/slab_pool.hpp>

#include <strix/core/asan_poison.hpp>

#include "unit/mem/fill_pattern.hpp"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

namespace {

using strix_test::aligned_to;
using strix_test::fill;
using strix_test::holds;

TEST(slab_pool, rounds_object_size_up_to_the_alignment) {
    EXPECT_EQ(strix::slab_pool(1, 8).object_size(), 8u);
    EXPECT_EQ(strix::slab_pool(24, 16).object_size(), 32u);
    EXPECT_EQ(strix::slab_pool(32, 16).object_size(), 32u);
    EXPECT_EQ(strix::slab_pool(100, 64).object_size(), 128u);
    EXPECT_EQ(strix::slab_pool(300, 256).object_size(), 512u);
    // Below pointer alignment the slot still has to hold the free-list link.
    strix::slab_pool small(3, 4);
    EXPECT_EQ(small.alignment(), alignof(void*));
    EXPECT_EQ(small.object_size(), sizeof(void*));
    EXPECT_EQ(strix::slab_pool(0).object_size(), alignof(std::max_align_t));
}

TEST(slab_pool, rejects_bad_arguments) {
    EXPECT_THROW(strix::slab_pool(16, 3), std::invalid_argument);
    EXPECT_THROW(strix::slab_pool(16, 0), std::invalid_argument);
    EXPECT_THROW(strix::slab_pool(16, 16, 0), std::invalid_argument);
    EXPECT_THROW(strix::slab_pool(SIZE_MAX / 2, 16, 4), std::length_error);
}

TEST(slab_pool, every_slot_is_aligned_for_alignments_8_to_256) {
    for (std::size_t align : {8u, 16u, 32u, 64u, 128u, 256u}) {
        for (std::size_t size : {1u, 24u, 100u, 256u, 1000u}) {
            strix::slab_pool pool(size, align, 4);
            std::vector<void*> got;
            for (int i = 0; i < 10; ++i) {  // spans three pages
                void* p = pool.allocate();
                ASSERT_TRUE(aligned_to(p, align)) << "align " << align << " size " << size << " #" << i;
                fill(p, size, static_cast<std::uint64_t>(i));
                got.push_back(p);
            }
            EXPECT_EQ(pool.pages(), 3u);
            for (std::size_t i = 0; i < got.size(); ++i) {
                EXPECT_TRUE(holds(got[i], size, i)) << "align " << align << " size " << size << " #" << i;
                pool.deallocate(got[i]);
            }
        }
    }
}

TEST(slab_pool, grows_by_one_page_per_objects_per_page) {
    strix::slab_pool pool(48, 16, 4);
    EXPECT_EQ(pool.pages(), 0u);  // nothing taken before the first allocate
    std::vector<void*> live;
    const std::size_t expected_pages[] = {1, 1, 1, 1, 2, 2, 2, 2, 3};
    for (std::size_t want : expected_pages) {
        live.push_back(pool.allocate());
        EXPECT_EQ(pool.pages(), want) << "after " << live.size() << " allocations";
    }
    // Slots within one page are consecutive, object_size() apart.
    for (std::size_t i = 1; i < 4; ++i) EXPECT_EQ(static_cast<char*>(live[i]) - static_cast<char*>(live[i - 1]), 48);
    // Freeing everything keeps the pages, and reallocating as many needs no new one.
    for (void* p : live) pool.deallocate(p);
    EXPECT_EQ(pool.pages(), 3u);
    for (std::size_t i = 0; i < live.size(); ++i) (void)pool.allocate();
    EXPECT_EQ(pool.pages(), 3u);
    // Only the 13th live object needs a fourth page (three pages hold 12).
    for (int i = 0; i < 3; ++i) (void)pool.allocate();
    EXPECT_EQ(pool.pages(), 3u);
    (void)pool.allocate();
    EXPECT_EQ(pool.pages(), 4u);
}

TEST(slab_pool, returns_freed_slots_last_in_first_out) {
    strix::slab_pool pool(64);
    void* a = pool.allocate();
    void* b = pool.allocate();
    void* c = pool.allocate();
    pool.deallocate(b);
    EXPECT_EQ(pool.allocate(), b);
    pool.deallocate(a);
    pool.deallocate(c);
    EXPECT_EQ(pool.allocate(), c);
    EXPECT_EQ(pool.allocate(), a);
    void* d = pool.allocate();  // free list empty: a fresh slot
    EXPECT_NE(d, a);
    EXPECT_NE(d, b);
    EXPECT_NE(d, c);
    EXPECT_EQ(pool.stats().reused, 3u);
}

TEST(slab_pool, stats_follow_a_known_sequence_exactly) {
    strix::slab_pool pool(32, 16, 8);
    void* p[5];
    for (auto& x : p) x = pool.allocate();  // 5 fresh
    pool.deallocate(p[1]);
    pool.deallocate(p[3]);
    pool.deallocate(nullptr);  // ignored: no count
    p[1] = pool.allocate();    // reused (p[3]'s slot)
    const strix::alloc_stats s1 = pool.stats();
    EXPECT_EQ(s1.allocs, 6u);
    EXPECT_EQ(s1.frees, 2u);
    EXPECT_EQ(s1.in_use, 4u);
    EXPECT_EQ(s1.peak, 5u);
    EXPECT_EQ(s1.reused, 1u);
    EXPECT_DOUBLE_EQ(s1.reuse_pct(), 100.0 / 6.0);

    for (int i = 0; i < 3; ++i) (void)pool.allocate();  // one reused, two fresh: 7 live
    pool.deallocate(p[0]);
    const strix::alloc_stats& s2 = pool.stats();
    EXPECT_EQ(s2.allocs, 9u);
    EXPECT_EQ(s2.frees, 3u);
    EXPECT_EQ(s2.in_use, 6u);
    EXPECT_EQ(s2.peak, 7u);
    EXPECT_EQ(s2.reused, 2u);
    EXPECT_EQ(pool.pages(), 1u);
    EXPECT_EQ(s1.allocs, 6u);  // the earlier copy is a snapshot
}

// Random allocate/deallocate with a unique pattern in every live object: an overlap or a slot
// handed out twice breaks a pattern. The stats are checked against a model of the free list.
void churn_with_patterns(std::size_t object_size, std::size_t align, std::uint32_t seed) {
    constexpr std::size_t per_page = 16;
    strix::slab_pool pool(object_size, align, per_page);
    std::mt19937 rng(seed);
    struct live_obj {
        void* p;
        std::uint64_t id;
    };
    std::vector<live_obj> live;
    std::uint64_t next_id = 0, frees = 0, reused = 0, peak = 0;
    std::set<void*> seen;  // distinct slots ever handed out

    for (int op = 0; op < 20000; ++op) {
        // Bias towards growth for the first half, towards shrinking for the second.
        const unsigned grow_pct = op < 10000 ? 60 : 40;
        if (live.empty() || rng() % 100 < grow_pct) {
            if (frees > reused) ++reused;  // the model: a free slot exists, so it is reused
            void* p = pool.allocate();
            ASSERT_TRUE(aligned_to(p, align));
            fill(p, object_size, next_id);
            live.push_back({p, next_id++});
            seen.insert(p);
            peak = std::max<std::uint64_t>(peak, live.size());
        } else {
            const std::size_t k = rng() % live.size();
            ASSERT_TRUE(holds(live[k].p, object_size, live[k].id)) << "object " << live[k].id << " overwritten";
            pool.deallocate(live[k].p);
            live[k] = live.back();
            live.pop_back();
            ++frees;
        }
        if (op % 1000 == 0) {
            for (const auto& o : live) ASSERT_TRUE(holds(o.p, object_size, o.id)) << "object " << o.id;
        }
    }
    for (const auto& o : live) ASSERT_TRUE(holds(o.p, object_size, o.id)) << "object " << o.id;

    const strix::alloc_stats& s = pool.stats();
    EXPECT_EQ(s.allocs, next_id);
    EXPECT_EQ(s.frees, frees);
    EXPECT_EQ(s.in_use, live.size());
    EXPECT_EQ(s.peak, peak);
    EXPECT_EQ(s.reused, reused);
    // Fresh slots are carved only when the free list is empty, so the pool never holds more
    // pages than the peak needs, and no slot beyond those pages was ever handed out.
    const std::uint64_t fresh = s.allocs - s.reused;
    EXPECT_EQ(fresh, peak);
    EXPECT_EQ(pool.pages(), (peak + per_page - 1) / per_page);
    EXPECT_EQ(seen.size(), peak);
    for (const auto& o : live) pool.deallocate(o.p);
}

TEST(slab_pool, random_churn_keeps_every_live_object_intact) {
    churn_with_patterns(40, 8, 1);
    churn_with_patterns(40, 16, 2);
    churn_with_patterns(200, 64, 3);
    churn_with_patterns(8, 8, 4);
}

// Resident pages of this process (statm's second field).
long resident_pages() {
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = -1;
    statm >> size >> resident;
    return resident;
}

// The session group's receive rings: 64 KiB slots, 16 to a page, whose pages an idle session
// returns with madvise. Once every slot's pages are returned, the pool holds nothing resident:
// a malloc'd page would keep the page its header is on (4 KiB per page of the pool, 100 to 200
// bytes per held connection in chat.connection_scale).
TEST(slab_pool, large_pages_keep_nothing_resident_once_their_slots_are_returned) {
    if (STRIX_ASAN) GTEST_SKIP() << "AddressSanitizer's shadow of the poisoned pages is resident";
    const auto sys_page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    constexpr std::size_t slot = 64 * 1024, per_page = 16, pages = 64;
    strix::slab_pool pool(slot, sys_page, per_page);
    std::vector<void*> slots;
    slots.reserve(pages * per_page);
    const long before = resident_pages();
    ASSERT_GT(before, 0);
    for (std::size_t i = 0; i < pages * per_page; ++i) {
        void* p = pool.allocate();
        ASSERT_TRUE(aligned_to(p, sys_page));
        static_cast<volatile unsigned char*>(p)[0] = 1;
        slots.push_back(p);
    }
    ASSERT_EQ(pool.pages(), pages);
    const long touched = resident_pages();
    EXPECT_GE(touched - before, static_cast<long>(pages * per_page));
    for (void* p : slots) ASSERT_EQ(::madvise(p, slot, MADV_DONTNEED), 0);
    const long after = resident_pages();
    EXPECT_LT(after - before, static_cast<long>(pages / 4))
        << "resident pages: " << before << " before, " << touched << " touched, " << after << " returned";
    for (void* p : slots) pool.deallocate(p);
}

}  // namespace
