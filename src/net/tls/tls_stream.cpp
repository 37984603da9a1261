// TLS between a session and its socket's stream: see tls_stream.hpp.
#include "net/tls/tls_stream.hpp"

#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>
#include <strix/net/net_errc.hpp>

#include <openssl/bio.h>
#include <openssl/err.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace strix::detail {

namespace {

// Two full records (16 KiB of plaintext plus the largest expansion and header) fit in the
// ciphertext buffer, so OpenSSL always has a whole record to read once one arrived.
constexpr std::size_t cin_capacity = 2 * (16 * 1024 + 2048 + 5) + 64;
constexpr std::size_t record_plain = 16 * 1024;  // plaintext per SSL_write: one record
constexpr std::size_t cout_limit = 64 * 1024;    // ciphertext queued before encryption waits

}  // namespace

// The BIO OpenSSL reads records from and writes records to: reads come from the stream's
// ciphertext buffer, writes append to the chain the backend sends. It never blocks and never
// fails a write, so a record is written whole and SSL_write never wants to be called again.
struct tls_bio {
    static BIO_METHOD* method() {
        static BIO_METHOD* m = [] {
            BIO_METHOD* bm = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "strix tls_stream");
            BIO_meth_set_write_ex(bm, write);
            BIO_meth_set_read_ex(bm, read);
            BIO_meth_set_ctrl(bm, ctrl);
            BIO_meth_set_create(bm, [](BIO* b) {
                BIO_set_init(b, 1);
                return 1;
            });
            return bm;
        }();
        return m;
    }
    static int write(BIO* b, const char* data, std::size_t n, std::size_t* written) {
        auto* s = static_cast<tls_stream*>(BIO_get_data(b));
        s->cout_.append(std::as_bytes(std::span(data, n)));
        *written = n;
        return 1;
    }
    static int read(BIO* b, char* out, std::size_t n, std::size_t* got) {
        auto* s = static_cast<tls_stream*>(BIO_get_data(b));
        BIO_clear_retry_flags(b);
        const std::size_t avail = s->cin_tail_ - s->cin_head_;
        if (avail == 0) {
            BIO_set_retry_read(b);
            *got = 0;
            return 0;
        }
        const std::size_t k = std::min(n, avail);
        std::memcpy(out, s->cin_.get() + s->cin_head_, k);
        s->cin_head_ += k;
        if (s->cin_head_ == s->cin_tail_) s->cin_head_ = s->cin_tail_ = 0;
        *got = k;
        return 1;
    }
    static long ctrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }
};

// --- the handshake gate ---------------------------------------------------------------------------

bool tls_gate::enter(const std::string& addr, std::size_t max_total, std::size_t max_per_address) {
    if (max_total && total_ >= max_total) return false;
    std::size_t& n = per_address_[addr];
    if (max_per_address && n >= max_per_address) return false;
    ++n;
    ++total_;
    return true;
}

void tls_gate::leave(const std::string& addr) noexcept {
    auto it = per_address_.find(addr);
    if (it == per_address_.end()) return;
    --total_;
    if (--it->second == 0) per_address_.erase(it);
}

// --- the stream -----------------------------------------------------------------------------------

tls_stream::tls_stream(ssl_ptr ssl, bool server, stream_user& user, tls_stream_config cfg)
    : ssl_(std::move(ssl)),
      user_(user),
      cfg_(std::move(cfg)),
      handshake_timer_([this] { on_handshake_timeout(); }),
      server_(server) {
    BIO* bio = BIO_new(tls_bio::method());
    BIO_set_data(bio, this);
    SSL_set_bio(ssl_.get(), bio, bio);  // one BIO both ways; the SSL owns it
    SSL_set_app_data(ssl_.get(), this);
    if (!server_ && cfg_.resume && cfg_.resume->session) SSL_set_session(ssl_.get(), cfg_.resume->session);
}

tls_stream::~tls_stream() {
    if (handshake_timer_.armed()) cfg_.owner->timers().cancel(handshake_timer_);
    leave_gate();
}

std::error_code tls_stream::start() {
    if (auto ec = inner_->start()) return ec;
    if (cfg_.handshake_timeout.count() > 0)
        cfg_.owner->timers().schedule(handshake_timer_, cfg_.owner->ticks_for(cfg_.handshake_timeout));
    if (!server_) handshake();  // the ClientHello
    return {};
}

void tls_stream::leave_gate() noexcept {
    if (cfg_.gate) {
        cfg_.gate->leave(cfg_.address);
        cfg_.gate = nullptr;
    }
}

void tls_stream::on_handshake_timeout() {
    if (established_ || closed_) return;
    bump(cfg_.counters->tls_timeouts);
    log_limited(log_level::info, "TLS {}: handshake not done in {} ms; closing", cfg_.address,
                cfg_.handshake_timeout.count());
    failed_ = true;
    leave_gate();
    user_.stream_failed(make_error_code(net_errc::tls_handshake_timeout));
}

// Empties the thread's OpenSSL error queue whatever happens: a stale entry would make the next
// SSL_get_error on this shard, for another connection, report a failure.
void tls_stream::fail(std::error_code ec, const char* what) {
    const std::string why = drain_ssl_errors(what);
    if (failed_ || closed_) return;
    failed_ = true;
    if (!established_) bump(cfg_.counters->tls_failures);
    log_limited(log_level::info, "TLS {}: {}: {}", cfg_.address, established_ ? "record error" : "handshake failed",
                why);
    leave_gate();
    user_.stream_failed(ec);
}

// Runs the handshake as far as the received bytes allow. False when the stream failed.
bool tls_stream::handshake() {
    ERR_clear_error();
    const int r = SSL_do_handshake(ssl_.get());
    push();  // this flight's records, an alert included
    if (r == 1) {
        established_ = true;
        if (handshake_timer_.armed()) cfg_.owner->timers().cancel(handshake_timer_);
        leave_gate();
        info_.version = SSL_get_version(ssl_.get());
        info_.cipher = SSL_get_cipher_name(ssl_.get());
        const unsigned char* alpn = nullptr;
        unsigned alpn_len = 0;
        SSL_get0_alpn_selected(ssl_.get(), &alpn, &alpn_len);
        if (alpn) info_.alpn.assign(reinterpret_cast<const char*>(alpn), alpn_len);
        if (const char* sni = SSL_get_servername(ssl_.get(), TLSEXT_NAMETYPE_host_name)) info_.server_name = sni;
        info_.resumed = SSL_session_reused(ssl_.get()) == 1;
        bump(cfg_.counters->tls_handshakes);
        if (info_.resumed) bump(cfg_.counters->tls_resumed);
        user_.established();
        if (closed_) return false;
        user_.send_ready();  // what the session queued meanwhile goes out now
        return true;
    }
    const int e = SSL_get_error(ssl_.get(), r);
    if (e == SSL_ERROR_WANT_READ) return true;
    fail(make_error_code(net_errc::tls_handshake_failed),
         e == SSL_ERROR_SYSCALL ? "the peer left" : "handshake failed");
    return false;
}

// Decrypts into the session's ring while it takes bytes. False when it stopped taking them or
// the stream ended.
bool tls_stream::read_plain() {
    while (!closed_ && !failed_) {
        if (paused_) return false;
        iovec iov[2];
        const int k = user_.recv_space(iov);
        if (k < 0) {
            cin_head_ = cin_tail_ = 0;  // the session is closing: drop what came
            return false;
        }
        if (k == 0) return false;  // the session paused reading (and told us so)
        std::size_t got = 0;
        int r = 1, e = SSL_ERROR_NONE;
        for (int i = 0; i < k && r > 0; ++i) {
            auto* base = static_cast<char*>(iov[i].iov_base);
            std::size_t off = 0;
            while (off < iov[i].iov_len) {
                // No ERR_clear_error per record (a thread-local lookup, 1.5 % of a busy shard):
                // the queue is emptied wherever an error is reported (fail), so it is empty here.
                r = SSL_read(ssl_.get(), base + off,
                             static_cast<int>(std::min<std::size_t>(iov[i].iov_len - off, INT_MAX)));
                if (r <= 0) {
                    e = SSL_get_error(ssl_.get(), r);  // now: the handler may call OpenSSL (a close) below
                    break;
                }
                off += static_cast<std::size_t>(r);
            }
            got += off;
        }
        bool more = true;
        if (got > 0) {
            more = user_.received(got);
            if (closed_ || failed_) return false;
        }
        if (r <= 0) {
            push();  // a read may answer (key update) or, on a client, take tickets
            if (e == SSL_ERROR_WANT_READ) return more;
            if (e == SSL_ERROR_ZERO_RETURN) {  // close_notify: the peer's orderly end
                user_.peer_closed();
                return false;
            }
            fail(make_error_code(net_errc::tls_record_error), "record error");
            return false;
        }
        if (!more) return false;
        // Both spans full: ask for more space.
    }
    return false;
}

// --- stream_user: ciphertext from the backend ---------------------------------------------------

int tls_stream::recv_space(iovec (&iov)[2]) {
    if (closed_ || failed_) return -1;
    if (!cin_) cin_ = std::make_unique_for_overwrite<std::byte[]>(cin_capacity);
    if (cin_head_ > 0 && cin_tail_ == cin_capacity) {
        std::memmove(cin_.get(), cin_.get() + cin_head_, cin_tail_ - cin_head_);
        cin_tail_ -= cin_head_;
        cin_head_ = 0;
    }
    if (cin_tail_ == cin_capacity) {
        // Two records are waiting for a session that does not take plaintext now: keep the rest
        // in the kernel until it does (resume_receive).
        inner_->pause_receive();
        return 0;
    }
    iov[0] = {cin_.get() + cin_tail_, cin_capacity - cin_tail_};
    return 1;
}

bool tls_stream::received(std::size_t n) {
    cin_tail_ += n;
    if (!established_) {
        if (!handshake()) return false;
        if (!established_) return true;
    }
    return read_plain();
}

void tls_stream::peer_closed() {
    if (closed_ || failed_) return;
    if (!established_) {
        fail(make_error_code(net_errc::tls_handshake_failed), "the peer closed the connection");
        return;
    }
    // End of stream without close_notify: the session ends as it would without TLS.
    user_.peer_closed();
}

void tls_stream::stream_failed(std::error_code ec) {
    if (closed_ || failed_) return;
    if (!established_) bump(cfg_.counters->tls_failures);
    failed_ = true;
    leave_gate();
    user_.stream_failed(ec);
}

void tls_stream::send_ready() {
    if (closed_) return;
    push();
    if (established_) user_.send_ready();
}

// --- stream_io: the session's calls -----------------------------------------------------------

void tls_stream::pause_receive() {
    paused_ = true;
    inner_->pause_receive();
}

void tls_stream::resume_receive() {
    paused_ = false;
    if (closed_ || failed_) return;
    // Records already here, and plaintext OpenSSL holds, go first.
    if (established_ && !read_plain() && (paused_ || closed_ || failed_)) return;
    inner_->resume_receive();
}

void tls_stream::send(buffer_chain& tx) {
    for (;;) {
        if (closed_ || failed_) return;
        if (established_ && !shutdown_sent_) encrypt(tx);
        push();
        // A backend that wrote every record at once (epoll, room in the socket) takes more now;
        // else its send_ready (room again, or the completion) brings the session back.
        if (!cout_.empty() || tx.empty() || !established_ || shutdown_sent_) return;
    }
}

void tls_stream::encrypt(buffer_chain& tx) {
    static thread_local std::byte stage[record_plain];
    while (!tx.empty() && cout_.size() < cout_limit) {
        iovec iov[16];
        const int n = tx.fill_iov(iov, 16);
        const std::size_t want = std::min(tx.size(), record_plain);
        const void* p = iov[0].iov_base;
        std::size_t len = std::min(iov[0].iov_len, want);
        if (len < want && n > 1) {  // several small segments: one record, not one per segment
            len = 0;
            for (int i = 0; i < n && len < want; ++i) {
                const std::size_t k = std::min(iov[i].iov_len, want - len);
                std::memcpy(stage + len, iov[i].iov_base, k);
                len += k;
            }
            p = stage;
        }
        const int w = SSL_write(ssl_.get(), p, static_cast<int>(len));
        if (w <= 0) {
            fail(make_error_code(net_errc::tls_record_error), "cannot encrypt");
            return;
        }
        tx.consume(static_cast<std::size_t>(w));
        user_.sent(static_cast<std::size_t>(w));
    }
}

void tls_stream::push() {
    if (!cout_.empty() && !closed_) inner_->send(cout_);
}

void tls_stream::trim() noexcept {
    if (cin_head_ == cin_tail_) cin_.reset();
    SSL_free_buffers(ssl_.get());  // OpenSSL's record buffers, when it holds nothing in them
    if (cout_.empty()) cout_.trim();
}

bool tls_stream::finish() {
    if (closed_ || failed_) return true;
    if (established_ && !shutdown_sent_) {
        shutdown_sent_ = true;
        ERR_clear_error();
        SSL_shutdown(ssl_.get());  // close_notify; the peer's is not awaited
        ERR_clear_error();
        push();
    }
    return cout_.empty() && !inner_->send_busy();
}

void tls_stream::close() noexcept {
    if (closed_) return;
    closed_ = true;
    if (handshake_timer_.armed()) cfg_.owner->timers().cancel(handshake_timer_);
    leave_gate();
    inner_->close();
}

// OpenSSL hands a client a session it may resume (after the handshake in TLS 1.2, with each
// ticket in 1.3): the connection keeps the newest for its next attempt.
void tls_resume_slot_deleter::operator()(tls_resume_slot* s) const noexcept { delete s; }

int tls_stream_new_session(SSL* ssl, SSL_SESSION* session) {
    auto* s = static_cast<tls_stream*>(SSL_get_app_data(ssl));
    if (!s || !s->cfg_.resume) return 0;
    SSL_SESSION_free(s->cfg_.resume->session);
    s->cfg_.resume->session = session;
    return 1;  // we keep the reference
}

}  // namespace strix::detail
