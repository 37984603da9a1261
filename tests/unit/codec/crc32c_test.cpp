#include <strix/codec/crc32c.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

namespace {

using bytes = std::vector<std::byte>;

bytes make(std::size_t n, int (*gen)(std::size_t)) {
    bytes b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::byte>(gen(i));
    return b;
}

std::span<const std::byte> as_bytes(std::string_view s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

bytes random_bytes(std::size_t n, std::mt19937_64& rng) {
    bytes b(n);
    for (auto& x : b) x = static_cast<std::byte>(rng() & 0xFFu);
    return b;
}

// Every implementation this CPU can run, so each vector is checked against each.
std::vector<std::uint32_t (*)(std::span<const std::byte>, std::uint32_t) noexcept> impls() {
    std::vector<std::uint32_t (*)(std::span<const std::byte>, std::uint32_t) noexcept> v{&strix::crc32c,
                                                                                         &strix::crc32c_sw};
    if (strix::crc32c_hw_available()) v.push_back(&strix::crc32c_hw);
    return v;
}

TEST(crc32c, rfc3720_vectors_on_every_implementation) {
    // RFC 3720 (iSCSI) appendix B.4.
    const bytes zeros = make(32, [](std::size_t) { return 0; });
    const bytes ones = make(32, [](std::size_t) { return 0xFF; });
    const bytes incrementing = make(32, [](std::size_t i) { return static_cast<int>(i); });
    const bytes decrementing = make(32, [](std::size_t i) { return static_cast<int>(31 - i); });
    for (auto* f : impls()) {
        EXPECT_EQ(f(zeros, 0), 0x8A9136AAu);
        EXPECT_EQ(f(ones, 0), 0x62A8AB43u);
        EXPECT_EQ(f(incrementing, 0), 0x46DD794Eu);
        EXPECT_EQ(f(decrementing, 0), 0x113FDB5Cu);
        EXPECT_EQ(f(as_bytes("123456789"), 0), 0xE3069283u);
        EXPECT_EQ(f({}, 0), 0u);
        EXPECT_EQ(f({}, 0x12345678u), 0x12345678u) << "empty input must leave the CRC unchanged";
    }
}

TEST(crc32c, hardware_path_is_detected_on_x86_64) {
#if defined(__x86_64__)
    // Every x86-64 CPU this project targets has SSE4.2; if this fails the dispatch is broken
    // (or the machine is truly ancient, and the software path is being used silently).
    EXPECT_TRUE(strix::crc32c_hw_available());
#else
    GTEST_SKIP() << "not x86-64";
#endif
}

TEST(crc32c, incremental_equals_one_shot) {
    std::mt19937_64 rng(7);
    const bytes data = random_bytes(3000, rng);
    for (auto* f : impls()) {
        const std::uint32_t whole = f(data, 0);
        for (std::size_t cut = 0; cut <= data.size(); cut += 37) {
            const std::span<const std::byte> all(data);
            EXPECT_EQ(f(all.subspan(cut), f(all.first(cut), 0)), whole) << "cut at " << cut;
        }
        // And through the dispatching front door with a three-way split.
        const std::span<const std::byte> all(data);
        EXPECT_EQ(strix::crc32c(all.subspan(2000), strix::crc32c(all.subspan(5, 1995), strix::crc32c(all.first(5)))),
                  whole);
    }
}

TEST(crc32c, hardware_matches_software_for_every_length_up_to_1000) {
    if (!strix::crc32c_hw_available()) GTEST_SKIP() << "no SSE4.2";
    std::mt19937_64 rng(11);
    const bytes data = random_bytes(1000 + 8, rng);
    std::size_t checked = 0;
    for (std::size_t len = 0; len <= 1000; ++len) {
        // Odd start offsets exercise unaligned loads.
        const std::span<const std::byte> s = std::span<const std::byte>(data).subspan(len % 8, len);
        const std::uint32_t seed = static_cast<std::uint32_t>(rng());
        ASSERT_EQ(strix::crc32c_hw(s, 0), strix::crc32c_sw(s, 0)) << "len " << len;
        ASSERT_EQ(strix::crc32c_hw(s, seed), strix::crc32c_sw(s, seed)) << "len " << len;
        ++checked;
    }
    EXPECT_EQ(checked, 1001u);
}

TEST(crc32c, hardware_matches_software_on_long_inputs_and_random_splits) {
    if (!strix::crc32c_hw_available()) GTEST_SKIP() << "no SSE4.2";
    std::mt19937_64 rng(13);
    for (std::size_t len : {767u, 768u, 769u, 1535u, 1536u, 4096u, 65536u + 3u, 200000u}) {
        const bytes data = random_bytes(len, rng);
        const std::uint32_t sw = strix::crc32c_sw(data, 0);
        ASSERT_EQ(strix::crc32c_hw(data, 0), sw) << "len " << len;
        for (int trial = 0; trial < 20; ++trial) {
            // Random pieces, alternating implementations piece by piece.
            std::uint32_t crc = 0;
            std::size_t pos = 0;
            bool hw = (trial % 2) == 0;
            while (pos < len) {
                const std::size_t n = std::min<std::size_t>(len - pos, rng() % 2000);
                const std::span<const std::byte> piece = std::span<const std::byte>(data).subspan(pos, n);
                crc = hw ? strix::crc32c_hw(piece, crc) : strix::crc32c_sw(piece, crc);
                hw = !hw;
                pos += n;
            }
            ASSERT_EQ(crc, sw) << "len " << len << " trial " << trial;
        }
    }
}

TEST(crc32c, detects_single_bit_flips) {
    std::mt19937_64 rng(17);
    bytes data = random_bytes(512, rng);
    const std::uint32_t good = strix::crc32c(data);
    for (std::size_t bit = 0; bit < data.size() * 8; bit += 13) {
        data[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
        EXPECT_NE(strix::crc32c(data), good) << "bit " << bit;
        data[bit / 8] ^= static_cast<std::byte>(1u << (bit % 8));
    }
    EXPECT_EQ(strix::crc32c(data), good);
}

}  // namespace
