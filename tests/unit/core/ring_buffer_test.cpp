#include <strix/core/ring_buffer.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <random>
#include <vector>

namespace {

using strix::ring_buffer;

// Byte k of the test stream; period 251 (prime) so it never lines up with a power-of-two capacity.
std::byte pattern(std::uint64_t k) { return static_cast<std::byte>(k % 251); }

std::vector<std::byte> pattern_bytes(std::uint64_t from, std::size_t n) {
    std::vector<std::byte> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = pattern(from + i);
    return v;
}

std::span<const std::byte> as_bytes(const char* s) { return std::as_bytes(std::span(s, std::strlen(s))); }

TEST(RingBuffer, DefaultHasNoStorage) {
    ring_buffer rb;
    EXPECT_FALSE(rb.has_storage());
    EXPECT_EQ(rb.capacity(), 0u);
    EXPECT_EQ(rb.size(), 0u);
    EXPECT_EQ(rb.free_space(), 0u);
    EXPECT_TRUE(rb.empty());
    EXPECT_TRUE(rb.full());
    EXPECT_TRUE(rb.write_span().empty());
    iovec iov[2];
    EXPECT_EQ(rb.write_iov(iov), 0);
    EXPECT_EQ(rb.read_iov(iov), 0);
    EXPECT_EQ(rb.write(as_bytes("abc")), 0u);
}

TEST(RingBuffer, CapacityRoundsUpToPowerOfTwo) {
    EXPECT_EQ(ring_buffer(1).capacity(), 1u);
    EXPECT_EQ(ring_buffer(1000).capacity(), 1024u);
    EXPECT_EQ(ring_buffer(4096).capacity(), 4096u);
    EXPECT_EQ(ring_buffer(4097).capacity(), 8192u);
    ring_buffer rb(100);
    EXPECT_TRUE(rb.has_storage());
    EXPECT_EQ(rb.free_space(), 128u);
}

TEST(RingBuffer, FullAndEmptyEdges) {
    ring_buffer rb(16);
    const auto data = pattern_bytes(0, 20);
    EXPECT_EQ(rb.write(std::span(data).first(15)), 15u);
    EXPECT_FALSE(rb.full());
    EXPECT_EQ(rb.free_space(), 1u);
    // Only what fits is taken.
    EXPECT_EQ(rb.write(std::span(data).subspan(15)), 1u);
    EXPECT_TRUE(rb.full());
    EXPECT_EQ(rb.size(), 16u);
    EXPECT_TRUE(rb.write_span().empty());
    iovec iov[2];
    EXPECT_EQ(rb.write_iov(iov), 0);
    EXPECT_EQ(rb.write(std::span(data).subspan(16)), 0u);

    std::vector<std::byte> out(32);
    EXPECT_EQ(rb.read(out), 16u);
    EXPECT_TRUE(std::equal(out.begin(), out.begin() + 16, data.begin()));
    EXPECT_TRUE(rb.empty());
    EXPECT_EQ(rb.read(out), 0u);
    EXPECT_EQ(rb.peek(out), 0u);
    EXPECT_TRUE(rb.read_span().empty());
}

TEST(RingBuffer, WrapAroundThousandsOfTimesPreservesEveryByte) {
    // The consumer keeps 5 bytes unread, so the buffer never drains and positions keep advancing
    // through the end of storage instead of rewinding.
    ring_buffer rb(64);
    std::uint64_t written = 0;
    std::uint64_t read = 0;
    std::vector<std::byte> out(64);
    const std::size_t sizes[] = {7, 13, 29, 31, 50};
    for (int round = 0; round < 20000; ++round) {
        const std::size_t n = std::min(sizes[round % 5], rb.free_space());
        const auto in = pattern_bytes(written, n);
        ASSERT_EQ(rb.write(in), n);
        written += n;
        const std::size_t take = rb.size() > 5 ? rb.size() - 5 : 0;
        ASSERT_EQ(rb.read(std::span(out).first(take)), take);
        for (std::size_t i = 0; i < take; ++i) ASSERT_EQ(out[i], pattern(read + i)) << "byte " << read + i;
        read += take;
        ASSERT_EQ(rb.size(), written - read);
    }
    EXPECT_GT(written, 64u * 5000u);  // wrapped thousands of times
}

// Puts `n` readable bytes (pattern from `from`) starting at storage offset `at`.
void place(ring_buffer& rb, std::size_t at, std::uint64_t from, std::size_t n) {
    rb.clear();
    // Skip `at` bytes: commit them unwritten (never read) and consume them; the buffer is not
    // empty in between, so the positions do not rewind.
    const auto in = pattern_bytes(from, n);
    const std::size_t first = std::min(n, rb.capacity() - at);
    rb.commit(at);
    ASSERT_EQ(rb.write(std::span(in).first(first)), first);
    rb.consume(at);
    ASSERT_EQ(rb.write(std::span(in).subspan(first)), n - first);
    ASSERT_EQ(rb.size(), n);
}

TEST(RingBuffer, WriteIovAndReadIovCoverTheWrappedRegionsInOrder) {
    ring_buffer rb(16);
    const std::byte* base = rb.write_span().data();
    iovec iov[2];
    // Empty at offset 0: one iovec over the whole storage.
    ASSERT_EQ(rb.write_iov(iov), 1);
    EXPECT_EQ(iov[0].iov_base, base);
    EXPECT_EQ(iov[0].iov_len, 16u);

    // Readable [10, 14): free space is [14, 16) then [0, 10).
    place(rb, 10, 0, 4);
    ASSERT_EQ(rb.write_iov(iov), 2);
    EXPECT_EQ(iov[0].iov_base, base + 14);
    EXPECT_EQ(iov[0].iov_len, 2u);
    EXPECT_EQ(iov[1].iov_base, base);
    EXPECT_EQ(iov[1].iov_len, 10u);
    const auto ws = rb.write_span();
    EXPECT_EQ(ws.data(), base + 14);
    EXPECT_EQ(ws.size(), 2u);

    // Scatter the next 12 bytes through the two iovecs as readv would, then commit.
    const auto in = pattern_bytes(4, 12);
    std::memcpy(iov[0].iov_base, in.data(), 2);
    std::memcpy(iov[1].iov_base, in.data() + 2, 10);
    rb.commit(12);
    EXPECT_TRUE(rb.full());

    iovec riov[2];
    ASSERT_EQ(rb.read_iov(riov), 2);
    EXPECT_EQ(riov[0].iov_base, base + 10);
    EXPECT_EQ(riov[0].iov_len, 6u);   // [10, 16)
    EXPECT_EQ(riov[1].iov_base, base);
    EXPECT_EQ(riov[1].iov_len, 10u);  // [0, 10)
    std::vector<std::byte> joined;
    for (const auto& v : riov) {
        auto* p = static_cast<const std::byte*>(v.iov_base);
        joined.insert(joined.end(), p, p + v.iov_len);
    }
    EXPECT_EQ(joined, pattern_bytes(0, 16));
    // read_span covers only the first piece.
    EXPECT_EQ(rb.read_span().data(), base + 10);
    EXPECT_EQ(rb.read_span().size(), 6u);

    // Consuming the first piece leaves one contiguous read region; free space is contiguous too.
    rb.consume(6);
    ASSERT_EQ(rb.read_iov(riov), 1);
    EXPECT_EQ(riov[0].iov_base, base);
    EXPECT_EQ(riov[0].iov_len, 10u);
    ASSERT_EQ(rb.write_iov(iov), 1);
    EXPECT_EQ(iov[0].iov_base, base + 10);
    EXPECT_EQ(iov[0].iov_len, 6u);
}

TEST(RingBuffer, ReadIovSingleWhenContiguous) {
    ring_buffer rb(32);
    const auto in = pattern_bytes(0, 10);
    rb.write(in);
    iovec iov[2];
    ASSERT_EQ(rb.read_iov(iov), 1);
    EXPECT_EQ(iov[0].iov_len, 10u);
    EXPECT_EQ(std::memcmp(iov[0].iov_base, in.data(), 10), 0);
}

TEST(RingBuffer, ConsumeToEmptyRewindsToStart) {
    ring_buffer rb(32);
    const std::byte* base = rb.write_span().data();
    rb.write(pattern_bytes(0, 20));
    rb.consume(15);
    EXPECT_EQ(rb.read_span().data(), base + 15);
    EXPECT_EQ(rb.write_span().data(), base + 20);
    rb.consume(5);
    EXPECT_TRUE(rb.empty());
    // Both positions back at offset 0: the whole storage is one contiguous writable span.
    EXPECT_EQ(rb.write_span().data(), base);
    EXPECT_EQ(rb.write_span().size(), 32u);
    rb.write(pattern_bytes(100, 30));
    EXPECT_EQ(rb.read_span().data(), base);
    EXPECT_EQ(rb.read_span().size(), 30u);

    // read() that drains also rewinds; clear() too.
    std::vector<std::byte> out(30);
    EXPECT_EQ(rb.read(out), 30u);
    EXPECT_EQ(out, pattern_bytes(100, 30));
    EXPECT_EQ(rb.write_span().data(), base);
    rb.write(pattern_bytes(0, 7));
    rb.consume(3);
    rb.clear();
    EXPECT_TRUE(rb.empty());
    EXPECT_EQ(rb.write_span().data(), base);
    EXPECT_EQ(rb.write_span().size(), 32u);
}

TEST(RingBuffer, LinearizeContiguousDoesNotMoveData) {
    ring_buffer rb(64);
    rb.write(pattern_bytes(0, 40));
    rb.consume(10);
    const std::byte* before = rb.read_span().data();
    auto s = rb.linearize(30);
    EXPECT_EQ(s.data(), before);
    EXPECT_EQ(s.size(), 30u);
    EXPECT_TRUE(std::equal(s.begin(), s.end(), pattern_bytes(10, 30).begin()));
    // Still where it was afterwards, and nothing was consumed.
    EXPECT_EQ(rb.read_span().data(), before);
    EXPECT_EQ(rb.size(), 30u);
    // A prefix that ends exactly at the storage end is contiguous too.
    rb.write(pattern_bytes(40, 24));  // fills [40, 64)
    auto t = rb.linearize(54);
    EXPECT_EQ(t.data(), before);
}

TEST(RingBuffer, LinearizeStraddlingReturnsIdenticalBytes) {
    // Small region (two-copy path) and nearly-full region (in-place rotate path), and prefixes.
    struct shape {
        std::size_t at, n, want;
    };
    const shape shapes[] = {{60, 10, 10}, {60, 10, 5}, {50, 30, 20}, {10, 60, 60},
                            {20, 64, 64}, {1, 64, 64}, {63, 64, 2},  {33, 40, 40}};
    for (const auto& sh : shapes) {
        ring_buffer rb(64);
        const std::byte* base = rb.write_span().data();
        place(rb, sh.at, 1000, sh.n);
        ASSERT_LT(rb.read_span().size(), sh.want) << "shape must straddle";
        auto s = rb.linearize(sh.want);
        ASSERT_EQ(s.size(), sh.want);
        EXPECT_EQ(s.data(), base) << "rotated to offset 0";
        EXPECT_TRUE(std::equal(s.begin(), s.end(), pattern_bytes(1000, sh.want).begin()))
            << "at " << sh.at << " n " << sh.n;
        // The whole readable region survived, in order, and is now contiguous.
        EXPECT_EQ(rb.size(), sh.n);
        EXPECT_EQ(rb.read_span().size(), sh.n);
        std::vector<std::byte> all(sh.n);
        EXPECT_EQ(rb.peek(all), sh.n);
        EXPECT_EQ(all, pattern_bytes(1000, sh.n));
        // Writing continues right after the data.
        if (sh.n < 64) {
            EXPECT_EQ(rb.write_span().data(), base + sh.n);
            EXPECT_EQ(rb.write(pattern_bytes(1000 + sh.n, 64 - sh.n)), 64 - sh.n);
            std::vector<std::byte> full(64);
            EXPECT_EQ(rb.read(full), 64u);
            EXPECT_EQ(full, pattern_bytes(1000, 64));
        }
    }
}

TEST(RingBuffer, BorrowedStorageAttachDetach) {
    alignas(64) std::byte storage[256];
    ring_buffer rb;
    rb.attach(storage, 256);
    EXPECT_TRUE(rb.has_storage());
    EXPECT_EQ(rb.capacity(), 256u);
    EXPECT_EQ(rb.write_span().data(), storage);
    rb.write(as_bytes("hello"));
    EXPECT_EQ(std::memcmp(storage, "hello", 5), 0);  // bytes land in the borrowed storage
    std::vector<std::byte> out(5);
    rb.read(out);
    EXPECT_EQ(rb.detach(), storage);
    EXPECT_FALSE(rb.has_storage());
    EXPECT_EQ(rb.capacity(), 0u);
    EXPECT_EQ(rb.write(as_bytes("x")), 0u);

    // It can borrow again, and an owned buffer's detach returns nullptr.
    rb.attach(storage, 128);
    EXPECT_EQ(rb.capacity(), 128u);
    EXPECT_EQ(rb.detach(), storage);
    ring_buffer owned(64);
    EXPECT_EQ(owned.detach(), nullptr);
    EXPECT_FALSE(owned.has_storage());
    owned.attach(storage, 64);
    EXPECT_EQ(owned.detach(), storage);
}

TEST(RingBufferDeathTest, ContractViolationsAbort) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    alignas(64) std::byte storage[64];
    EXPECT_DEATH(
        {
            ring_buffer rb(16);
            rb.attach(storage, 64);
        },
        "attach");
    EXPECT_DEATH(
        {
            ring_buffer rb;
            rb.attach(storage, 48);
        },
        "power-of-two");
    EXPECT_DEATH(
        {
            ring_buffer rb(16);
            rb.commit(1);
            (void)rb.detach();
        },
        "detach");
    EXPECT_DEATH(
        {
            ring_buffer rb(16);
            rb.commit(17);
        },
        "commit");
    EXPECT_DEATH(
        {
            ring_buffer rb(16);
            rb.commit(4);
            rb.consume(5);
        },
        "consume");
    EXPECT_DEATH(
        {
            ring_buffer rb(16);
            rb.commit(4);
            (void)rb.linearize(5);
        },
        "linearize");
}

TEST(RingBuffer, MoveTransfersContents) {
    ring_buffer a(32);
    a.write(pattern_bytes(0, 10));
    ring_buffer b(std::move(a));
    EXPECT_FALSE(a.has_storage());  // NOLINT(bugprone-use-after-move): documented state
    EXPECT_EQ(b.size(), 10u);
    ring_buffer c;
    c = std::move(b);
    std::vector<std::byte> out(10);
    EXPECT_EQ(c.read(out), 10u);
    EXPECT_EQ(out, pattern_bytes(0, 10));
}

TEST(RingBuffer, RandomOpsMatchDequeModel) {
    std::mt19937_64 rng(0x5eed'b0ffULL);
    ring_buffer rb(256);
    std::deque<std::byte> model;
    std::uint64_t next = 0;
    std::vector<std::byte> tmp(512);
    for (int op = 0; op < 100000; ++op) {
        const std::size_t n = rng() % 300;
        switch (rng() % 6) {
            case 0: {  // write()
                const auto in = pattern_bytes(next, n);
                const std::size_t put = rb.write(in);
                ASSERT_EQ(put, std::min(n, 256 - model.size()));
                model.insert(model.end(), in.begin(), in.begin() + static_cast<std::ptrdiff_t>(put));
                next += put;
                break;
            }
            case 1: {  // scatter through write_iov, commit a part (as a short readv would)
                iovec iov[2];
                const int k = rb.write_iov(iov);
                std::size_t room = 0;
                for (int i = 0; i < k; ++i) room += iov[i].iov_len;
                ASSERT_EQ(room, rb.free_space());
                const std::size_t put = std::min(n, room);
                const auto in = pattern_bytes(next, put);
                std::size_t done = 0;
                for (int i = 0; i < k && done < put; ++i) {
                    const std::size_t c = std::min(put - done, iov[i].iov_len);
                    std::memcpy(iov[i].iov_base, in.data() + done, c);
                    done += c;
                }
                rb.commit(put);
                model.insert(model.end(), in.begin(), in.end());
                next += put;
                break;
            }
            case 2: {  // read()
                const std::size_t got = rb.read(std::span(tmp).first(n));
                ASSERT_EQ(got, std::min(n, model.size()));
                for (std::size_t i = 0; i < got; ++i) ASSERT_EQ(tmp[i], model[i]);
                model.erase(model.begin(), model.begin() + static_cast<std::ptrdiff_t>(got));
                break;
            }
            case 3: {  // read_span() + consume
                auto s = rb.read_span();
                const std::size_t take = std::min(n, s.size());
                for (std::size_t i = 0; i < take; ++i) ASSERT_EQ(s[i], model[i]);
                rb.consume(take);
                model.erase(model.begin(), model.begin() + static_cast<std::ptrdiff_t>(take));
                break;
            }
            case 4: {  // linearize a prefix, consume it
                const std::size_t want = std::min(n, model.size());
                auto s = rb.linearize(want);
                ASSERT_EQ(s.size(), want);
                for (std::size_t i = 0; i < want; ++i) ASSERT_EQ(s[i], model[i]);
                rb.consume(want / 2);
                model.erase(model.begin(), model.begin() + static_cast<std::ptrdiff_t>(want / 2));
                break;
            }
            case 5: {  // peek + read_iov agree with the model
                const std::size_t got = rb.peek(std::span(tmp).first(n));
                ASSERT_EQ(got, std::min(n, model.size()));
                for (std::size_t i = 0; i < got; ++i) ASSERT_EQ(tmp[i], model[i]);
                iovec iov[2];
                const int k = rb.read_iov(iov);
                std::size_t idx = 0;
                for (int i = 0; i < k; ++i) {
                    auto* p = static_cast<const std::byte*>(iov[i].iov_base);
                    for (std::size_t j = 0; j < iov[i].iov_len; ++j) ASSERT_EQ(p[j], model[idx++]);
                }
                ASSERT_EQ(idx, model.size());
                break;
            }
        }
        ASSERT_EQ(rb.size(), model.size());
        ASSERT_EQ(rb.free_space(), 256 - model.size());
        ASSERT_EQ(rb.empty(), model.empty());
        ASSERT_EQ(rb.full(), model.size() == 256);
    }
}

}  // namespace
