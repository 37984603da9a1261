#pragma once
// connection: an outbound connection a session_group keeps to one endpoint, on the group's shard.
//
//   connect() ──> connecting ──(established)──> open: a session of the group, same code as an
//                   │   ^                        │   accepted one (handler.on_open)
//      failed or    │   │ backoff elapsed        │ session closed (handler.on_close)
//      timed out    v   │                        v
//   (on_connect_failed) waiting <───── reconnect on ─────┘
//                   │
//                   └── reconnect off, or close() ──> closed
//
// The connect is non-blocking (the shard never waits), bounded by connect_options::timeout.
// With reconnect on, a lost or failed connection is retried after a delay that starts at
// reconnect_initial and doubles up to reconnect_max; a successful connection resets it.
// Everything here is for the group's shard only.

#include <strix/core/reactor_object.hpp>
#include <strix/core/timing_wheel.hpp>
#include <strix/core/unique_fd.hpp>
#include <strix/net/endpoint.hpp>
#include <strix/net/tls.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>

namespace strix {

class session;
class session_group;

/// TCP keepalive on a session's socket: SO_KEEPALIVE and Linux's TCP_KEEPIDLE, TCP_KEEPINTVL and
/// TCP_KEEPCNT. -1 leaves the system's setting; Unix-socket sessions ignore it.
struct tcp_keepalive {
    int enable = -1;      // 1 on, 0 off
    int idle_s = -1;      // seconds idle before the first probe
    int interval_s = -1;  // seconds between probes
    int count = -1;       // unanswered probes before the connection is dropped
};

struct connect_options {
    std::chrono::milliseconds timeout{5000};            // one attempt, until the handshake completes
    bool reconnect = false;                             // retry after a failure or a disconnect
    std::chrono::milliseconds reconnect_initial{100};   // first delay before retrying
    std::chrono::milliseconds reconnect_max{5000};      // the delay doubles up to this
    // TLS over the connection (strix/net/tls.hpp); nullptr = plain. The server's certificate must
    // match server_name (a DNS name, also sent as SNI, or a numeric address); empty = the
    // endpoint's host. A failed handshake is a failed attempt: on_connect_failed, then the retry.
    std::shared_ptr<tls_client> tls;
    std::string server_name;
    tcp_keepalive keepalive;
};

class connection final : public reactor_object {
public:
    enum class status : std::uint8_t { connecting, open, waiting, closed };

    ~connection() override;

    const endpoint& target() const noexcept { return target_; }
    status state() const noexcept { return status_; }
    /// The open session, or nullptr while connecting, waiting or closed.
    session* current() const noexcept { return session_; }
    /// Attempts that failed since the last successful one.
    unsigned failures() const noexcept { return failures_; }
    session_group& group() const noexcept { return group_; }

    /// Stops for good: no more attempts; an open session closes gracefully (flushing its
    /// output), a pending attempt is abandoned. Idempotent.
    void close();

private:
    friend class session_group;
    friend class session;

    connection(session_group& g, endpoint target, connect_options opts);
    void attempt();
    void on_io(std::uint32_t events) override;
    void established();
    void failed(std::error_code ec);
    void retry_later();
    void finish();
    void on_timer();
    // Called by the session as it finalizes; never_opened: why a session the handler never met
    // (its TLS handshake failed) ended, which counts as a failed attempt.
    void session_closed(std::error_code never_opened = {});
    detail::tls_resume_slot& tls_resume();

    session_group& group_;
    const std::uint64_t id_;
    const endpoint target_;
    const connect_options opts_;
    unique_fd fd_;            // the socket while connecting
    bool registered_ = false;  // fd_ is in the shard's poller
    session* session_ = nullptr;
    timer_node timer_;
    std::chrono::milliseconds delay_;
    unsigned failures_ = 0;
    status status_ = status::waiting;
    bool closing_ = false;
    std::unique_ptr<detail::tls_resume_slot, detail::tls_resume_slot_deleter> tls_resume_;  // TLS only
};

using connection_ptr = intrusive_ptr<connection>;

}  // namespace strix
