#pragma once
// frame_header: the fixed 12-byte prefix of every frame on the wire (docs/wire_format.md).
//
//   0               4       6       8               12
//   +---------------+-------+-------+---------------+---- ... ----+
//   | length (u32)  | type  | flags | crc32c (u32)  |    body     |
//   +---------------+-------+-------+---------------+---- ... ----+
//
// All fields little-endian. length counts the whole frame including these 12 bytes.
// flags bit 0 (frame_flag_crc) says the crc field holds CRC32C of the body; with it clear the
// crc field must be 0. Every other flag bit is reserved and must be 0.

#include <cstddef>
#include <cstdint>
#include <span>

namespace strix {

struct frame_header {
    std::uint32_t length = 0;  ///< total frame length in bytes, header included (>= 12)
    std::uint16_t type = 0;    ///< application-defined message type; every value, 0 too, is legal
    std::uint16_t flags = 0;   ///< frame_flag_* bits
    std::uint32_t crc = 0;     ///< CRC32C of the body when flags has frame_flag_crc, else 0

    friend bool operator==(const frame_header&, const frame_header&) = default;
};

inline constexpr std::size_t frame_header_size = 12;
inline constexpr std::uint16_t frame_flag_crc = 0x0001;
/// Every flag bit this version understands; a frame with any other bit set is rejected.
inline constexpr std::uint16_t frame_known_flags = frame_flag_crc;

/// Writes `h` as 12 little-endian bytes at out12[0..11]. Writes the fields as given, without
/// validating them. Pure; any thread.
void encode_header(std::byte* out12, const frame_header& h) noexcept;

/// Reads the 12 bytes at in12[0..11] into a header, without validating it. Pure; any thread.
frame_header parse_header(const std::byte* in12) noexcept;

/// The header a frame carrying `body` gets: length = 12 + body.size(), the given type, and, when
/// with_crc, frame_flag_crc with the body's CRC32C (otherwise flags = 0, crc = 0).
/// Precondition: body.size() <= 2^32 - 1 - 12; a larger body aborts (no length can describe it).
/// Pure; any thread.
frame_header make_header(std::uint16_t type, std::span<const std::byte> body, bool with_crc) noexcept;

}  // namespace strix
