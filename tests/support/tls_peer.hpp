#pragma once
// A blocking OpenSSL client over a loopback socket: a TLS peer that is not strix, for tests.
#include "support/loopback.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <string>
#include <vector>

namespace strix::test {

class tls_peer {
public:
    struct options {
        std::string ca;           // verify against this CA file; empty = no verification
        std::string host = "localhost";
        SSL_SESSION* resume = nullptr;
        std::vector<std::string> alpn;
        int max_version = 0;      // e.g. TLS1_2_VERSION; 0 = the highest
    };

    tls_peer(std::uint16_t port, const options& o) {
        ctx_ = SSL_CTX_new(TLS_client_method());
        SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
        if (o.max_version) SSL_CTX_set_max_proto_version(ctx_, o.max_version);
        if (!o.ca.empty()) {
            SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
            SSL_CTX_load_verify_locations(ctx_, o.ca.c_str(), nullptr);
        }
        if (!o.alpn.empty()) {
            std::string w;
            for (auto& a : o.alpn) w += static_cast<char>(a.size()) + a;
            SSL_CTX_set_alpn_protos(ctx_, reinterpret_cast<const unsigned char*>(w.data()),
                                    static_cast<unsigned>(w.size()));
        }
        fd_ = connect_tcp(port);
        ssl_ = SSL_new(ctx_);
        SSL_set_fd(ssl_, fd_);
        SSL_set_tlsext_host_name(ssl_, o.host.c_str());
        if (!o.ca.empty()) SSL_set1_host(ssl_, o.host.c_str());
        if (o.resume) SSL_set_session(ssl_, o.resume);
    }
    ~tls_peer() {
        // close_notify first, as a well-behaved client does: OpenSSL marks the session of a
        // connection freed without one as not resumable.
        if (SSL_is_init_finished(ssl_)) SSL_shutdown(ssl_);
        SSL_free(ssl_);
        SSL_CTX_free(ctx_);
        if (fd_ >= 0) ::close(fd_);
    }
    tls_peer(const tls_peer&) = delete;
    tls_peer& operator=(const tls_peer&) = delete;

    /// The handshake; false with error() set when it failed.
    bool handshake() {
        int r, e, sys;
        do {  // a blocking read interrupted by a signal (EINTR) is tried again
            ERR_clear_error();
            errno = 0;
            r = SSL_connect(ssl_);
            if (r == 1) return true;
            e = SSL_get_error(ssl_, r);
            sys = errno;
        } while (interrupted(e, sys));
        char buf[256];
        ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
        error_ = std::string(buf) + " (SSL_get_error " + std::to_string(e) + ", errno " + std::to_string(sys) + ")";
        return false;
    }
    bool write_all(const bytes& b) { return write_all(b.data(), b.size()); }
    bool write_all(const void* p, std::size_t n) {
        std::size_t off = 0;
        while (off < n) {
            errno = 0;
            const int w = SSL_write(ssl_, static_cast<const char*>(p) + off, static_cast<int>(n - off));
            if (w <= 0 && interrupted(SSL_get_error(ssl_, w), errno)) continue;
            if (w <= 0) return false;
            off += static_cast<std::size_t>(w);
        }
        return true;
    }
    bool read_exact(void* out, std::size_t n) {
        std::size_t off = 0;
        while (off < n) {
            errno = 0;
            const int r = SSL_read(ssl_, static_cast<char*>(out) + off, static_cast<int>(n - off));
            if (r <= 0 && interrupted(SSL_get_error(ssl_, r), errno)) continue;
            if (r <= 0) return false;
            off += static_cast<std::size_t>(r);
        }
        return true;
    }
    /// Sends a length-prefixed frame and reads the echo back; true when it matches.
    bool echo(const bytes& body) {
        bytes f = frame_le32(body), back(f.size());
        return write_all(f) && read_exact(back.data(), back.size()) && back == f;
    }
    /// What a read after the peer's end returns: SSL_ERROR_ZERO_RETURN for close_notify.
    int read_end() {
        char c;
        for (;;) {
            errno = 0;
            const int r = SSL_read(ssl_, &c, 1);
            if (r > 0) return -1;
            const int e = SSL_get_error(ssl_, r);
            if (!interrupted(e, errno)) return e;
        }
    }

    SSL* ssl() const { return ssl_; }
    int fd() const { return fd_; }
    const std::string& error() const { return error_; }
    /// The session to resume next time (the caller frees it).
    SSL_SESSION* session() const { return SSL_get1_session(ssl_); }

private:
    static bool interrupted(int ssl_error, int sys) {
        return (ssl_error == SSL_ERROR_WANT_READ || ssl_error == SSL_ERROR_WANT_WRITE ||
                ssl_error == SSL_ERROR_SYSCALL) &&
               sys == EINTR;
    }

    SSL_CTX* ctx_ = nullptr;
    SSL* ssl_ = nullptr;
    int fd_ = -1;
    std::string error_;
};

}  // namespace strix::test
