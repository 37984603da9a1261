#include <strix/core/shared_buffer.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using strix::shared_buffer;
using strix::shared_buffer_ptr;

TEST(SharedBuffer, CreateGivesSizeDataAndOneReference) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{4096}, std::size_t{1} << 20}) {
        shared_buffer_ptr b = shared_buffer::create(n);
        ASSERT_TRUE(b);
        EXPECT_EQ(b->size(), n);
        EXPECT_EQ(b->use_count(), 1u);
        // The payload follows the header in the same block and is 16-byte aligned.
        const auto header = reinterpret_cast<std::uintptr_t>(b.get());
        const auto payload = reinterpret_cast<std::uintptr_t>(b->data());
        EXPECT_GE(payload, header + sizeof(shared_buffer));
        EXPECT_LE(payload, header + sizeof(shared_buffer) + 15);
        EXPECT_EQ(payload % 16, 0u);
        // Every byte is writable (ASan checks the bounds of the single allocation).
        for (std::size_t i = 0; i < n; ++i) b->data()[i] = static_cast<std::byte>(i * 7);
        const shared_buffer& cb = *b;
        for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(cb.data()[i], static_cast<std::byte>(i * 7));
    }
}

TEST(SharedBuffer, CopiesShareTheBytes) {
    auto a = shared_buffer::create(5);
    std::memcpy(a->data(), "hello", 5);
    shared_buffer_ptr b = a;
    EXPECT_EQ(a.get(), b.get());
    EXPECT_EQ(a->use_count(), 2u);
    EXPECT_EQ(std::memcmp(b->data(), "hello", 5), 0);
    a.reset();
    EXPECT_EQ(b->use_count(), 1u);
    EXPECT_EQ(std::memcmp(b->data(), "hello", 5), 0);
}

TEST(SharedBuffer, ConcurrentCopiesFromThreads) {
    // One broadcast buffer, many threads copying and dropping references while reading the bytes,
    // as sessions on several shards do. The count must come back to exactly 1 (a lost update
    // would leave it off), and the ASan build checks the block is freed exactly once.
    constexpr std::size_t n = 256;
    auto buf = shared_buffer::create(n);
    for (std::size_t i = 0; i < n; ++i) buf->data()[i] = static_cast<std::byte>(i);

    constexpr int threads = 4;
    constexpr int rounds = 20000;
    std::atomic<int> go{0};
    std::atomic<long> checksum_errors{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, b = buf] {  // each thread starts with its own reference
            go.fetch_add(1);
            while (go.load() < threads) {
            }
            std::vector<shared_buffer_ptr> held;
            for (int r = 0; r < rounds; ++r) {
                held.push_back(b);
                if (held.size() == 8) {
                    const auto i = static_cast<std::size_t>(r);
                    const auto& h = held[i % 8];
                    if (h->data()[i % n] != static_cast<std::byte>(i % n)) checksum_errors.fetch_add(1);
                    held.clear();
                }
            }
        });
    }
    for (auto& th : pool) th.join();
    EXPECT_EQ(checksum_errors.load(), 0);
    EXPECT_EQ(buf->use_count(), 1u);
}

TEST(SharedBuffer, LastReleaseOnAnotherThreadFreesIt) {
    auto buf = shared_buffer::create(64);
    std::memset(buf->data(), 0xab, 64);
    std::thread t([b = std::move(buf)]() mutable {
        EXPECT_EQ(b->use_count(), 1u);
        EXPECT_EQ(b->data()[63], std::byte{0xab});
        b.reset();  // frees here; ASan would flag a mismatched or double free
    });
    t.join();
    EXPECT_FALSE(buf);  // NOLINT(bugprone-use-after-move): moved into the thread
}

// The hook of a buffer made with one runs once, on the thread that drops the last reference,
// with the words it was given; sizes from empty through buffer_cache's range to beyond it.
std::atomic<int> hook_runs{0};
std::atomic<std::thread::id> hook_thread;
void count_hook(const strix::release_hook& h) noexcept {
    hook_runs.fetch_add(static_cast<int>(reinterpret_cast<std::uintptr_t>(h.words[0])));
    hook_thread.store(std::this_thread::get_id());
}

TEST(SharedBuffer, ReleaseHookRunsOnceAtTheLastReleaseOnThatThread) {
    for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{5000}, std::size_t{300000}}) {
        hook_runs = 0;
        strix::release_hook h;
        h.fn = count_hook;
        h.words[0] = reinterpret_cast<void*>(std::uintptr_t{1});
        auto buf = shared_buffer::create(n, h);
        EXPECT_TRUE(buf->has_release_hook());
        EXPECT_FALSE(shared_buffer::create(n)->has_release_hook());
        EXPECT_EQ(buf->size(), n);
        if (n) std::memset(buf->data(), 0x5a, n);  // the whole payload is the caller's
        shared_buffer_ptr copy = buf;
        buf.reset();
        EXPECT_EQ(hook_runs.load(), 0) << n;
        std::thread t([c = std::move(copy)]() mutable { c.reset(); });
        const auto releaser = t.get_id();
        t.join();
        EXPECT_EQ(hook_runs.load(), 1) << n;
        EXPECT_EQ(hook_thread.load(), releaser) << n;
    }
}

}  // namespace
