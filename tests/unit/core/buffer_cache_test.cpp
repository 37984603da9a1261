// buffer_cache: blocks of large shared buffers are kept and reused, across threads too, within
// the configured limits; nothing is kept with both limits at 0; a thread's blocks go to the depot
// when it exits.
#include <strix/core/asan_poison.hpp>  // STRIX_ASAN
#include <strix/core/buffer_cache.hpp>
#include <strix/core/shared_buffer.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#if STRIX_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace {

namespace bc = strix::buffer_cache;
using strix::buffer_cache_limits;
using strix::shared_buffer;
using strix::shared_buffer_ptr;

// Every test starts from an empty cache and the default limits, and leaves them so.
class BufferCache : public ::testing::Test {
protected:
    void SetUp() override {
        bc::configure(buffer_cache_limits{});
        bc::trim();
        ASSERT_EQ(bc::held_by_this_thread(), 0u);
        ASSERT_EQ(bc::held_in_depot(), 0u);
    }
    void TearDown() override {
        bc::configure(buffer_cache_limits{});
        bc::trim();
    }
};

std::vector<shared_buffer_ptr> make(std::size_t count, std::size_t size) {
    std::vector<shared_buffer_ptr> v;
    for (std::size_t i = 0; i < count; ++i) {
        v.push_back(shared_buffer::create(size));
        std::memset(v.back()->data(), static_cast<int>(i & 0xff), size);  // every byte is ours
    }
    return v;
}

TEST_F(BufferCache, EverySizeGetsAWritableAlignedBlockOfItsOwn) {
    // Around every class boundary of the cached range, and outside it.
    std::vector<shared_buffer_ptr> live;
    for (std::size_t n = 1000; n <= 300 * 1024; n = n * 9 / 8 + 1) {
        for (std::size_t d : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16}, std::size_t{17}}) {
            auto b = shared_buffer::create(n + d);
            ASSERT_EQ(b->size(), n + d);
            ASSERT_EQ(reinterpret_cast<std::uintptr_t>(b->data()) % 16, 0u);
            std::memset(b->data(), 0x5a, b->size());
            live.push_back(std::move(b));
        }
    }
    // No two live buffers overlap.
    std::set<std::pair<std::uintptr_t, std::uintptr_t>> spans;
    for (auto& b : live) {
        const auto lo = reinterpret_cast<std::uintptr_t>(b->data());
        spans.emplace(lo, lo + b->size());
    }
    std::uintptr_t end = 0;
    for (auto& [lo, hi] : spans) {
        ASSERT_GE(lo, end);
        end = hi;
    }
    for (auto& b : live)
        for (std::size_t i = 0; i < b->size(); i += 511) ASSERT_EQ(b->data()[i], std::byte{0x5a});
}

TEST_F(BufferCache, AReleasedBlockIsReusedOnTheSameThread) {
    auto a = shared_buffer::create(8192);
    const void* where = a.get();
    a.reset();
    EXPECT_GT(bc::held_by_this_thread(), 8192u);
    auto b = shared_buffer::create(9000);  // same class (8208 and 9016 bytes round to 9216)
    EXPECT_EQ(static_cast<const void*>(b.get()), where);
    EXPECT_EQ(bc::held_by_this_thread(), 0u);
}

TEST_F(BufferCache, SmallAndHugeBuffersAreNotKept) {
    shared_buffer::create(100).reset();
    shared_buffer::create(4096 - 100).reset();
    shared_buffer::create(1 << 20).reset();
    EXPECT_EQ(bc::held_by_this_thread(), 0u);
    EXPECT_EQ(bc::held_in_depot(), 0u);
}

TEST_F(BufferCache, BlocksFreedOnOneThreadServeAnother) {
    // The inproc pattern: the application's thread allocates, a shard thread drops the batch.
    constexpr std::size_t count = 600, size = 8192;
    auto batch = make(count, size);
    std::set<const void*> first;
    for (auto& b : batch) first.insert(b.get());
    std::thread([&] { batch.clear(); }).join();  // the other thread keeps some, the depot the rest
    // That thread has exited: what it kept went to the depot.
    const std::size_t in_depot = bc::held_in_depot();
    EXPECT_GT(in_depot, 0u);
    EXPECT_LE(in_depot, buffer_cache_limits{}.shared_bytes);

    auto again = make(count, size);
    std::size_t reused = 0;
    for (auto& b : again) reused += first.count(b.get());
    EXPECT_EQ(reused, in_depot / 9216) << "every kept block is handed out again before malloc is asked";
    EXPECT_EQ(bc::held_in_depot(), 0u);
}

TEST_F(BufferCache, WhatIsKeptStaysWithinTheLimits) {
    const buffer_cache_limits small{256 * 1024, 1024 * 1024};
    bc::configure(small);
    for (std::size_t size : {std::size_t{5000}, std::size_t{8192}, std::size_t{65536}, std::size_t{200000}}) {
        auto batch = make(200, size);
        batch.clear();
        EXPECT_LE(bc::held_by_this_thread(), small.thread_bytes) << size;
        EXPECT_LE(bc::held_in_depot(), small.shared_bytes) << size;
    }
    EXPECT_GT(bc::held_in_depot(), 0u);
    std::thread([&] {
        auto batch = make(300, 9000);
        batch.clear();
        EXPECT_LE(bc::held_by_this_thread(), small.thread_bytes);
    }).join();
    EXPECT_LE(bc::held_in_depot(), small.shared_bytes);
}

TEST_F(BufferCache, NothingIsKeptWithBothLimitsAtZero) {
    bc::configure({0, 0});
    auto batch = make(100, 16000);
    batch.clear();
    std::thread([] { make(50, 30000).clear(); }).join();
    EXPECT_EQ(bc::held_by_this_thread(), 0u);
    EXPECT_EQ(bc::held_in_depot(), 0u);
}

TEST_F(BufferCache, ManyThreadsTradingBlocksKeepEveryByteTheirOwn) {
    // Producers create and fill buffers, hand them to a consumer thread through a locked queue;
    // each consumer checks every byte before dropping them. A block handed out twice at once
    // would show as a mismatch (and to ASan as nothing, since the cache owns the memory: the fill
    // check is what catches it).
    constexpr int pairs = 3, rounds = 200, per_round = 16;
    std::atomic<long> bad{0};
    std::vector<std::thread> threads;
    for (int p = 0; p < pairs; ++p) {
        threads.emplace_back([&, p] {
            std::vector<std::pair<shared_buffer_ptr, unsigned char>> mine;
            for (int r = 0; r < rounds; ++r) {
                std::vector<std::pair<shared_buffer_ptr, unsigned char>> batch;
                for (int k = 0; k < per_round; ++k) {
                    const std::size_t size = 4000 + static_cast<std::size_t>((p * 7919 + r * 104729 + k * 31) % 70000);
                    const auto fill = static_cast<unsigned char>(r * per_round + k + p);
                    auto b = shared_buffer::create(size);
                    std::memset(b->data(), fill, size);
                    batch.emplace_back(std::move(b), fill);
                }
                std::thread consumer([&bad, batch = std::move(batch)]() mutable {
                    for (auto& [b, fill] : batch)
                        for (std::size_t i = 0; i < b->size(); i += 97)
                            if (b->data()[i] != std::byte{fill}) ++bad;
                    batch.clear();
                });
                consumer.join();
            }
        });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_LE(bc::held_in_depot(), buffer_cache_limits{}.shared_bytes);
}

TEST_F(BufferCache, WhatNobodyDrewForAPeriodGoesBackToMalloc) {
    // This thread only frees (a consuming shard): its bins go to the depot at the first call,
    // and with no refill from the depot since, the depot goes to malloc.
    make(40, 8192).clear();
    const std::size_t kept = bc::held_by_this_thread() + bc::held_in_depot();
    ASSERT_GT(kept, 0u);
    EXPECT_EQ(bc::release_unused(), kept);
    EXPECT_EQ(bc::held_by_this_thread(), 0u);
    EXPECT_EQ(bc::held_in_depot(), 0u);
    EXPECT_EQ(bc::release_unused(), 0u);
}

TEST_F(BufferCache, ADepotInUseIsKeptAcrossPeriods) {
    // Another thread frees a batch per period and this one allocates it again (an inproc stream):
    // the depot is drawn from between the calls, so it stays.
    for (int period = 0; period < 3; ++period) {
        std::thread([] { make(200, 8192).clear(); }).join();  // its bins reach the depot at exit
        const std::size_t before = bc::held_in_depot();
        ASSERT_GT(before, 0u);
        auto again = make(200, 8192);  // more than this thread's bins hold: drawn from the depot
        EXPECT_LT(bc::held_in_depot(), before);
        again.clear();                // into this thread's bins
        bc::release_unused();         // this thread took blocks: its bins stay; the depot was drawn from
        EXPECT_GT(bc::held_in_depot(), 0u) << "period " << period;
        EXPECT_GT(bc::held_by_this_thread(), 0u) << "period " << period;
    }
    // A period with no traffic: everything goes.
    bc::release_unused();
    EXPECT_EQ(bc::held_by_this_thread(), 0u);
    EXPECT_EQ(bc::held_in_depot(), 0u);
}

#if STRIX_ASAN
TEST_F(BufferCache, AKeptBlockIsPoisonedUntilHandedOutAgain) {
    auto a = shared_buffer::create(10000);
    const auto* where = reinterpret_cast<const char*>(a->data());
    a.reset();
    EXPECT_TRUE(__asan_address_is_poisoned(where));
    EXPECT_TRUE(__asan_address_is_poisoned(where + 9000));
    auto b = shared_buffer::create(10000);
    ASSERT_EQ(reinterpret_cast<const char*>(b->data()), where);
    EXPECT_FALSE(__asan_address_is_poisoned(where));
    EXPECT_FALSE(__asan_address_is_poisoned(where + 9999));
}
#endif

}  // namespace
