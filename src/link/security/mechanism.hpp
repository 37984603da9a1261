#pragma once
// ZMTP security mechanisms other than NULL: PLAIN (RFC 24) and CURVE (RFC 25/26). A mechanism is
// a pure state machine over handshake commands -- it reads the peer's commands and writes whole
// frames to send -- so a zmtp_pipe (zmtp_pipe.cpp) drives it and the fuzz target
// (fuzz/curve_fuzz.cpp) can run it without sockets.
//
//   client                                   server
//   greeting (mechanism, as-server 0)  <->   greeting (mechanism, as-server 1)
//   PLAIN: HELLO user+pass       ->          ZAP -> WELCOME (or ERROR "400")
//          INITIATE metadata     ->          READY metadata
//   CURVE: HELLO C', Box[0*64](C'->S) ->     WELCOME Box[S' + cookie](S->C')
//          INITIATE cookie, Box[C + vouch + metadata](C'->S') -> ZAP -> READY Box[metadata](S'->C')
//   then (CURVE) every frame both ways: MESSAGE nonce, Box[flags + body] under the transient keys.
#include <strix/link/security.hpp>
#include <strix/link/zmtp.hpp>

#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace strix::link::detail {

enum class mechanism_kind : std::uint8_t { null, plain, curve };

/// Which mechanism these options ask for. Throws std::invalid_argument when they are
/// inconsistent (a CURVE side without its keys, a malformed key, CURVE and PLAIN both set).
mechanism_kind check_security(const security_options& o);

/// The outcome of one handshake command.
struct step {
    enum class status : std::uint8_t { more, done, failed } st = status::more;
    std::error_code error;  // failed: why
    std::string detail;     // failed: the ZAP status or what was malformed
};

class mechanism {
public:
    virtual ~mechanism() = default;
    /// "PLAIN" or "CURVE" (the greeting's mechanism field).
    virtual const char* name() const noexcept = 0;
    virtual bool as_server() const noexcept = 0;
    /// Frames the client sends once the greetings are exchanged (HELLO); a server writes none.
    virtual void start(std::vector<std::byte>& out) = 0;
    /// One command from the peer during the handshake; frames to send are appended to out.
    virtual step on_command(const zmtp::command& cmd, std::vector<std::byte>& out) = 0;
    /// The peer's metadata (READY properties), once on_command returned done.
    const std::vector<std::byte>& peer_metadata() const noexcept { return peer_meta_; }
    /// The user id ZAP gave (server), once done.
    const std::string& user_id() const noexcept { return user_id_; }

    /// Whether frames after the handshake are boxed (CURVE).
    virtual bool boxes() const noexcept { return false; }
    /// Bytes encode() writes for a body of n bytes (header included).
    static constexpr std::size_t boxed_overhead = zmtp::max_header + 8 + 8 + 16 + 1;
    /// Writes one frame (flags: zmtp::flag_more / zmtp::flag_command) as a MESSAGE into out,
    /// which has room for n + boxed_overhead bytes; returns the bytes written.
    virtual std::size_t encode(std::uint8_t, bytes_view, std::byte*) { return 0; }
    /// Opens a MESSAGE frame's body into plain (flags, then the frame's body); false when it is
    /// malformed, replayed or does not open.
    virtual bool decode(bytes_view, std::uint8_t&, std::vector<std::byte>&) { return false; }

protected:
    std::vector<std::byte> peer_meta_;
    std::string user_id_;
};

/// What a mechanism needs to know about its own side.
struct mechanism_context {
    const security_options* opts = nullptr;
    std::vector<std::byte> metadata;  // our READY properties (Socket-Type, Identity)
    std::string peer_address;         // for ZAP
    std::uint64_t zap_request_id = 0;
};

/// A mechanism for these options (check_security said plain or curve). Throws as check_security.
std::unique_ptr<mechanism> make_mechanism(mechanism_kind k, mechanism_context ctx);

/// READY-style properties: name length, name, value length (4, big-endian), value.
void put_property(std::vector<std::byte>& out, std::string_view name, bytes_view value);
/// Asks ctx.opts->zap (when set) about a peer; the reply, or an accepting one without a handler.
zap_reply ask_zap(const mechanism_context& ctx, std::string_view mechanism, std::vector<std::string> credentials,
                  bytes_view peer_metadata);

}  // namespace strix::link::detail
