#pragma once
// strix-echo-bench --ws: the WebSocket (RFC 6455) pieces of the load tool, client side only.
//
// A message is one binary frame whose payload is the echo body (echo_ws_messages.hpp has its
// layout; no length prefix: the frame header carries the length). Client frames are masked with a new
// 32-bit key per frame (section 5.3); the server's frames must come back unmasked.
//
//   client frame:  0x82 | 0x80+len7 [| len16 | len64] | mask key (4) | payload ^ mask
//   server frame:  0x82 | len7      [| len16 | len64] | payload
//
// The upgrade is done once per connection, blocking, before the measured loop starts.

#include <cstddef>
#include <cstdint>
#include <string>

#include "echo_buffer.hpp"

namespace strix {

inline constexpr std::uint8_t ws_op_continuation = 0x0;
inline constexpr std::uint8_t ws_op_text = 0x1;
inline constexpr std::uint8_t ws_op_binary = 0x2;
inline constexpr std::uint8_t ws_op_close = 0x8;
inline constexpr std::uint8_t ws_op_ping = 0x9;
inline constexpr std::uint8_t ws_op_pong = 0xA;

/// Bytes of a frame header carrying `len` payload bytes, with (client) or without (server) the
/// 4-byte mask key. Any thread.
constexpr std::size_t ws_header_size(std::size_t len, bool masked) noexcept {
    return (len < 126 ? 2 : len <= 0xffff ? 4 : 10) + (masked ? 4 : 0);
}

/// Writes a FIN frame header for opcode and len payload bytes at p, masked with `mask`; returns
/// its size (ws_header_size(len, true)). Any thread.
std::size_t ws_write_client_header(std::uint8_t* p, std::uint8_t opcode, std::size_t len, std::uint32_t mask) noexcept;

/// XORs n bytes at p with the 4-byte key (its bytes in wire order, as written by
/// ws_write_client_header). Any thread.
void ws_apply_mask(std::uint8_t* p, std::size_t n, std::uint32_t mask) noexcept;

/// Writes n bytes of src XORed with the key to dst (a masked copy in one pass); dst may be src.
/// Any thread.
void ws_copy_masked(std::uint8_t* dst, const std::uint8_t* src, std::size_t n, std::uint32_t mask) noexcept;

/// One parsed frame header.
struct ws_frame_header {
    bool fin = false;
    std::uint8_t rsv = 0;  // the three RSV bits, as bits 0x70
    std::uint8_t opcode = 0;
    bool masked = false;
    std::uint64_t len = 0;
    std::size_t header_len = 0;  // bytes before the payload
};

/// Parses the frame header at p (n bytes available): 1 when complete, 0 when more bytes are
/// needed, -1 when the 64-bit length has its top bit set (forbidden). Any thread.
int ws_parse_header(const std::uint8_t* p, std::size_t n, ws_frame_header& h) noexcept;

/// Per-thread source of mask keys: a xorshift64* stream seeded from getrandom(2). RFC 6455 asks
/// for keys an attacker cannot predict (against cache poisoning by a hostile page); a benchmark
/// client only needs a fresh key per frame, which is what servers must cope with. Not shared.
class ws_masker {
public:
    /// Seeds the stream from getrandom(2). Any thread; the object is then used by one.
    ws_masker();
    /// The next 32-bit mask key. The owning thread only.
    std::uint32_t next() noexcept {
        s_ ^= s_ >> 12;
        s_ ^= s_ << 25;
        s_ ^= s_ >> 27;
        return static_cast<std::uint32_t>((s_ * 0x2545f4914f6cdd1dULL) >> 32);
    }

private:
    std::uint64_t s_;
};

/// The opening handshake on connected, still blocking socket fd (its SO_RCVTIMEO / SO_SNDTIMEO
/// bound the wait): sends GET `path` with a random Sec-WebSocket-Key, reads the response, and
/// checks 101, Upgrade: websocket, Connection: Upgrade and Sec-WebSocket-Accept. Bytes the server
/// sent after the response go to `rest`. Returns "" on success, else why it failed. Any thread.
std::string ws_client_handshake(int fd, const std::string& host, std::uint16_t port, const std::string& path,
                                echo_buffer& rest);

}  // namespace strix
