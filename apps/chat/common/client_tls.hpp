#pragma once
// client_tls: TLS for the chat programs that are not built on strix::net (strix-chat-client's
// poll() loop, strix-chat-load's epoll loops): OpenSSL on a connected socket they own. Every call
// returns at once with what it needs next, so a non-blocking loop drives it as it drives the
// plain socket:
//
//   client_tls_context ctx({.ca_file = "ca.pem"});   // once: file reads, may block
//   client_tls_conn c(ctx, fd, "chat.example.org");  // after connect()
//   c.handshake()  until done: want_read / want_write say which readiness to wait for
//   c.read(...), c.write(...)  the same statuses; done with the bytes moved
//
// Verification: the server's chain against the CA file (or the system's trust store) and its
// name: a DNS name (also sent as SNI) or an IP address, as the user gave it to connect.
// TLS 1.2 and 1.3 only, as the server.

#include <cstddef>
#include <cstdint>
#include <string>

struct ssl_st;      // OpenSSL's SSL
struct ssl_ctx_st;  // OpenSSL's SSL_CTX

namespace strix::chat {

struct client_tls_config {
    std::string ca_file;  // PEM trust anchors; empty = the system's trust store
};

/// Trust anchors and settings shared by every connection of a program.
class client_tls_context {
public:
    /// Loads the CA file (or the system store). Throws std::runtime_error naming the file and
    /// OpenSSL's reason. Any thread; blocking.
    explicit client_tls_context(const client_tls_config& cfg);
    ~client_tls_context();
    client_tls_context(const client_tls_context&) = delete;
    client_tls_context& operator=(const client_tls_context&) = delete;

    ssl_ctx_st* native() const noexcept { return ctx_; }

private:
    ssl_ctx_st* ctx_ = nullptr;
};

enum class tls_status : std::uint8_t {
    done,        ///< the handshake is complete, or read/write moved `n` bytes
    want_read,   ///< call again once the socket is readable
    want_write,  ///< call again once the socket is writable
    closed,      ///< the server ended the connection (close_notify or end of stream)
    failed,      ///< see error()
};

struct tls_result {
    tls_status status = tls_status::failed;
    std::size_t n = 0;
};

/// One TLS client connection on a connected socket (not owned; non-blocking or not). Used by one
/// thread at a time.
class client_tls_conn {
public:
    /// Prepares the handshake for `server_name` (a DNS name or an IP address). Throws
    /// std::runtime_error when the name cannot be used.
    client_tls_conn(const client_tls_context& ctx, int fd, const std::string& server_name);
    ~client_tls_conn();
    client_tls_conn(const client_tls_conn&) = delete;
    client_tls_conn& operator=(const client_tls_conn&) = delete;

    /// One step of the handshake: done, want_read, want_write or failed (error() says why, with
    /// the fix when there is an obvious one: the CA, the name, a server without TLS).
    tls_status handshake();
    /// Decrypted bytes into buf. A read may also need the socket writable (want_write).
    tls_result read(void* buf, std::size_t len);
    /// Encrypts and sends up to len bytes (whole records; `n` says how many were taken). After
    /// want_read / want_write call again with the same bytes at the front (more may follow).
    tls_result write(const void* buf, std::size_t len);

    /// Why the last call failed. Same thread.
    const std::string& error() const noexcept { return error_; }
    /// After the handshake: "TLSv1.3 TLS_AES_256_GCM_SHA384, certificate <describe_certificate>".
    std::string describe() const;

private:
    tls_status fail(int ret, const char* during);

    ssl_st* ssl_ = nullptr;
    std::string server_name_;
    std::string error_;
};

}  // namespace strix::chat
