#pragma once
// strix::link security: the CURVE (rfc.zeromq.org/spec/26, /25) and PLAIN (/24) mechanisms, Z85
// key text (/32) and ZAP (/27), the authentication hook a server consults for every peer.
//
//     auto server_keys = strix::link::curve_keypair::generate();
//     strix::link::socket_options o;
//     o.security.curve_server = true;
//     o.security.curve_secretkey = server_keys.secret_z85();
//     strix::link::allow_list allow;
//     allow.allow_key(client_public_z85);
//     o.security.zap = allow.handler();        // refuses every other client key
//
// Keys are 32 bytes, given either raw or as 40 characters of Z85 (as libzmq accepts them). After
// the handshake every message and command is boxed both ways (a CURVE MESSAGE command with
// crypto_box under the connection's transient keys). See docs/link.md, "Security".
//
// ZAP as libzmq 4.3 does it works too: with no `zap` callable, a server asks the REP or ROUTER
// socket the application bound at inproc://zeromq.zap.01 on the same engine (a shard socket, or a
// blocking socket served by a thread), and its handshake waits for the answer without holding the
// shard up.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strix::link {

/// Z85 text (RFC 32) for data whose size is a multiple of 4; empty when it is not. Any thread.
std::string z85_encode(std::span<const std::byte> data);
/// The bytes of Z85 text; nullopt when the size is not a multiple of 5 or a character is not
/// Z85's (or a group overflows 32 bits). Any thread.
std::optional<std::vector<std::byte>> z85_decode(std::string_view text);

/// A CURVE key pair (Curve25519, as crypto_box uses it).
struct curve_keypair {
    std::array<std::byte, 32> public_key{};
    std::array<std::byte, 32> secret_key{};

    /// A fresh key pair from libsodium's random source. Any thread.
    static curve_keypair generate();
    /// The pair of a secret key (its public key computed). Any thread.
    static curve_keypair from_secret(const std::array<std::byte, 32>& secret);
    std::string public_z85() const { return z85_encode(public_key); }
    std::string secret_z85() const { return z85_encode(secret_key); }
};

/// A 32-byte key from its raw bytes or its 40-character Z85 text; nullopt for anything else.
std::optional<std::array<std::byte, 32>> parse_curve_key(std::string_view key);

/// What a ZAP callable (security_options::zap) is asked: RFC 27's request. For CURVE,
/// credentials holds the client's 32-byte permanent public key; for PLAIN, the username and the
/// password; for NULL, nothing. (A handler socket at inproc://zeromq.zap.01 gets the same fields
/// as frames, except identity: there, as from libzmq, the server socket's own routing id.)
struct zap_request {
    std::string version = "1.0";
    std::string request_id;  // a counter per socket
    std::string domain;      // security_options::zap_domain
    std::string address;     // as libzmq: the peer's IP address (tcp), "localhost:uid:gid:pid" (ipc)
    std::string identity;    // the routing id the peer announced (Identity property), if any
    std::string mechanism;   // "CURVE", "PLAIN" or "NULL"
    std::vector<std::string> credentials;
};

/// A ZAP handler's answer. status_code as RFC 27: "200" accepts; "300" (temporary error), "400"
/// (authentication failure) and "500" (internal error) refuse the peer (300 closes it silently,
/// 400 and 500 send ERROR with the code first, as libzmq does). user_id and metadata become the
/// properties of the peer's messages (message_properties: "User-Id" and the metadata's names).
struct zap_reply {
    std::string status_code = "200";
    std::string status_text;
    std::string user_id;
    std::vector<std::pair<std::string, std::string>> metadata;
    bool accepted() const noexcept { return status_code == "200"; }
};

/// Called on the server socket's shard (or the blocking API's shard) for every peer that
/// completes the mechanism's own checks, before the peer is attached. It must not block (a
/// handler that must wait for something answers through a handler socket instead).
using zap_handler = std::function<zap_reply(const zap_request&)>;

/// Security settings of a socket (socket_options::security). NULL when nothing is set; CURVE when
/// curve_server or curve_serverkey is set; PLAIN when plain_server or plain_username is set.
struct security_options {
    /// CURVE server: needs curve_secretkey (curve_publickey may be left empty).
    bool curve_server = false;
    /// This socket's permanent keys (raw 32 bytes or 40 Z85 characters).
    std::string curve_publickey;
    std::string curve_secretkey;
    /// CURVE client: the server's public key. A client needs it and its own key pair.
    std::string curve_serverkey;
    /// PLAIN server (checks the peers' usernames and passwords through zap), or client (sends these).
    bool plain_server = false;
    std::string plain_username;
    std::string plain_password;
    /// Asked for every peer of a CURVE or PLAIN server (and of a NULL one with a zap_domain).
    /// Empty: the handler socket bound at inproc://zeromq.zap.01 on this socket's engine is
    /// asked, if there is one; with neither, as libzmq 4.3.4: CURVE and NULL peers are accepted,
    /// PLAIN peers refused (zap_unavailable).
    zap_handler zap;
    /// ZAP's domain field. Set on a NULL socket, it makes the socket ask ZAP too (libzmq's rule).
    std::string zap_domain;
};

/// An allow list usable as a ZAP handler: CURVE client keys, PLAIN username/password pairs and
/// peer addresses. A peer passes when its address is allowed (or no address is listed) and its
/// credentials are listed (a mechanism with nothing listed accepts any credentials). Shared:
/// handler() keeps referring to this list, so entries added later count. Change it only on the
/// thread the socket's handler runs on, or before the socket exists.
class allow_list {
public:
    allow_list();
    /// A client key, raw or Z85. Throws std::invalid_argument for a malformed key.
    void allow_key(std::string_view key);
    void allow_user(std::string username, std::string password);
    /// A peer's address as ZAP gives it: an IP address ("127.0.0.1") or an ipc path.
    void allow_address(std::string address);
    /// Refuses this address even when other rules would pass it.
    void deny_address(std::string address);
    /// The handler for security_options::zap. Peers refused get "400".
    zap_handler handler() const;
    /// Peers refused so far (all handlers of this list).
    std::uint64_t refused() const noexcept;

private:
    struct state;
    std::shared_ptr<state> s_;
};

}  // namespace strix::link
