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
//
// ZAP is the pipe's business: at "ZAP" above a server's on_command returns step::status::zap with
// zap_request() filled, the pipe asks (the in-process function, the handler socket at
// inproc://zeromq.zap.01, which may answer later, or nobody), and hands the answer to on_zap,
// which goes on from there.
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
    enum class status : std::uint8_t { more, done, failed, zap } st = status::more;
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
    /// After on_command returned step::status::zap: ZAP's answer. 200 goes on (PLAIN: WELCOME,
    /// CURVE: READY and done); 300 fails with nothing sent, 400 and 500 with ERROR and the code,
    /// as libzmq 4.3's servers do.
    virtual step on_zap(const zap_reply& r, std::vector<std::byte>& out) = 0;
    /// What to ask ZAP, once on_command returned step::status::zap.
    const zap_request& pending_zap() const noexcept { return zap_; }
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
    zap_request zap_;
};

/// What a mechanism needs to know about its own side.
struct mechanism_context {
    const security_options* opts = nullptr;
    std::vector<std::byte> metadata;  // our READY properties (Socket-Type, Identity)
    std::string peer_address;         // ZAP's address frame (peer_address_of, properties.hpp)
    std::uint64_t zap_request_id = 0;
};

/// A mechanism for these options (check_security said plain or curve). Throws as check_security.
std::unique_ptr<mechanism> make_mechanism(mechanism_kind k, mechanism_context ctx);

/// READY-style properties: name length, name, value length (4, big-endian), value.
void put_property(std::vector<std::byte>& out, std::string_view name, bytes_view value);
/// The ZAP request for a peer: version, request id, domain and address from ctx; identity from
/// the peer's metadata (its Identity property, if it sent one).
zap_request make_zap_request(const mechanism_context& ctx, std::string_view mechanism,
                             std::vector<std::string> credentials, bytes_view peer_metadata);
/// Calls an in-process handler (security_options::zap); a status code RFC 27 does not know is
/// the handler's internal error ("500").
zap_reply call_zap(const zap_handler& h, const zap_request& r);
/// A refusal: 300 sends nothing, 400 and 500 send ERROR with the code (libzmq 4.3's servers);
/// the step fails with auth_failed and "<code> <text>" as its detail.
step zap_refusal(const zap_reply& r, std::vector<std::byte>& out);

}  // namespace strix::link::detail
