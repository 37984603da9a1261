#pragma once
// Wire format shared by every echo program in bench/echo/ (the Echo server shoot-out's):
//
//   byte 0          4                          len
//        +----------+--------------------------+
//        | len (u32 | body (len - 4 bytes)      |
//        |  little  |                          |
//        |  endian) |                          |
//        +----------+--------------------------+
//
// len is the TOTAL length, header included, so an empty body has len = 4.
// A server echoes every message back unchanged as a message of its own.
//
// The load tool fills each body with a pattern that depends on the connection id and the
// message's sequence number on that connection, so it can check every echoed byte and the
// order of the echoes:
//
//   body[0..8)   seq, little endian (truncated to the body when the body is shorter)
//   body[8..)    8-byte words from a splitmix64 stream seeded with (seq, connection id)

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace strix {

inline constexpr std::size_t echo_header_size = 4;

/// Reads the little-endian u32 at p (unaligned). Any thread.
inline std::uint32_t echo_load_u32le(const std::uint8_t* p) noexcept {
    return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
           (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

/// Writes v at p as a little-endian u32 (unaligned). Any thread.
inline void echo_store_u32le(std::uint8_t* p, std::uint32_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v);
    p[1] = static_cast<std::uint8_t>(v >> 8);
    p[2] = static_cast<std::uint8_t>(v >> 16);
    p[3] = static_cast<std::uint8_t>(v >> 24);
}

/// One step of splitmix64: advances state and returns the next word. Any thread.
inline std::uint64_t echo_splitmix64(std::uint64_t& state) noexcept {
    state += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/// Writes the body of message `seq` on connection `conn` (size bytes) to dst, as described in the
/// header comment. Deterministic: the same (conn, seq, size) always gives the same bytes. Any thread.
inline void echo_fill_body(std::uint8_t* dst, std::size_t size, std::uint32_t conn, std::uint64_t seq) noexcept {
    std::uint8_t word[8];
    for (std::size_t i = 0; i < 8; ++i) word[i] = static_cast<std::uint8_t>(seq >> (8 * i));
    std::memcpy(dst, word, size < 8 ? size : 8);
    if (size <= 8) return;
    std::uint64_t state = seq ^ (static_cast<std::uint64_t>(conn) << 40) ^ 0x5eed5eed5eed5eedULL;
    for (std::size_t off = 8; off < size; off += 8) {
        const std::uint64_t w = echo_splitmix64(state);
        for (std::size_t i = 0; i < 8; ++i) word[i] = static_cast<std::uint8_t>(w >> (8 * i));
        std::memcpy(dst + off, word, size - off < 8 ? size - off : 8);
    }
}

}  // namespace strix
