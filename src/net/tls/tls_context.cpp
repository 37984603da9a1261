// Loading certificates, keys and trust stores into OpenSSL contexts, with errors that name the
// file and the reason. Everything here may block on the file system: never on a shard.
#include "net/tls/tls_state.hpp"

#include <strix/core/log.hpp>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

namespace strix {
namespace detail {

std::string drain_ssl_errors(const char* fallback) {
    std::string out;
    while (unsigned long e = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        const char* reason = ERR_reason_error_string(e);
        if (!out.empty()) out += "; ";
        out += reason ? reason : buf;
    }
    return out.empty() ? fallback : out;
}

namespace {

// A file that cannot be opened gets the system's reason, which OpenSSL's queue words badly.
void require_readable(const std::string& what, const std::string& file) {
    if (file.empty()) throw tls_error(what + ": no file given");
    std::ifstream f(file);
    if (!f) throw tls_error(what + " " + file + ": " + std::strerror(errno));
}

ssl_ctx_ptr new_ctx(const SSL_METHOD* method) {
    ssl_ctx_ptr ctx(SSL_CTX_new(method));
    if (!ctx) throw tls_error("TLS: cannot create a context: " + drain_ssl_errors());
    SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
    // TLS 1.3 suites: AES-128-GCM first (as Go's crypto/tls and rustls order them; OpenSSL's own
    // default puts AES-256 first, which costs more per record for no practical gain), ChaCha20 for
    // peers without AES instructions. Servers choose by their own order (below).
    SSL_CTX_set_ciphersuites(ctx.get(), "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384");
    SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    // The transport's writes never block (they append to the session's output), so a record is
    // always written whole; moving buffers between calls is allowed for the same reason.
    SSL_CTX_set_mode(ctx.get(), SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // No SSL_MODE_RELEASE_BUFFERS: it frees and allocates OpenSSL's record buffers around every
    // record. An idle connection gives them back through the idle sweep instead (tls_stream::trim).
    return ctx;
}

std::string alpn_wire(const std::vector<std::string>& names) {
    std::string w;
    for (const auto& n : names) {
        if (n.empty() || n.size() > 255) throw tls_error("TLS: ALPN protocol names are 1 to 255 bytes: '" + n + "'");
        w += static_cast<char>(n.size());
        w += n;
    }
    return w;
}

// Picks the first of the server's protocols the client offers; no overlap = no ALPN (the
// connection goes on: an application that requires one checks session::tls()->alpn).
int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned inlen,
                void* arg) {
    const auto* st = static_cast<const tls_server_state*>(arg);
    unsigned char* chosen = nullptr;
    const auto* server = reinterpret_cast<const unsigned char*>(st->alpn_wire.data());
    if (SSL_select_next_proto(&chosen, outlen, server, static_cast<unsigned>(st->alpn_wire.size()), in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
}

std::shared_ptr<tls_server_state> load_server_state(const tls_server_config& cfg) {
    require_readable("TLS certificate", cfg.cert_file);
    require_readable("TLS key", cfg.key_file);
    auto st = std::make_shared<tls_server_state>();
    st->ctx = new_ctx(TLS_server_method());
    SSL_CTX* ctx = st->ctx.get();
    ERR_clear_error();
    if (SSL_CTX_use_certificate_chain_file(ctx, cfg.cert_file.c_str()) != 1)
        throw tls_error("TLS certificate " + cfg.cert_file + ": " + drain_ssl_errors());
    if (SSL_CTX_use_PrivateKey_file(ctx, cfg.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
        throw tls_error("TLS key " + cfg.key_file + " (for certificate " + cfg.cert_file + "): " + drain_ssl_errors());
    if (SSL_CTX_check_private_key(ctx) != 1)
        throw tls_error("TLS key " + cfg.key_file + " does not belong to certificate " + cfg.cert_file + ": " +
                        drain_ssl_errors());
    // Resumption rides on stateless tickets; the shared server-side cache (a lock every shard
    // would take) stays off.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (cfg.session_tickets == 0) {
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
        SSL_CTX_set_num_tickets(ctx, 0);
    } else {
        SSL_CTX_set_num_tickets(ctx, cfg.session_tickets);
    }
    st->alpn_wire = alpn_wire(cfg.alpn);
    if (!st->alpn_wire.empty()) SSL_CTX_set_alpn_select_cb(ctx, select_alpn, st.get());
    return st;
}

}  // namespace

ssl_ptr new_server_ssl(const tls_server& srv) {
    auto st = srv.current();
    ssl_ptr ssl(SSL_new(st->ctx.get()));  // holds its own reference on the context
    if (ssl) SSL_set_accept_state(ssl.get());
    return ssl;
}

ssl_ptr new_client_ssl(const tls_client& cl, const std::string& server_name) {
    ssl_ptr ssl(SSL_new(cl.state().ctx.get()));
    if (!ssl) return ssl;
    SSL_set_connect_state(ssl.get());
    if (!server_name.empty()) {
        in6_addr a6;
        in_addr a4;
        const bool numeric =
            ::inet_pton(AF_INET, server_name.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, server_name.c_str(), &a6) == 1;
        if (!numeric) SSL_set_tlsext_host_name(ssl.get(), server_name.c_str());  // SNI: names only
        if (cl.config().verify) {
            X509_VERIFY_PARAM* p = SSL_get0_param(ssl.get());
            const int ok = numeric ? X509_VERIFY_PARAM_set1_ip_asc(p, server_name.c_str())
                                   : X509_VERIFY_PARAM_set1_host(p, server_name.c_str(), 0);
            if (ok != 1) return nullptr;
        }
    }
    return ssl;
}

}  // namespace detail

struct tls_server::impl {
    std::atomic<std::shared_ptr<detail::tls_server_state>> current;
    std::mutex reload_lock;  // one reload at a time
};

namespace {
void announce_kernel_tls_once() {
    static std::once_flag once;
    std::call_once(once, [] { log(log_level::info, "TLS: {}", kernel_tls_status()); });
}
}  // namespace

tls_server::tls_server(tls_server_config cfg) : cfg_(std::move(cfg)), impl_(std::make_unique<impl>()) {}
tls_server::~tls_server() = default;

std::shared_ptr<tls_server> tls_server::load(tls_server_config cfg) {
    std::shared_ptr<tls_server> s(new tls_server(std::move(cfg)));
    s->impl_->current.store(detail::load_server_state(s->cfg_));
    announce_kernel_tls_once();
    return s;
}

void tls_server::reload() {
    std::lock_guard lock(impl_->reload_lock);
    impl_->current.store(detail::load_server_state(cfg_));
}

std::shared_ptr<detail::tls_server_state> tls_server::current() const { return impl_->current.load(); }

tls_client::tls_client(tls_client_config cfg) : cfg_(std::move(cfg)) {}
tls_client::~tls_client() = default;

std::shared_ptr<tls_client> tls_client::load(tls_client_config cfg) {
    std::shared_ptr<tls_client> c(new tls_client(std::move(cfg)));
    auto st = std::make_unique<detail::tls_client_state>();
    st->ctx = detail::new_ctx(TLS_client_method());
    SSL_CTX* ctx = st->ctx.get();
    ERR_clear_error();
    if (c->cfg_.verify) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
        if (!c->cfg_.ca_file.empty()) {
            detail::require_readable("TLS CA file", c->cfg_.ca_file);
            if (SSL_CTX_load_verify_locations(ctx, c->cfg_.ca_file.c_str(), nullptr) != 1)
                throw tls_error("TLS CA file " + c->cfg_.ca_file + ": " + detail::drain_ssl_errors());
        } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
            throw tls_error("TLS: cannot load the system trust store: " + detail::drain_ssl_errors());
        }
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    }
    const std::string alpn = detail::alpn_wire(c->cfg_.alpn);
    if (!alpn.empty() && SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(alpn.data()),
                                                 static_cast<unsigned>(alpn.size())) != 0)
        throw tls_error("TLS: cannot set ALPN: " + detail::drain_ssl_errors());
    // Sessions to resume are kept per connection by the transport (tls_stream), not by OpenSSL.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, detail::tls_stream_new_session);
    c->state_ = std::move(st);
    announce_kernel_tls_once();
    return c;
}

// Kernel TLS needs the `tls` upper-layer protocol on a connected TCP socket: try it once on a
// loopback pair.
std::string kernel_tls_status() {
    static const std::string status = [] {
        auto fail = [](const char* step) {
            return std::string("kernel TLS absent (") + step + ": " + std::strerror(errno) + ")";
        };
        int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (l < 0) return fail("socket");
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        std::string result;
        int c = -1, s = -1;
        if (::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || ::listen(l, 1) < 0 ||
            ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len) < 0) {
            result = fail("loopback listen");
        } else if ((c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
                   ::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 ||
                   (s = ::accept(l, nullptr, nullptr)) < 0) {
            result = fail("loopback connect");
        } else if (::setsockopt(c, SOL_TCP, TCP_ULP, "tls", 4) < 0) {
            result = fail("setsockopt TCP_ULP \"tls\"");
            result += ": records are encrypted in user space";
        } else {
            result = "kernel TLS available (the tls ULP attached); strix encrypts records in user space";
        }
        for (int fd : {c, s, l})
            if (fd >= 0) ::close(fd);
        return result;
    }();
    return status;
}

}  // namespace strix
