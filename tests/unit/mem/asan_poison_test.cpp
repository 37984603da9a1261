// Under AddressSanitizer the allocators poison memory they hold but have not handed out, so a
// use after deallocate() / reset() is reported. Without ASan these tests are skipped.
#include <strix/core/asan_poison.hpp>  // STRIX_ASAN
#include <strix/mem/block_arena.hpp>
#include <strix/mem/bump_arena.hpp>
#include <strix/mem/slab_pool.hpp>

#include <gtest/gtest.h>

namespace {

#if STRIX_ASAN
constexpr bool asan = true;
#else
constexpr bool asan = false;
#endif

// Reads through a pointer the optimizer cannot reason about.
int touch(const void* p, std::size_t offset) { return static_cast<const volatile char*>(p)[offset]; }

TEST(asan_poison_death, slab_slot_used_after_deallocate_is_reported) {
    if (!asan) GTEST_SKIP() << "needs -fsanitize=address";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    strix::slab_pool pool(64);
    void* p = pool.allocate();
    EXPECT_EQ(touch(p, 10), touch(p, 10));  // live: fine
    pool.deallocate(p);
    EXPECT_DEATH((void)touch(p, 10), "use-after-poison");
}

TEST(asan_poison_death, slab_overrun_into_an_unused_slot_is_reported) {
    if (!asan) GTEST_SKIP() << "needs -fsanitize=address";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    strix::slab_pool pool(64);
    void* p = pool.allocate();
    EXPECT_DEATH((void)touch(p, 64), "use-after-poison");
    pool.deallocate(p);
}

TEST(asan_poison_death, bump_memory_used_after_reset_is_reported) {
    if (!asan) GTEST_SKIP() << "needs -fsanitize=address";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    strix::bump_arena arena(1024);
    void* p = arena.allocate(64);
    arena.reset();
    EXPECT_DEATH((void)touch(p, 0), "use-after-poison");
}

TEST(asan_poison_death, block_memory_used_after_reset_is_reported) {
    if (!asan) GTEST_SKIP() << "needs -fsanitize=address";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    strix::block_arena arena(1024);
    void* p = arena.allocate(64);
    (void)arena.allocate(2000);  // a dedicated block too
    arena.reset();
    EXPECT_DEATH((void)touch(p, 0), "use-after-poison");
    void* again = arena.allocate(64);  // handed out again: addressable
    EXPECT_EQ(again, p);
    EXPECT_EQ(touch(again, 0), touch(again, 0));
}

}  // namespace
