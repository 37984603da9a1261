#pragma once
// WebSocket (RFC 6455) wire pieces: opcodes, close codes, the strix.ws error category, and frame
// encoding for sends. The protocol itself (upgrade, frames, close handshake) is ws_protocol
// (strix/net/ws_protocol.hpp), a session_handler that sits between a session and the
// application's ws_handler.
//
// A frame on the wire (RFC 6455 section 5.2):
//
//   byte 0: FIN | RSV1 RSV2 RSV3 | opcode(4)     byte 1: MASK | len(7)
//   len 126: 2-byte big-endian length follows;   len 127: 8-byte length (top bit 0)
//   MASK: a 4-byte key follows, the payload is XORed with it (client to server only)
//
//   server -> client: [81 05] "hello"              (text, FIN, unmasked, 2-byte header)
//   client -> server: [81 85 k0 k1 k2 k3] masked    (6-byte header)
//
// Sends build the frame once: ws_encode() returns one shared buffer holding header and payload,
// so a broadcast queues the same bytes on every member's session (no copy per member).

#include <strix/core/shared_buffer.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <system_error>

namespace strix {

class session;

enum class ws_opcode : std::uint8_t {
    continuation = 0x0,
    text = 0x1,
    binary = 0x2,
    close = 0x8,
    ping = 0x9,
    pong = 0xA,
};

/// Why a WebSocket session ended or was refused: values of the "strix.ws" category. 1000-4999 are
/// close codes (sent or received; any code a peer may send is representable, e.g. 4001), values
/// below 1000 are the HTTP statuses the upgrade was refused with (server side) or failures of
/// the upgrade seen by a client.
enum class ws_errc {
    // Close codes (RFC 6455 section 7.4.1).
    normal = 1000,
    going_away = 1001,
    protocol_error = 1002,    // malformed frame, unmasked client frame, RSV bits, bad control frame
    unsupported_data = 1003,
    no_status = 1005,         // a close frame without a code (never sent on the wire)
    abnormal = 1006,          // the connection dropped without a close frame (never sent)
    invalid_payload = 1007,   // text (or a close reason) that is not UTF-8
    policy_violation = 1008,  // e.g. a ping flood
    message_too_big = 1009,   // a frame or message above ws_options::max_message, or too many fragments
    internal_error = 1011,
    // The upgrade refused by the server, as its HTTP status.
    bad_request = 400,             // not a valid upgrade request
    forbidden_origin = 403,        // Origin not in ws_options::origins
    not_found = 404,               // another path than ws_options::path
    upgrade_required = 426,        // Sec-WebSocket-Version other than 13
    request_too_large = 431,       // the request's head above ws_options::max_handshake
    // The upgrade failed, seen by a client.
    handshake_refused = 1,   // the server answered with another status than 101
    bad_accept = 2,          // Sec-WebSocket-Accept does not match the key sent
};

const std::error_category& ws_category() noexcept;
inline std::error_code make_error_code(ws_errc e) noexcept { return {static_cast<int>(e), ws_category()}; }

/// The close code a received close frame carried (or ws_errc::no_status) as an error_code of
/// the strix.ws category. Any thread.
inline std::error_code ws_close_reason(std::uint16_t code) noexcept { return {code, ws_category()}; }

/// Whether a peer may send `code` in a close frame (1000-1003, 1007-1011, 3000-4999). Any thread.
bool ws_close_code_valid(std::uint16_t code) noexcept;

/// Header bytes for a payload of n bytes: 2, 4 or 10, plus 4 when masked. Any thread.
constexpr std::size_t ws_header_size(std::size_t n, bool masked = false) noexcept {
    return (n < 126 ? 2 : n <= 0xFFFF ? 4 : 10) + (masked ? 4 : 0);
}

/// Writes an unmasked frame header (FIN set) for a payload of n bytes into out (at least
/// ws_header_size(n) bytes) and returns its size. Any thread.
std::size_t ws_write_header(std::byte* out, ws_opcode op, std::size_t n) noexcept;

/// One unmasked frame (server to client), header and payload in one shared buffer built once:
/// send the same buffer to every member of a broadcast (session::send(shared_buffer_ptr)).
/// Any thread.
shared_buffer_ptr ws_encode(ws_opcode op, std::span<const std::byte> payload);
shared_buffer_ptr ws_encode(ws_opcode op, std::string_view payload);

/// Queues one message (a single frame, FIN set) on a WebSocket session: unmasked for a session
/// the server accepted, masked with a fresh key for a client's session (session::origin() set).
/// Queued after whatever was sent before, flushed with the turn's gather write. No-op once the
/// session is closing. The session's shard only.
void ws_send(session& s, ws_opcode op, std::span<const std::byte> payload);
inline void ws_send(session& s, ws_opcode op, std::string_view payload) {
    ws_send(s, op, std::as_bytes(std::span(payload.data(), payload.size())));
}
inline void ws_send_text(session& s, std::string_view text) { ws_send(s, ws_opcode::text, text); }
inline void ws_send_binary(session& s, std::span<const std::byte> b) { ws_send(s, ws_opcode::binary, b); }

/// Starts the close handshake: queues a close frame with `code` and `reason` (at most 123 bytes,
/// cut if longer), then closes the session once it is flushed (session::close, bounded by
/// close_linger); the handler hears on_close with ws_close_reason(code). The session's shard only.
void ws_close(session& s, std::uint16_t code = 1000, std::string_view reason = {});

/// XORs bytes with the 4-byte mask, starting at mask byte `phase` (0-3). Any thread.
void ws_unmask(std::byte* p, std::size_t n, const std::byte (&mask)[4], std::size_t phase = 0) noexcept;

}  // namespace strix

template <>
struct std::is_error_code_enum<strix::ws_errc> : std::true_type {};
