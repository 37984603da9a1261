#include <strix/core/buffer_chain.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

using strix::buffer_chain;
using strix::shared_buffer;
using strix::shared_buffer_ptr;

std::span<const std::byte> bytes_of(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

shared_buffer_ptr make_shared_text(const std::string& s) {
    auto b = shared_buffer::create(s.size());
    std::memcpy(b->data(), s.data(), s.size());
    return b;
}

// Appends instead of `"literal" + std::string&&`, which trips a GCC 12 -Wrestrict false positive.
std::string cat(std::string_view a, std::string_view b, std::string_view c = {}) {
    std::string s;
    s.reserve(a.size() + b.size() + c.size());
    return s.append(a).append(b).append(c);
}

std::string as_string(const shared_buffer_ptr& b) {
    return std::string(reinterpret_cast<const char*>(b->data()), b->size());
}

// Everything fill_iov exposes right now, joined (does not consume).
std::string queued(const buffer_chain& c, int max_iov = 1024) {
    std::vector<iovec> iov(static_cast<std::size_t>(max_iov));
    const int k = c.fill_iov(iov.data(), max_iov);
    std::string out;
    for (int i = 0; i < k; ++i) {
        const auto& v = iov[static_cast<std::size_t>(i)];
        out.append(static_cast<const char*>(v.iov_base), v.iov_len);
    }
    return out;
}

// Drains the chain the way the session's writer does: fill_iov, "write" up to `budget` bytes
// (a short write), consume what was written. Returns the byte stream a peer would receive.
std::string drain(buffer_chain& c, std::size_t budget, int max_iov = 8) {
    std::string out;
    iovec iov[64];
    while (!c.empty()) {
        const int k = c.fill_iov(iov, max_iov);
        EXPECT_GT(k, 0);
        std::size_t written = 0;
        for (int i = 0; i < k && written < budget; ++i) {
            const std::size_t n = std::min(budget - written, iov[i].iov_len);
            out.append(static_cast<const char*>(iov[i].iov_base), n);
            written += n;
        }
        const std::size_t before = c.size();
        c.consume(written);
        EXPECT_EQ(c.size(), before - written);
    }
    return out;
}

TEST(BufferChain, StartsEmpty) {
    buffer_chain c;
    EXPECT_TRUE(c.empty());
    EXPECT_EQ(c.size(), 0u);
    EXPECT_EQ(c.segments(), 0u);
    iovec iov[4];
    EXPECT_EQ(c.fill_iov(iov, 4), 0);
    c.append(std::span<const std::byte>{});
    EXPECT_EQ(c.segments(), 0u);
    c.consume(0);
    EXPECT_TRUE(c.empty());
}

TEST(BufferChain, SmallAppendsCoalesceIntoOneSegment) {
    buffer_chain c;
    std::string model;
    for (unsigned i = 0; i < 1000; ++i) {
        char msg[9];
        std::snprintf(msg, sizeof msg, "m%06u;", i % 1000000);
        const std::string s(msg, 8);
        c.append(bytes_of(s));
        model += s;
    }
    // A chain that holds no chunk starts with a 1 KiB one (an idle connection's pong costs no
    // more); once that is full the rest coalesce in one chunk of chunk_size (16 KiB).
    EXPECT_EQ(c.segments(), 2u);
    EXPECT_EQ(c.size(), 8000u);
    iovec iov[4];
    ASSERT_EQ(c.fill_iov(iov, 4), 2);
    EXPECT_EQ(iov[0].iov_len, 1024u);
    EXPECT_EQ(iov[1].iov_len, 8000u - 1024u);
    EXPECT_EQ(queued(c), model);
}

TEST(BufferChain, AChainWithNoChunkStartsSmallAndATrimmedOneStartsSmallAgain) {
    buffer_chain c;
    c.append(bytes_of(std::string(20, 'p')));  // a pong
    iovec iov[4];
    ASSERT_EQ(c.fill_iov(iov, 4), 1);
    // Written out: the small chunk is reused for the next small sends, no new allocation.
    const auto* first = static_cast<const std::byte*>(iov[0].iov_base);
    c.consume(20);
    c.append(bytes_of(std::string(30, 'q')));
    ASSERT_EQ(c.fill_iov(iov, 4), 1);
    EXPECT_EQ(static_cast<const std::byte*>(iov[0].iov_base), first);
    c.consume(30);
    c.trim();
    EXPECT_FALSE(c.has_chunks());
    // A large first append still gets a chunk of its own size.
    c.append(bytes_of(std::string(5000, 'r')));
    ASSERT_EQ(c.fill_iov(iov, 4), 1);
    EXPECT_EQ(iov[0].iov_len, 5000u);
    EXPECT_EQ(queued(c), std::string(5000, 'r'));
}

TEST(BufferChain, FullChunkContinuesInANewChunk) {
    buffer_chain c(64);
    std::string model;
    for (int i = 0; i < 20; ++i) {  // 20 x 10 bytes into 64-byte chunks: 64 + 64 + 64 + 8
        const std::string s = "0123456789";
        c.append(bytes_of(s));
        model += s;
    }
    EXPECT_EQ(c.segments(), 4u);
    EXPECT_EQ(c.size(), 200u);
    iovec iov[8];
    ASSERT_EQ(c.fill_iov(iov, 8), 4);
    EXPECT_EQ(iov[0].iov_len, 64u);
    EXPECT_EQ(iov[1].iov_len, 64u);
    EXPECT_EQ(iov[2].iov_len, 64u);
    EXPECT_EQ(iov[3].iov_len, 8u);
    EXPECT_EQ(queued(c), model);
}

TEST(BufferChain, LargeAppendGetsALargerChunk) {
    buffer_chain c(64);
    c.append(bytes_of("abc"));
    std::string big(1000, 'x');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
    c.append(bytes_of(big));
    // 61 bytes finish the first chunk, the remaining 939 go to one chunk of 939 bytes.
    EXPECT_EQ(c.segments(), 2u);
    EXPECT_EQ(c.size(), 1003u);
    EXPECT_EQ(queued(c), cat("abc", big));
}

TEST(BufferChain, MixedCopiedAndSharedSegmentsKeepOrder) {
    buffer_chain c;
    auto x = make_shared_text("<broadcast-X>");
    auto y = make_shared_text("<broadcast-Y-with-offset>");
    c.append(bytes_of("hello "));
    c.append(x);
    c.append(bytes_of("world "));
    c.append(bytes_of("again "));
    c.append(y, 18, 6);  // "offset"
    c.append(x);
    c.append(bytes_of("end"));
    const std::string model = "hello <broadcast-X>world again offset<broadcast-X>end";
    EXPECT_EQ(c.size(), model.size());
    // hello | X | world again | offset | X | end
    EXPECT_EQ(c.segments(), 6u);
    EXPECT_EQ(queued(c), model);
    EXPECT_EQ(x.get()->use_count(), 3u);
    EXPECT_EQ(y.get()->use_count(), 2u);
    // Copied segments after a shared one live in the chain's chunk, not in the shared buffer.
    EXPECT_EQ(as_string(x), "<broadcast-X>");
    EXPECT_EQ(as_string(y), "<broadcast-Y-with-offset>");
    EXPECT_EQ(drain(c, 5), model);
    EXPECT_EQ(x->use_count(), 1u);
    EXPECT_EQ(y->use_count(), 1u);
}

TEST(BufferChain, AdjacentWindowsOfOneSharedBufferMerge) {
    buffer_chain c;
    auto x = make_shared_text("0123456789");
    c.append(x, 0, 4);
    c.append(x, 4, 6);
    EXPECT_EQ(c.segments(), 1u);
    c.append(x, 0, 2);  // not adjacent: a new segment
    EXPECT_EQ(c.segments(), 2u);
    EXPECT_EQ(queued(c), "012345678901");
    c.append(x, 3, 0);  // empty window: nothing queued
    EXPECT_EQ(c.segments(), 2u);
}

TEST(BufferChain, AppendAfterSharedNeverMutatesTheSharedBuffer) {
    // The shared buffer sits right after the chain's own chunk in the queue; bytes appended later
    // must go to a chunk even though the shared buffer is the tail segment.
    buffer_chain c(32);
    const std::string original = "IMMUTABLE-SHARED-PAYLOAD";
    auto x = make_shared_text(original);
    c.append(bytes_of("a"));
    c.append(x, 0, 9);  // "IMMUTABLE" -- unused bytes follow it inside x
    std::string model = cat("a", original.substr(0, 9));
    for (int i = 0; i < 50; ++i) {
        const std::string s = cat("zz", std::to_string(i));
        c.append(bytes_of(s));
        model += s;
        ASSERT_EQ(as_string(x), original);
    }
    EXPECT_EQ(queued(c), model);
    EXPECT_EQ(drain(c, 7), model);
    EXPECT_EQ(as_string(x), original);
    EXPECT_EQ(x->use_count(), 1u);
}

TEST(BufferChain, PartialConsumeAtEveryByteBoundaryReproducesTheStream) {
    // Build a mixed queue; then for every split point s, write the first s bytes, then the rest,
    // and compare with the model.
    const auto build = [](buffer_chain& c, const shared_buffer_ptr& x, std::string& model) {
        c.append(bytes_of("alpha-"));
        model += "alpha-";
        c.append(x);
        model += as_string(x);
        for (int i = 0; i < 5; ++i) {
            const std::string s = cat("beta", std::to_string(i));
            c.append(bytes_of(s));
            model += s;
        }
        c.append(x, 2, 5);
        model += as_string(x).substr(2, 5);
        c.append(bytes_of("omega"));
        model += "omega";
    };
    auto x = make_shared_text("[shared-bytes]");
    std::string model;
    {
        buffer_chain probe(16);
        build(probe, x, model);
    }
    for (std::size_t split = 0; split <= model.size(); ++split) {
        buffer_chain c(16);
        std::string m;
        build(c, x, m);
        ASSERT_EQ(m, model);
        std::string out;
        iovec iov[16];
        int k = c.fill_iov(iov, 16);
        std::size_t taken = 0;
        for (int i = 0; i < k && taken < split; ++i) {
            const std::size_t n = std::min(split - taken, iov[i].iov_len);
            out.append(static_cast<const char*>(iov[i].iov_base), n);
            taken += n;
        }
        c.consume(split);
        ASSERT_EQ(c.size(), model.size() - split);
        // The front segment now starts exactly at byte `split`.
        ASSERT_EQ(queued(c), model.substr(split)) << "split " << split;
        out += drain(c, 3);
        ASSERT_EQ(out, model) << "split " << split;
        ASSERT_EQ(x->use_count(), 1u) << "split " << split;
    }
}

TEST(BufferChain, FillIovRespectsMaxIov) {
    buffer_chain c;
    std::vector<shared_buffer_ptr> bufs;
    std::string model;
    for (int i = 0; i < 10; ++i) {
        bufs.push_back(make_shared_text(cat("<", std::to_string(i), ">")));
        c.append(bufs.back());
        model += as_string(bufs.back());
    }
    EXPECT_EQ(c.segments(), 10u);  // also exercises growth past the inline segments
    iovec iov[10];
    ASSERT_EQ(c.fill_iov(iov, 3), 3);
    EXPECT_EQ(std::string(static_cast<const char*>(iov[2].iov_base), iov[2].iov_len), "<2>");
    EXPECT_EQ(c.fill_iov(iov, 0), 0);
    EXPECT_EQ(c.fill_iov(iov, -1), 0);
    EXPECT_EQ(queued(c, 10), model);
    EXPECT_EQ(drain(c, 4, 3), model);  // writev in batches of 3 iovecs
    for (const auto& b : bufs) EXPECT_EQ(b->use_count(), 1u);
}

TEST(BufferChain, SharedReferencesReleasedOnConsumeAndClear) {
    auto x = make_shared_text("payload");
    {
        buffer_chain c;
        for (int i = 0; i < 100; ++i) c.append(x);
        EXPECT_EQ(x->use_count(), 101u);
        EXPECT_EQ(c.segments(), 100u);
        c.consume(7 * 40);
        EXPECT_EQ(x->use_count(), 61u);
        c.consume(3);  // partial: the front segment keeps its reference
        EXPECT_EQ(x->use_count(), 61u);
        EXPECT_EQ(queued(c).substr(0, 4), "load");
        c.clear();
        EXPECT_TRUE(c.empty());
        EXPECT_EQ(c.segments(), 0u);
        EXPECT_EQ(x->use_count(), 1u);
        c.append(x);
    }
    EXPECT_EQ(x->use_count(), 1u);  // destructor released the last queued reference
}

TEST(BufferChain, SteadyStreamReusesItsChunk) {
    buffer_chain c(64);
    const std::byte* first_chunk = nullptr;
    for (int turn = 0; turn < 100; ++turn) {
        const std::string s = cat("turn-", std::to_string(turn));
        c.append(bytes_of(s));
        iovec iov[2];
        ASSERT_EQ(c.fill_iov(iov, 2), 1);
        if (turn == 0) first_chunk = static_cast<const std::byte*>(iov[0].iov_base);
        // Fully written every turn: the chunk rewinds, so each turn writes at its start.
        EXPECT_EQ(iov[0].iov_base, first_chunk);
        EXPECT_EQ(std::string(static_cast<const char*>(iov[0].iov_base), iov[0].iov_len), s);
        c.consume(s.size());
    }
}

TEST(BufferChain, SpareChunkIsReusedWhenTheFillChunkIsStillQueued) {
    buffer_chain c(16);
    c.append(bytes_of("0123456789abcdef"));  // fills chunk A exactly
    iovec iov[4];
    ASSERT_EQ(c.fill_iov(iov, 4), 1);
    const void* chunk_a = iov[0].iov_base;
    c.append(bytes_of("ghij"));  // chunk B
    ASSERT_EQ(c.fill_iov(iov, 4), 2);
    const void* chunk_b = iov[1].iov_base;
    c.consume(16);  // A written out -> becomes the spare
    c.append(bytes_of("klmnopqrstuv"));  // fills B to 16
    c.append(bytes_of("wxyz"));          // needs a new chunk: the spare A
    ASSERT_EQ(c.fill_iov(iov, 4), 2);
    EXPECT_EQ(iov[0].iov_base, chunk_b);
    EXPECT_EQ(iov[1].iov_base, chunk_a);
    EXPECT_EQ(queued(c), "ghijklmnopqrstuvwxyz");
    c.trim();  // fill chunk still queued: kept
    EXPECT_EQ(queued(c), "ghijklmnopqrstuvwxyz");
    c.consume(20);
    c.trim();
    EXPECT_TRUE(c.empty());
    c.append(bytes_of("again"));
    EXPECT_EQ(queued(c), "again");
}

TEST(BufferChain, TrimGivesBackAGrownSegmentRingOnceTheQueueFitsInline) {
    auto x = make_shared_text("X");
    buffer_chain c(8);
    std::string model;
    for (int i = 0; i < 20; ++i) {  // 20 shared segments: the ring grows onto the heap
        c.append(x);
        model += "X";
    }
    ASSERT_EQ(c.segments(), 20u);
    c.trim();  // 20 queued do not fit inline: the heap ring stays
    EXPECT_TRUE(c.has_chunks());
    EXPECT_EQ(queued(c), model);
    c.consume(17);  // 3 left, starting mid-ring
    model.erase(0, 17);
    c.trim();  // they move to the inline ring, in order
    EXPECT_FALSE(c.has_chunks());
    EXPECT_EQ(c.segments(), 3u);
    EXPECT_EQ(queued(c), model);
    c.append(bytes_of("tail"));
    model += "tail";
    EXPECT_EQ(queued(c), model);
    c.consume(c.size());
    c.trim();
    EXPECT_FALSE(c.has_chunks());
}

TEST(BufferChain, MoveKeepsQueueInOrder) {
    auto x = make_shared_text("X");
    for (int n : {2, 20}) {  // inline ring and heap ring
        buffer_chain a(8);
        std::string model;
        for (int i = 0; i < n; ++i) {
            a.append(bytes_of("ab"));
            a.append(x);
            model += "abX";
        }
        a.consume(1);
        model.erase(0, 1);
        buffer_chain b(std::move(a));
        EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): documented state
        EXPECT_EQ(a.segments(), 0u);
        EXPECT_EQ(queued(b), model);
        buffer_chain c;
        c.append(bytes_of("discarded"));
        c = std::move(b);
        EXPECT_EQ(drain(c, 5), model);
        a.append(bytes_of("reuse"));
        EXPECT_EQ(queued(a), "reuse");
    }
    EXPECT_EQ(x->use_count(), 1u);
}

TEST(BufferChain, RandomOpsMatchStringModel) {
    std::mt19937_64 rng(20240601);
    buffer_chain c(128);
    std::string model;
    std::vector<shared_buffer_ptr> pool;
    for (int i = 0; i < 8; ++i) {
        std::string s(1 + rng() % 200, '?');
        for (auto& ch : s) ch = static_cast<char>('A' + rng() % 26);
        pool.push_back(make_shared_text(s));
    }
    std::string in;
    for (int op = 0; op < 20000; ++op) {
        switch (rng() % 4) {
            case 0: {
                in.assign(rng() % 300, '\0');
                for (auto& ch : in) ch = static_cast<char>('a' + rng() % 26);
                c.append(bytes_of(in));
                model += in;
                break;
            }
            case 1: {
                const auto& b = pool[rng() % pool.size()];
                const std::size_t off = rng() % (b->size() + 1);
                const std::size_t len = rng() % (b->size() - off + 1);
                c.append(b, off, len);
                model += as_string(b).substr(off, len);
                break;
            }
            default: {
                iovec iov[8];
                const int k = c.fill_iov(iov, 8);
                std::size_t avail = 0;
                for (int i = 0; i < k; ++i) avail += iov[i].iov_len;
                const std::size_t n = avail ? rng() % (avail + 1) : 0;
                std::string got;
                for (int i = 0; i < k && got.size() < n; ++i)
                    got.append(static_cast<const char*>(iov[i].iov_base), std::min(n - got.size(), iov[i].iov_len));
                ASSERT_EQ(got, model.substr(0, n));
                c.consume(n);
                model.erase(0, n);
                break;
            }
        }
        ASSERT_EQ(c.size(), model.size());
        ASSERT_EQ(c.empty(), model.empty());
    }
    EXPECT_EQ(drain(c, 1000), model);
    for (const auto& b : pool) EXPECT_EQ(b->use_count(), 1u);
}

TEST(BufferChainDeathTest, ContractViolationsAbort) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            buffer_chain c;
            c.append(bytes_of("abc"));
            c.consume(4);
        },
        "consume");
    EXPECT_DEATH(
        {
            buffer_chain c;
            c.append(shared_buffer::create(4), 2, 3);
        },
        "range");
    EXPECT_DEATH(
        {
            buffer_chain c;
            c.append(shared_buffer_ptr{});
        },
        "null");
}

}  // namespace
