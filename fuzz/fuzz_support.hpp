#pragma once
// Helpers shared by the fuzz targets: an invariant check that stays on and names itself, exact
// copies (so AddressSanitizer sees a read one byte past a span), and a reader that takes
// parameters from the front of the input.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>

namespace strix::fuzz {

/// A broken invariant: print it and abort, which libFuzzer reports as a crash with its input.
[[noreturn]] inline void fail(const char* what, const char* file, int line) {
    std::fprintf(stderr, "strix fuzz: invariant broken at %s:%d: %s\n", file, line, what);
    std::abort();
}

#define STRIX_FUZZ_CHECK(cond)                                       \
    do {                                                             \
        if (!(cond)) ::strix::fuzz::fail(#cond, __FILE__, __LINE__); \
    } while (0)

using bytes = std::span<const std::byte>;

inline bytes as_bytes(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const std::byte*>(data), size};
}

inline std::string_view as_text(bytes b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

/// A heap copy of exactly b.size() bytes: a read past its end is a heap-buffer-overflow.
/// (libFuzzer's own input is such a copy, but the prefixes of it that the targets hand out are
/// not.) Empty input gives a one-byte allocation and an empty span.
class exact_copy {
public:
    explicit exact_copy(bytes b) : mem_(new std::byte[std::max<std::size_t>(b.size(), 1)]), size_(b.size()) {
        if (!b.empty()) std::memcpy(mem_.get(), b.data(), b.size());
    }
    bytes view() const noexcept { return {mem_.get(), size_}; }

private:
    std::unique_ptr<std::byte[]> mem_;
    std::size_t size_;
};

/// Takes small parameters off the front of the input; past the end it yields zeros.
class reader {
public:
    explicit reader(bytes in) : in_(in) {}
    std::uint8_t u8() {
        if (in_.empty()) return 0;
        const auto v = static_cast<std::uint8_t>(in_[0]);
        in_ = in_.subspan(1);
        return v;
    }
    std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
    std::uint32_t u32() { return static_cast<std::uint32_t>(u16()) | (static_cast<std::uint32_t>(u16()) << 16); }
    /// Everything not taken yet.
    bytes rest() const noexcept { return in_; }

private:
    bytes in_;
};

/// A deterministic generator for cut points (splitmix64), seeded from the input.
class cuts {
public:
    explicit cuts(std::uint64_t seed) : s_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

private:
    std::uint64_t s_;
};

}  // namespace strix::fuzz
