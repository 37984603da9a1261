#pragma once
// ZMTP 3.1 wire codec (rfc.zeromq.org/spec/23 and /37), NULL mechanism: what strix::link writes
// to and reads from a tcp:// or ipc:// peer. Pure functions and stateless framers; a socket's
// ZMTP pipe (src/link/zmtp/zmtp_pipe.cpp) drives the handshake. CURVE and PLAIN replace READY with
// their own commands (src/link/security/mechanism.hpp); the greeting below names them instead of NULL.
//
//   greeting (64 bytes, each side sends one at once):
//     0    0xFF, 8 bytes of padding, 0x7F        signature (libzmq puts 0..01 in the padding)
//     10   major 3, minor 1                      version (any 3.x accepted)
//     12   "NULL" padded with zeros to 20 bytes  mechanism
//     32   as-server (0 for NULL), 31 zeros      filler (ignored when read)
//   then frames:
//     flags (bit 0 MORE, bit 1 LONG, bit 2 COMMAND, the rest zero)
//     size  1 byte, or 8 bytes big-endian when LONG (a LONG size may be any value)
//     body
//   a command's body: name length (1 byte), name, data:
//     READY      properties: name length (1), name, value length (4, big-endian), value
//     ERROR      reason length (1), reason
//     SUBSCRIBE  topic                CANCEL  topic              (3.1 peers)
//     PING       TTL (2, big-endian, tenths of a second), context (0-16 bytes)
//     PONG       context
//   to a 3.0 peer a subscription travels as a message: 0x01 + topic (cancel: 0x00 + topic).

#include <strix/net/framer.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace strix::link {

using bytes_view = std::span<const std::byte>;

/// Why a ZMTP peer was refused or a link operation failed. Values of the "strix.link" category.
enum class link_errc {
    bad_greeting = 1,        // not a ZMTP signature
    unsupported_version,     // ZMTP major version below 3
    unsupported_mechanism,   // the peer's security mechanism is not this socket's
    bad_frame,               // reserved flag bits set, or a malformed command
    bad_handshake,           // something other than READY (or ERROR) during the handshake
    socket_type_mismatch,    // the peer's socket type cannot talk to ours
    peer_error,              // the peer sent ERROR
    message_too_large,       // a frame above the socket's max message size
    handshake_timeout,       // no READY within the handshake interval
    heartbeat_timeout,       // no traffic within the heartbeat timeout (or the peer's TTL)
    would_block,             // the high-water mark is reached; try again once writable
    no_peer,                 // nothing to send to (ROUTER: unknown identity with mandatory set)
    bad_state,               // REQ/REP: send or receive out of turn
    not_supported,           // the operation does not exist for this socket type
    address_in_use,          // inproc: the name is bound already
    closed,                  // the socket is closed
    auth_failed,             // ZAP refused the peer (the status code in the event's detail)
    bad_crypto,              // a CURVE box did not open (wrong key), or a nonce went backwards
    zap_unavailable,         // PLAIN server with no ZAP handler to ask (libzmq refuses the peer too)
    zap_bad_reply,           // the ZAP handler's reply is malformed (the event's detail says how)
};
const std::error_category& link_category() noexcept;
inline std::error_code make_error_code(link_errc e) noexcept { return {static_cast<int>(e), link_category()}; }

namespace zmtp {

inline constexpr std::size_t greeting_size = 64;
inline constexpr std::uint8_t flag_more = 0x01;
inline constexpr std::uint8_t flag_long = 0x02;
inline constexpr std::uint8_t flag_command = 0x04;
inline constexpr std::size_t max_header = 9;

/// Writes strix's greeting (ZMTP 3.1, NULL, not as-server) into out.
void write_greeting(std::span<std::byte, greeting_size> out) noexcept;
/// The same with another mechanism ("PLAIN", "CURVE": up to 20 characters) and as-server flag.
void write_greeting(std::span<std::byte, greeting_size> out, std::string_view mechanism, bool as_server) noexcept;

struct greeting {
    std::uint8_t major = 0;
    std::uint8_t minor = 0;
    std::string mechanism;  // "NULL", "PLAIN", "CURVE", ...
    bool as_server = false;
};

/// Reads a peer's 64-byte greeting. Errors: bad_greeting, unsupported_version.
std::error_code parse_greeting(std::span<const std::byte, greeting_size> in, greeting& out) noexcept;

/// Cuts the 64-byte greeting, refusing a wrong signature or version from its first bytes (a
/// stray HTTP client is closed after one read, not after 64 bytes).
const framer& greeting_framer() noexcept;
/// Cuts frames: 2- or 9-byte header, then the body. Reserved flag bits are a bad_frame.
const framer& frame_framer() noexcept;

/// A frame cut by frame_framer.
struct frame {
    std::uint8_t flags = 0;
    bytes_view body;
    bool more() const noexcept { return flags & flag_more; }
    bool command() const noexcept { return flags & flag_command; }
};
/// Splits a whole frame (as frame_framer cut it) into flags and body.
frame split(bytes_view whole) noexcept;

/// Writes a frame header for a body of `size` bytes; returns 2 or 9 (the bytes written).
std::size_t write_header(std::byte* out, std::uint8_t flags, std::uint64_t size) noexcept;

/// A parsed command: its name and the bytes after it.
struct command {
    std::string_view name;
    bytes_view data;
};
/// Splits a command frame's body; false if the name length runs past the body.
bool parse_command(bytes_view body, command& out) noexcept;

/// A whole command frame (header included): name and data.
std::vector<std::byte> command_frame(std::string_view name, bytes_view data);

/// READY's properties. Calls f(name, value) for each; false if malformed.
template <class F>
bool for_each_property(bytes_view data, F&& f) {
    std::size_t i = 0;
    while (i < data.size()) {
        const std::size_t nlen = static_cast<std::size_t>(data[i]);
        if (nlen == 0 || i + 1 + nlen + 4 > data.size()) return false;
        std::string_view name(reinterpret_cast<const char*>(data.data() + i + 1), nlen);
        i += 1 + nlen;
        const std::uint64_t vlen =
            (static_cast<std::uint64_t>(data[i]) << 24) | (static_cast<std::uint64_t>(data[i + 1]) << 16) |
            (static_cast<std::uint64_t>(data[i + 2]) << 8) | static_cast<std::uint64_t>(data[i + 3]);
        i += 4;
        if (vlen > data.size() - i) return false;
        f(name, data.subspan(i, static_cast<std::size_t>(vlen)));
        i += static_cast<std::size_t>(vlen);
    }
    return true;
}

/// A READY command frame with Socket-Type and, when given, Identity.
std::vector<std::byte> ready_frame(std::string_view socket_type, const bytes_view* identity);
/// An ERROR command frame (reason truncated to 255 bytes).
std::vector<std::byte> error_frame(std::string_view reason);
/// PING with a TTL in tenths of a second and up to 16 bytes of context.
std::vector<std::byte> ping_frame(std::uint16_t ttl_deciseconds, bytes_view context);
/// PONG echoing a PING's context.
std::vector<std::byte> pong_frame(bytes_view context);

/// Case-insensitive ASCII comparison (property names are case-insensitive in ZMTP).
bool iequals(std::string_view a, std::string_view b) noexcept;

}  // namespace zmtp
}  // namespace strix::link

template <>
struct std::is_error_code_enum<strix::link::link_errc> : std::true_type {};
