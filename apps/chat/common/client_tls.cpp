#include "client_tls.hpp"

#include "certificate_text.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace strix::chat {
namespace {

// OpenSSL's reason for the last error on this thread's queue (and the queue emptied).
std::string ssl_reason() {
    const unsigned long e = ERR_peek_last_error();
    std::string out;
    if (e != 0) {
        const char* r = ERR_reason_error_string(e);
        out = r != nullptr ? r : "error " + std::to_string(ERR_GET_REASON(e));
    }
    ERR_clear_error();
    return out.empty() ? std::string("unknown TLS error") : out;
}

bool is_ip_address(const std::string& s) {
    in_addr a4{};
    in6_addr a6{};
    return ::inet_pton(AF_INET, s.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, s.c_str(), &a6) == 1;
}

// What to do about a certificate the client did not accept, where there is an obvious answer.
const char* verify_hint(long v) {
    switch (v) {
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
        case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
        case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
            return " (--ca must name the certificate of the CA that signed the server's certificate, or the "
                   "server's certificate itself when it is self-signed)";
        case X509_V_ERR_HOSTNAME_MISMATCH:
        case X509_V_ERR_IP_ADDRESS_MISMATCH:
            return " (connect by a name or address the certificate lists, or give it with --server-name)";
        case X509_V_ERR_CERT_HAS_EXPIRED: return " (the server needs a new certificate)";
        case X509_V_ERR_CERT_NOT_YET_VALID: return " (check the clocks of this machine and the server)";
        default: return "";
    }
}

}  // namespace

client_tls_context::client_tls_context(const client_tls_config& cfg) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (ctx_ == nullptr) throw std::runtime_error("TLS: cannot create a context: " + ssl_reason());
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx_, SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    // Partial writes: a write hands over whole records and says how many bytes, so a large
    // frame never waits for all of itself to fit the socket. Moving buffer: the programs append
    // to (and so may reallocate) the bytes of a write that has to be called again.
    SSL_CTX_set_mode(ctx_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (cfg.ca_file.empty()) {
        if (SSL_CTX_set_default_verify_paths(ctx_) != 1) {
            const std::string why = ssl_reason();
            SSL_CTX_free(ctx_);
            throw std::runtime_error("TLS: cannot load the system's trust store: " + why + " (give --ca FILE)");
        }
        return;
    }
    // fopen first for the system's words ("No such file or directory"); OpenSSL's are vaguer.
    if (FILE* f = std::fopen(cfg.ca_file.c_str(), "r")) {
        std::fclose(f);
    } else {
        const int err = errno;
        SSL_CTX_free(ctx_);
        throw std::runtime_error("--ca " + cfg.ca_file + ": " + std::strerror(err));
    }
    if (SSL_CTX_load_verify_file(ctx_, cfg.ca_file.c_str()) != 1) {
        const std::string why = ssl_reason();
        SSL_CTX_free(ctx_);
        throw std::runtime_error("--ca " + cfg.ca_file + ": " + why + " (a PEM file with the CA's certificate)");
    }
}

client_tls_context::~client_tls_context() { SSL_CTX_free(ctx_); }

client_tls_conn::client_tls_conn(const client_tls_context& ctx, int fd, const std::string& server_name)
    : server_name_(server_name) {
    ssl_ = SSL_new(ctx.native());
    if (ssl_ == nullptr) throw std::runtime_error("TLS: cannot create a connection: " + ssl_reason());
    SSL_set_fd(ssl_, fd);
    SSL_set_connect_state(ssl_);
    const bool ip = is_ip_address(server_name);
    // SNI carries names only (RFC 6066); an address is verified against the certificate's IP SANs.
    if (!ip && SSL_set_tlsext_host_name(ssl_, server_name.c_str()) != 1) {
        SSL_free(ssl_);
        throw std::runtime_error("TLS: cannot use '" + server_name + "' as the server name: " + ssl_reason());
    }
    X509_VERIFY_PARAM* p = SSL_get0_param(ssl_);
    X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    const int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(p, server_name.c_str())
                      : X509_VERIFY_PARAM_set1_host(p, server_name.c_str(), 0);
    if (ok != 1) {
        SSL_free(ssl_);
        throw std::runtime_error("TLS: cannot verify the server as '" + server_name + "'");
    }
}

client_tls_conn::~client_tls_conn() {
    // close_notify when it fits in the socket at once; a program closing the connection does not
    // wait for it (and the server treats a missing one like the end of the stream).
    if (SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);
    ERR_clear_error();
    SSL_free(ssl_);
}

tls_status client_tls_conn::handshake() {
    for (;;) {
        ERR_clear_error();
        errno = 0;
        const int r = SSL_do_handshake(ssl_);
        if (r == 1) return tls_status::done;
        if (SSL_get_error(ssl_, r) == SSL_ERROR_SYSCALL && errno == EINTR) continue;
        const tls_status s = fail(r, "TLS handshake");
        // A handshake that ends early is a failure, whatever ended it.
        return s == tls_status::closed ? tls_status::failed : s;
    }
}

tls_result client_tls_conn::read(void* buf, std::size_t len) {
    const int want = static_cast<int>(std::min<std::size_t>(len, INT_MAX));
    for (;;) {
        ERR_clear_error();
        errno = 0;
        const int r = SSL_read(ssl_, buf, want);
        if (r > 0) return {tls_status::done, static_cast<std::size_t>(r)};
        if (SSL_get_error(ssl_, r) == SSL_ERROR_SYSCALL && errno == EINTR) continue;
        return {fail(r, "TLS read"), 0};
    }
}

tls_result client_tls_conn::write(const void* buf, std::size_t len) {
    const int want = static_cast<int>(std::min<std::size_t>(len, INT_MAX));
    for (;;) {
        ERR_clear_error();
        errno = 0;
        const int r = SSL_write(ssl_, buf, want);
        if (r > 0) return {tls_status::done, static_cast<std::size_t>(r)};
        if (SSL_get_error(ssl_, r) == SSL_ERROR_SYSCALL && errno == EINTR) continue;
        return {fail(r, "TLS write"), 0};
    }
}

tls_status client_tls_conn::fail(int ret, const char* during) {
    const int sys = errno;
    const bool handshaking = SSL_is_init_finished(ssl_) == 0;
    switch (SSL_get_error(ssl_, ret)) {
        case SSL_ERROR_WANT_READ: return tls_status::want_read;
        case SSL_ERROR_WANT_WRITE: return tls_status::want_write;
        case SSL_ERROR_ZERO_RETURN: error_ = "the server closed the TLS connection"; return tls_status::closed;
        case SSL_ERROR_SYSCALL:
            ERR_clear_error();
            if (handshaking) {
                error_ = std::string(during) + " with " + server_name_ + ": the server closed the connection" +
                         (sys != 0 ? std::string(" (") + std::strerror(sys) + ")" : std::string()) +
                         "; does it serve TLS on this port (strix-chat-server --tls-cert)?";
                return tls_status::failed;
            }
            if (sys == 0) {
                error_ = "the server closed the connection";
                return tls_status::closed;
            }
            error_ = std::string(during) + ": " + std::strerror(sys);
            return tls_status::failed;
        default: break;
    }
    const long verify = SSL_get_verify_result(ssl_);
    if (handshaking && verify != X509_V_OK) {
        ERR_clear_error();
        error_ = "TLS: the server's certificate is not trusted for " + server_name_ + ": " +
                 X509_verify_cert_error_string(verify) + verify_hint(verify);
        return tls_status::failed;
    }
    const std::string why = ssl_reason();
    error_ = std::string(during) + " with " + server_name_ + " failed: " + why;
    // A plain server answers a ClientHello with chat frames (or nothing), which do not parse as
    // TLS records.
    if (handshaking && (why.find("wrong version number") != std::string::npos ||
                        why.find("packet length too long") != std::string::npos ||
                        why.find("record layer failure") != std::string::npos))
        error_ += " (does the server serve TLS on this port? strix-chat-server needs --tls-cert for it)";
    return tls_status::failed;
}

std::string client_tls_conn::describe() const {
    const SSL_CIPHER* c = SSL_get_current_cipher(ssl_);
    return std::string(SSL_get_version(ssl_)) + " " + (c != nullptr ? SSL_CIPHER_get_name(c) : "?") +
           (SSL_session_reused(ssl_) != 0 ? " (resumed)" : "") + ", certificate " +
           describe_certificate(SSL_get0_peer_certificate(ssl_));
}

}  // namespace strix::chat
