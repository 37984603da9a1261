#pragma once
// tls_stream: TLS between a session and its socket's stream (docs/architecture.md, "Layers").
//
//   session ──send(plain chain) / pause / resume / finish / close──> tls_stream ──send(cipher)──> backend stream
//   session <──recv_space / received / established / sent ───────── tls_stream <──received(cipher)── backend
//
// It is a stream_io to the session and a stream_user to the backend's stream, so the session and
// both backends run unchanged. OpenSSL reads ciphertext from `cin_` (the backend receives into it)
// and writes records straight into `cout_`, the chain the backend sends; plaintext is decrypted
// straight into the session's receive ring. A turn's sends become as few records as fit (up to
// 16 KiB of plaintext each), one SSL_write per record.
//
// Bounds: ciphertext in is at most two records' worth (reading stops until the session takes the
// plaintext); ciphertext out stops growing at `cout_limit` and the rest of the plaintext stays in
// the session's chain, where its high-water mark and slow-consumer limit apply as without TLS.
// The handshake has its own deadline, and each stream holds a place in its group's handshake gate
// until the handshake ends.
#include "core/backend/stream_io.hpp"
#include "net/tls/tls_state.hpp"

#include <strix/core/timing_wheel.hpp>
#include <strix/net/net_stats.hpp>
#include <strix/net/tls.hpp>

#include <boost/unordered/unordered_flat_map.hpp>

#include <memory>
#include <string>
#include <vector>

namespace strix {
class shard;
}

namespace strix::detail {

/// Handshakes in progress on one shard (one session group), in total and per peer address.
class tls_gate {
public:
    /// Takes a place for a handshake from addr; false when a cap is reached.
    bool enter(const std::string& addr, std::size_t max_total, std::size_t max_per_address);
    void leave(const std::string& addr) noexcept;
    std::size_t in_progress() const noexcept { return total_; }

private:
    std::size_t total_ = 0;
    // Up to max_handshakes_per_shard entries (a flood from many addresses): a hash map, not a scan.
    boost::unordered_flat_map<std::string, std::size_t> per_address_;
};

/// Where a client keeps the session to offer on its next connection (one per connection).
struct tls_resume_slot {
    SSL_SESSION* session = nullptr;
    ~tls_resume_slot() { SSL_SESSION_free(session); }
};

struct tls_stream_config {
    shard* owner = nullptr;
    net_counters* counters = nullptr;
    tls_gate* gate = nullptr;  // nullptr: no place was taken
    std::string address;  // the peer's address, for the gate and the logs
    std::chrono::milliseconds handshake_timeout{10000};
    tls_resume_slot* resume = nullptr;  // client side
};

class tls_stream final : public stream_io, public stream_user {
public:
    tls_stream(ssl_ptr ssl, bool server, stream_user& user, tls_stream_config cfg);
    ~tls_stream() override;

    /// The backend's stream for the socket, opened with this object as its user.
    void attach(std::unique_ptr<stream_io> inner) noexcept { inner_ = std::move(inner); }

    /// Set once the handshake is done.
    const tls_info* info() const noexcept { return established_ ? &info_ : nullptr; }

    // stream_io, for the session
    std::error_code start() override;
    void ready(std::uint32_t events) override { inner_->ready(events); }
    void pause_receive() override;
    void resume_receive() override;
    void send(buffer_chain& tx) override;
    bool send_busy() const noexcept override { return false; }  // the session's chain is never the kernel's
    bool finish() override;
    void trim() noexcept override;
    void close() noexcept override;

    // stream_user, for the backend's stream
    int recv_space(iovec (&iov)[2]) override;
    bool received(std::size_t n) override;
    void peer_closed() override;
    void stream_failed(std::error_code ec) override;
    void sent(std::size_t) override {}
    void send_ready() override;

private:
    bool handshake();
    bool read_plain();
    void encrypt(buffer_chain& tx);
    void push();
    void fail(std::error_code ec, const char* what);
    void leave_gate() noexcept;
    void on_handshake_timeout();

    ssl_ptr ssl_;
    stream_user& user_;
    tls_stream_config cfg_;
    std::unique_ptr<stream_io> inner_;
    timer_node handshake_timer_;
    tls_info info_;
    const bool server_;
    bool established_ = false;
    bool paused_ = false;
    bool closed_ = false;
    bool failed_ = false;
    bool shutdown_sent_ = false;

    // Ciphertext received and not yet read by OpenSSL: [cin_head_, cin_tail_). Taken at the first
    // receive and given back by trim() while empty: an idle connection holds none.
    std::unique_ptr<std::byte[]> cin_;
    std::size_t cin_head_ = 0, cin_tail_ = 0;
    buffer_chain cout_;  // records to send

    friend struct tls_bio;
    friend int tls_stream_new_session(SSL* ssl, SSL_SESSION* session);
};

}  // namespace strix::detail
