#pragma once
// Content patterns for the allocator tests: each live allocation carries bytes derived from its
// own id, so two allocations that overlap (or memory handed out twice) corrupt each other's
// pattern and the check fails.

#include <cstddef>
#include <cstdint>

namespace strix_test {

inline unsigned char pattern_byte(std::uint64_t id, std::size_t i) {
    // Mixes id and position, so neither a shifted copy nor another id reproduces the bytes.
    std::uint64_t x = (id + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return static_cast<unsigned char>(x);
}

inline void fill(void* p, std::size_t n, std::uint64_t id) {
    auto* b = static_cast<unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) b[i] = pattern_byte(id, i);
}

/// True when [p, p + n) still holds the pattern written by fill(p, n, id).
inline bool holds(const void* p, std::size_t n, std::uint64_t id) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i)
        if (b[i] != pattern_byte(id, i)) return false;
    return true;
}

inline bool aligned_to(const void* p, std::size_t align) { return reinterpret_cast<std::uintptr_t>(p) % align == 0; }

}  // namespace strix_test
