#pragma once
// TLS for strix::net sessions (OpenSSL 3): a server identity for listeners, a client trust
// configuration for outbound connections.
//
//   auto id = strix::tls_server::load({.cert_file = "cert.pem", .key_file = "key.pem"});
//   strix::server srv(eng, {.port = 7443, .tls = id}, make_handler);   // accepted sessions: TLS
//   ...
//   id->reload();   // e.g. on SIGHUP: new connections get the files' new content
//
//   auto trust = strix::tls_client::load({.ca_file = "ca.pem"});
//   group.connect(ep, {.tls = trust, .server_name = "chat.example.org"});
//
// The TLS layer sits between the socket and the framer (docs/architecture.md, "Layers"): the
// session above it sees plaintext and does not know which I/O backend runs below. The handshake
// runs on the session's shard without blocking it; everything that may block (reading PEM files,
// the system trust store) happens in load() and reload(), which must not run on a shard.
//
// Versions: TLS 1.2 and 1.3 only. Renegotiation is refused. Resumption: TLS 1.3 tickets (and TLS
// 1.2 session tickets); clients keep one session per connection and offer it when reconnecting.
#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace strix {

/// A PEM file that cannot be read or used, a key that does not match its certificate, a trust
/// store that cannot be loaded: what() names the file and OpenSSL's reason.
class tls_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct tls_server_config {
    std::string cert_file;                // PEM: the certificate, then its chain
    std::string key_file;                 // PEM: the private key
    std::vector<std::string> alpn;        // protocols offered, in the server's order; empty = no ALPN
    std::chrono::milliseconds handshake_timeout{10000};  // a handshake not done by then is closed
    // Handshakes in progress on one shard, and from one address on one shard, beyond which new
    // connections are closed at once (counted in strix_tls_handshakes_refused_total).
    std::size_t max_handshakes_per_shard = 4096;
    std::size_t max_handshakes_per_address = 256;
    unsigned session_tickets = 2;  // TLS 1.3 tickets sent after a full handshake; 0 = no resumption
};

namespace detail {
struct tls_server_state;
struct tls_client_state;
struct tls_resume_slot;  // a client connection's session to resume (OpenSSL's type stays inside)
struct tls_resume_slot_deleter {
    void operator()(tls_resume_slot* s) const noexcept;
};
}  // namespace detail

/// A server's certificate and key, loaded and ready for listeners. Shared by every shard.
class tls_server {
public:
    /// Reads and checks the files (blocking: call it off the shards). Throws tls_error.
    static std::shared_ptr<tls_server> load(tls_server_config cfg);
    ~tls_server();

    /// Reads the files again (blocking: not on a shard). Connections accepted from now on use
    /// the new certificate; open ones keep theirs. On error the old one stays and tls_error is
    /// thrown. Any thread but a shard's.
    void reload();
    const tls_server_config& config() const noexcept { return cfg_; }

    /// For the transport (any thread): the context new connections use.
    std::shared_ptr<detail::tls_server_state> current() const;

private:
    explicit tls_server(tls_server_config cfg);
    tls_server_config cfg_;
    struct impl;
    std::unique_ptr<impl> impl_;
};

struct tls_client_config {
    std::string ca_file;         // PEM trust anchors; empty = the system's trust store
    bool verify = true;          // check the server's chain and its name; false only for tests
    std::vector<std::string> alpn;  // protocols offered; empty = no ALPN
    std::chrono::milliseconds handshake_timeout{10000};
};

/// Trust anchors and options for outbound TLS. Shared by every shard.
class tls_client {
public:
    /// Loads the CA file or the system store (blocking: call it off the shards). Throws tls_error.
    static std::shared_ptr<tls_client> load(tls_client_config cfg);
    ~tls_client();
    const tls_client_config& config() const noexcept { return cfg_; }
    /// For the transport.
    detail::tls_client_state& state() const noexcept { return *state_; }

private:
    explicit tls_client(tls_client_config cfg);
    tls_client_config cfg_;
    std::unique_ptr<detail::tls_client_state> state_;
};

/// What a TLS session negotiated (session::tls()).
struct tls_info {
    std::string version;      // "TLSv1.3", "TLSv1.2"
    std::string cipher;       // e.g. "TLS_AES_128_GCM_SHA256"
    std::string alpn;         // the protocol agreed, or empty
    std::string server_name;  // SNI: what the client asked for (server side) or sent (client side)
    bool resumed = false;     // the handshake resumed an earlier session
};

/// Whether this kernel can take over the TLS record layer (the `tls` upper-layer protocol), and if
/// not why; probed once. strix does not hand the record layer to the kernel yet: this reports.
std::string kernel_tls_status();

}  // namespace strix
