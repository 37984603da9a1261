#pragma once
// Private: a WebSocket frame header read from the wire, shared by the framers (which size and
// refuse frames) and ws_protocol (which acts on them).

#include <strix/net/websocket.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace strix::detail {

struct ws_header {
    std::uint8_t opcode = 0;  // raw: validity is checked by the framer
    bool fin = false;
    std::uint8_t rsv = 0;     // RSV1-3 bits, as they sit in byte 0 (0x70)
    bool masked = false;
    std::size_t header_size = 0;  // 0: the header is not complete yet
    bool length_known = false;    // the length bytes are in (the mask key may not be)
    std::uint64_t length = 0;     // payload length
    std::byte mask[4] = {};
};

/// Reads the header at the front of b. header_size stays 0 while it is incomplete.
inline ws_header ws_read_header(std::span<const std::byte> b) noexcept {
    ws_header h;
    if (b.size() < 2) return h;
    const auto b0 = static_cast<std::uint8_t>(b[0]);
    const auto b1 = static_cast<std::uint8_t>(b[1]);
    h.fin = (b0 & 0x80) != 0;
    h.rsv = static_cast<std::uint8_t>(b0 & 0x70);
    h.opcode = static_cast<std::uint8_t>(b0 & 0x0F);
    h.masked = (b1 & 0x80) != 0;
    std::size_t n = 2;
    std::uint64_t len = b1 & 0x7F;
    if (len == 126) {
        if (b.size() < 4) return h;
        len = static_cast<std::uint64_t>(b[2]) << 8 | static_cast<std::uint64_t>(b[3]);
        n = 4;
    } else if (len == 127) {
        if (b.size() < 10) return h;
        len = 0;
        for (std::size_t i = 2; i < 10; ++i) len = len << 8 | static_cast<std::uint64_t>(b[i]);
        n = 10;
    }
    h.length = len;
    h.length_known = true;
    if (h.masked) {
        if (b.size() < n + 4) return h;
        for (std::size_t i = 0; i < 4; ++i) h.mask[i] = b[n + i];
        n += 4;
    }
    h.header_size = n;
    return h;
}

inline bool ws_is_control(std::uint8_t op) noexcept { return (op & 0x08) != 0; }

inline bool ws_known_opcode(std::uint8_t op) noexcept { return op <= 0x2 || (op >= 0x8 && op <= 0xA); }

}  // namespace strix::detail
