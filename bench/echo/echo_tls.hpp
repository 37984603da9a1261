#pragma once
// TLS for strix-echo-bench: an OpenSSL 3 client context and the small helpers the echo and the
// handshake loops share. The loops stay plain epoll: every call here is non-blocking, and an
// SSL_ERROR_WANT_READ / _WANT_WRITE only means "call again when epoll says so".
//
//   socket fd --(SSL_set_fd)--> SSL* --(SSL_read / SSL_write of echo bytes)--> the loop's buffers
//
// Verification: with --ca FILE the server's chain must verify against FILE and its certificate
// must name the address connected to (the --host IP, or --server-name, which is also sent as
// SNI); without --ca nothing is verified, which is what a benchmark against a throwaway
// certificate wants and what --help says.

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

namespace strix {

struct echo_tls_options {
    bool enabled = false;
    std::string ca;           // empty: no verification
    std::string server_name;  // SNI and the name verified; empty: verify the host IP, no SNI
    std::string host;         // numeric IPv4 connected to
    std::string alpn;         // offered when not empty; the server must select it
    std::string max_version = "1.3";
};

/// Every queued OpenSSL error of this thread as one line ("" when none), emptying the queue.
/// Any thread.
inline std::string echo_tls_errors() {
    std::string out;
    char buf[256];
    while (const unsigned long e = ::ERR_get_error()) {
        ::ERR_error_string_n(e, buf, sizeof buf);
        if (!out.empty()) out += "; ";
        out += buf;
    }
    return out;
}

/// What a non-blocking SSL call's return value means to the loop.
enum class echo_tls_io { ok, want_read, want_write, closed, failed };

/// Sorts the return value of SSL_connect / SSL_read / SSL_write. On closed or failed, `why`
/// says what happened (OpenSSL's error queue, the verification result, or errno). Any thread,
/// on an SSL it owns.
inline echo_tls_io echo_tls_result(SSL* ssl, int ret, std::string& why) {
    if (ret > 0) return echo_tls_io::ok;
    const int err = ::SSL_get_error(ssl, ret);
    switch (err) {
        case SSL_ERROR_WANT_READ: return echo_tls_io::want_read;
        case SSL_ERROR_WANT_WRITE: return echo_tls_io::want_write;
        case SSL_ERROR_ZERO_RETURN: why = "the server sent close_notify"; return echo_tls_io::closed;
        case SSL_ERROR_SYSCALL: {
            const int saved = errno;
            why = echo_tls_errors();
            if (why.empty()) why = saved != 0 ? std::strerror(saved) : "the server closed the connection";
            return echo_tls_io::closed;
        }
        default: {
            why = echo_tls_errors();
            const long vr = ::SSL_get_verify_result(ssl);
            if (vr != X509_V_OK) {
                why += std::string(why.empty() ? "" : "; ") +
                       "certificate verification: " + ::X509_verify_cert_error_string(vr);
            }
            if (why.empty()) why = "SSL error " + std::to_string(err);
            return echo_tls_io::failed;
        }
    }
}

/// One client context for the whole run (SSL_CTX is safe to share between threads once set up).
class echo_tls_context {
public:
  /// Builds the context; throws std::runtime_error with one sentence naming the file or setting
  /// that is wrong. Main thread, before the workers start.
    explicit echo_tls_context(const echo_tls_options& o) : opt_(o) {
        ctx_.reset(::SSL_CTX_new(::TLS_client_method()));
        if (!ctx_) throw std::runtime_error("SSL_CTX_new: " + echo_tls_errors());
        SSL_CTX* ctx = ctx_.get();
        ::SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        ::SSL_CTX_set_max_proto_version(ctx, o.max_version == "1.2" ? TLS1_2_VERSION : TLS1_3_VERSION);
    // read_ahead lets one read(2) take several records: without it OpenSSL reads each record's
    // 5-byte header and its body with two calls.
        ::SSL_CTX_set_read_ahead(ctx, 1);
    // A retried SSL_write may come from a buffer that moved (echo_buffer compacts) and may be
    // longer than the first try (new messages appended behind the unsent ones).
        ::SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
        if (!o.ca.empty()) {
            if (::SSL_CTX_load_verify_locations(ctx, o.ca.c_str(), nullptr) != 1) {
                throw std::runtime_error("--ca " + o.ca + ": cannot load it as PEM certificates (" + echo_tls_errors() +
                                         ")");
            }
            ::SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
        } else {
            ::SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
        }
        if (!o.alpn.empty()) {
            if (o.alpn.size() > 255) throw std::runtime_error("--alpn: a protocol name is at most 255 bytes");
            std::string wire(1, static_cast<char>(o.alpn.size()));
            wire += o.alpn;
            if (::SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(wire.data()),
                                          static_cast<unsigned>(wire.size())) != 0) {
                throw std::runtime_error("--alpn " + o.alpn + ": " + echo_tls_errors());
            }
        }
    }

  /// A client SSL on connected-or-connecting socket fd, with SNI and the name to verify set;
  /// nullptr (and why) on failure. Any thread.
    SSL* open(int fd, std::string& why) const {
        SSL* ssl = ::SSL_new(ctx_.get());
        if (ssl == nullptr || ::SSL_set_fd(ssl, fd) != 1) {
            why = "SSL_new: " + echo_tls_errors();
            ::SSL_free(ssl);
            return nullptr;
        }
        ::SSL_set_connect_state(ssl);
        bool named = true;
        if (!opt_.server_name.empty()) {
            named = ::SSL_set_tlsext_host_name(ssl, opt_.server_name.c_str()) == 1 &&
                    (opt_.ca.empty() || ::SSL_set1_host(ssl, opt_.server_name.c_str()) == 1);
        } else if (!opt_.ca.empty()) {
      // No SNI for an IP literal (RFC 6066); the certificate must carry it as an IP SAN.
            named = ::X509_VERIFY_PARAM_set1_ip_asc(::SSL_get0_param(ssl), opt_.host.c_str()) == 1;
        }
        if (!named) {
            why = "cannot set the server name to verify: " + echo_tls_errors();
            ::SSL_free(ssl);
            return nullptr;
        }
        return ssl;
    }

  /// After a completed handshake: "" when it is acceptable, else why not (the ALPN the server
  /// selected differs from --alpn). Any thread, on an SSL it owns.
    std::string check(SSL* ssl) const {
        if (opt_.alpn.empty()) return {};
        const unsigned char* sel = nullptr;
        unsigned len = 0;
        ::SSL_get0_alpn_selected(ssl, &sel, &len);
        const std::string got(reinterpret_cast<const char*>(sel), len);
        if (got == opt_.alpn) return {};
        return "the server selected ALPN '" + got + "', not '" + opt_.alpn + "'";
    }

  /// True when the server's certificate is verified (--ca given). Any thread.
    bool verifies() const { return !opt_.ca.empty(); }

private:
    struct ctx_free {
        void operator()(SSL_CTX* c) const noexcept { ::SSL_CTX_free(c); }
    };
    echo_tls_options opt_;
    std::unique_ptr<SSL_CTX, ctx_free> ctx_;
};

/// "TLSv1.3 TLS_AES_128_GCM_SHA256" for a connection after its handshake. Any thread, on an SSL
/// it owns.
inline std::string echo_tls_describe(SSL* ssl) {
    std::string out = ::SSL_get_version(ssl);
    out += ' ';
    out += ::SSL_CIPHER_get_name(::SSL_get_current_cipher(ssl));
    return out;
}

}  // namespace strix
