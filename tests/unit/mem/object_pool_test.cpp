#include <strix/mem/object_pool.hpp>

#include "unit/mem/fill_pattern.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct counters {
    int ctor = 0;
    int dtor = 0;
    std::vector<int> destroyed_ids;  // order of destruction
};

struct tracked {
    tracked(counters& c, int id, std::string name) : c_(c), id_(id), name_(std::move(name)) {
        if (id < 0) throw std::runtime_error("negative id");
        ++c_.ctor;
    }
    ~tracked() {
        ++c_.dtor;
        c_.destroyed_ids.push_back(id_);
    }
    tracked(const tracked&) = delete;
    tracked& operator=(const tracked&) = delete;

    counters& c_;
    int id_;
    std::string name_;
};

TEST(object_pool, create_forwards_arguments_and_destroy_runs_the_destructor) {
    counters c;
    strix::object_pool<tracked> pool(4);
    tracked* a = pool.create(c, 1, "alice");
    tracked* b = pool.create(c, 2, std::string(40, 'b'));  // heap-allocating string member
    tracked* d = pool.create(c, 3, "dave");
    EXPECT_EQ(c.ctor, 3);
    EXPECT_EQ(c.dtor, 0);
    EXPECT_EQ(a->id_, 1);
    EXPECT_EQ(a->name_, "alice");
    EXPECT_EQ(b->name_, std::string(40, 'b'));
    EXPECT_EQ(d->name_, "dave");
    EXPECT_EQ(pool.stats().in_use, 3u);

    pool.destroy(b);
    pool.destroy(a);
    pool.destroy(nullptr);  // ignored
    pool.destroy(d);
    EXPECT_EQ(c.ctor, 3);
    EXPECT_EQ(c.dtor, 3);
    EXPECT_EQ(c.destroyed_ids, (std::vector<int>{2, 1, 3}));
    const strix::alloc_stats& s = pool.stats();
    EXPECT_EQ(s.allocs, 3u);
    EXPECT_EQ(s.frees, 3u);
    EXPECT_EQ(s.in_use, 0u);
    EXPECT_EQ(s.peak, 3u);
    EXPECT_EQ(s.reused, 0u);
}

TEST(object_pool, create_after_destroy_reuses_the_slot) {
    counters c;
    strix::object_pool<tracked> pool;
    tracked* a = pool.create(c, 1, "a");
    pool.destroy(a);
    tracked* b = pool.create(c, 2, "b");
    EXPECT_EQ(b, a);
    EXPECT_EQ(b->id_, 2);
    EXPECT_EQ(b->name_, "b");
    EXPECT_EQ(pool.stats().reused, 1u);
    EXPECT_EQ(pool.pages(), 1u);
    pool.destroy(b);
    EXPECT_EQ(c.ctor, 2);
    EXPECT_EQ(c.dtor, 2);
}

TEST(object_pool, a_throwing_constructor_gives_the_slot_back) {
    counters c;
    strix::object_pool<tracked> pool;
    EXPECT_THROW((void)pool.create(c, -1, "bad"), std::runtime_error);
    EXPECT_EQ(c.ctor, 0);
    EXPECT_EQ(c.dtor, 0);
    EXPECT_EQ(pool.stats().allocs, 1u);
    EXPECT_EQ(pool.stats().frees, 1u);
    EXPECT_EQ(pool.stats().in_use, 0u);
    tracked* ok = pool.create(c, 5, "ok");
    EXPECT_EQ(pool.stats().reused, 1u);  // the slot of the failed attempt
    pool.destroy(ok);
    EXPECT_EQ(c.dtor, 1);
}

struct alignas(64) cache_line_obj {
    explicit cache_line_obj(std::uint64_t v) {
        std::fill(std::begin(bytes), std::end(bytes), static_cast<unsigned char>(v));
    }
    unsigned char bytes[100];
};

TEST(object_pool, honours_over_aligned_types) {
    strix::object_pool<cache_line_obj> pool(3);
    std::vector<cache_line_obj*> objs;
    for (std::uint64_t i = 0; i < 10; ++i) {
        objs.push_back(pool.create(i));
        EXPECT_TRUE(strix_test::aligned_to(objs.back(), 64)) << i;
    }
    EXPECT_EQ(pool.pages(), 4u);
    for (std::uint64_t i = 0; i < objs.size(); ++i) {
        for (unsigned char byte : objs[i]->bytes) ASSERT_EQ(byte, static_cast<unsigned char>(i));
        pool.destroy(objs[i]);
    }
    EXPECT_EQ(pool.stats().in_use, 0u);
}

TEST(object_pool, many_objects_are_built_and_torn_down_exactly_once) {
    counters c;
    {
        strix::object_pool<tracked> pool(16);
        std::vector<tracked*> live;
        for (int round = 0; round < 5; ++round) {
            for (int i = 0; i < 100; ++i) live.push_back(pool.create(c, round * 1000 + i, "x"));
            // Destroy every other one, oldest first, so the free list interleaves with live slots.
            std::vector<tracked*> keep;
            for (std::size_t i = 0; i < live.size(); ++i) {
                if (i % 2 == 0) {
                    pool.destroy(live[i]);
                } else {
                    keep.push_back(live[i]);
                }
            }
            live.swap(keep);
        }
        for (tracked* t : live) {
            EXPECT_EQ(t->name_, "x");
            pool.destroy(t);
        }
        EXPECT_EQ(pool.stats().in_use, 0u);
        EXPECT_EQ(pool.stats().allocs, 500u);
        EXPECT_EQ(pool.stats().frees, 500u);
    }
    EXPECT_EQ(c.ctor, 500);
    EXPECT_EQ(c.dtor, 500);
    // Every id was destroyed exactly once.
    std::vector<int> ids = c.destroyed_ids;
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end());
    EXPECT_EQ(ids.size(), 500u);
}

TEST(object_pool_death, destroying_the_pool_with_live_objects_aborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            counters c;
            strix::object_pool<tracked> pool;
            (void)pool.create(c, 1, "leaked");
        },
        "object_pool destroyed with 1 live objects");
}

}  // namespace
