#pragma once
// The OpenSSL contexts behind strix::tls_server and strix::tls_client (include/strix/net/tls.hpp),
// for the transport (tls_stream.cpp). An SSL_CTX is shared by every shard: OpenSSL locks inside
// it only where state is shared (SSL_new, the session cache, which servers leave off).
#include <strix/net/tls.hpp>

#include <openssl/ssl.h>

#include <string>

namespace strix::detail {

struct ssl_ctx_deleter {
    void operator()(SSL_CTX* c) const noexcept { SSL_CTX_free(c); }
};
using ssl_ctx_ptr = std::unique_ptr<SSL_CTX, ssl_ctx_deleter>;

struct ssl_deleter {
    void operator()(SSL* s) const noexcept { SSL_free(s); }
};
using ssl_ptr = std::unique_ptr<SSL, ssl_deleter>;

struct tls_server_state {
    ssl_ctx_ptr ctx;
    std::string alpn_wire;  // the server's ALPN list in wire format (length-prefixed names)
};

struct tls_client_state {
    ssl_ctx_ptr ctx;
};

/// OpenSSL's error queue as one line ("reason; reason"), emptied; `fallback` when it is empty.
std::string drain_ssl_errors(const char* fallback = "unknown error");

/// An SSL for one accepted connection (nullptr when OpenSSL cannot make one: out of memory).
ssl_ptr new_server_ssl(const tls_server& srv);
/// An SSL for one outbound connection to `server_name` (a DNS name or a numeric address, which
/// the certificate must match when the client verifies; DNS names also go out as SNI).
ssl_ptr new_client_ssl(const tls_client& cl, const std::string& server_name);

/// OpenSSL's new-session callback for client contexts: the connection keeps the session.
int tls_stream_new_session(SSL* ssl, SSL_SESSION* session);

}  // namespace strix::detail
