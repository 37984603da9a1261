#pragma once
// redis_link: one connection to Redis on one shard, the part redis_client (commands) and
// redis_subscriber (pub/sub) share. It connects through strix's own connect() (non-blocking,
// with a connect timeout and reconnect with backoff), cuts replies with the resp_framer, parses
// them with hiredis's reader and ticks a timer for the deadlines of its owner.
//
//   redis_client / redis_subscriber  (what a reply means; what is pending)
//        | on_up / on_reply / on_down / on_tick
//   redis_link   (connection, framing, parsing, timer)
//        | session_group + connection (strix::net), on the shard's reactor
//   Redis
//
// Everything here runs on the owning shard only, and never blocks it.

#include "apps/chat/cluster/redis_options.hpp"
#include "apps/chat/cluster/resp.hpp"

#include <strix/core/timing_wheel.hpp>
#include <strix/net/session_group.hpp>

#include <cstdint>
#include <string_view>
#include <system_error>

namespace strix::chat::detail {

class redis_link : protected session_handler {
public:
    /// Connection attempts that succeeded, and that failed, so far. Owning shard.
    std::uint64_t connects() const noexcept { return connects_; }
    std::uint64_t connect_failures() const noexcept { return failures_; }
    /// Why the last attempt or connection ended (empty before any). Owning shard.
    std::error_code last_error() const noexcept { return last_error_; }
    /// True while a connection is open. Owning shard.
    bool is_up() const noexcept { return up_ != nullptr; }
    const redis_options& options() const noexcept { return opts_; }
    shard& owner() const noexcept { return group_.owner(); }

protected:
    /// Sets up; nothing happens until start(). On the shard, or before the engine runs.
    redis_link(shard& sh, redis_options opts);
    /// The derived class must have called stop() (its handlers are gone by now).
    ~redis_link() override;

    void start();
    /// Closes the connection and stops reconnecting; on_down runs once more if it was up.
    /// Idempotent.
    void stop();
    bool stopped() const noexcept { return stopped_; }
    /// Queues bytes on the open connection (no-op when down).
    void send(std::string_view bytes);
    /// Drops the connection now (reason goes to on_down); it reconnects after the backoff.
    void reset(std::error_code reason);
    /// The tick a deadline `d` from now falls on.
    std::uint64_t deadline_in(std::chrono::milliseconds d) const noexcept;
    std::uint64_t now() const noexcept;

    virtual void on_up() = 0;
    virtual void on_reply(resp_reply& r) = 0;
    virtual void on_down(std::error_code reason) = 0;
    virtual void on_tick() = 0;
    virtual void on_attempt_failed(std::error_code) {}

private:
    void on_open(session& s) override;
    void on_frame(session& s, std::span<const std::byte> frame) override;
    void on_protocol_error(session& s, std::error_code ec) override;
    void on_close(session& s, std::error_code ec) override;
    void on_connect_failed(connection& c, std::error_code ec) override;
    void tick();

    const redis_options opts_;
    session_group group_;
    connection_ptr conn_;
    session* up_ = nullptr;
    resp_reader reader_;
    resp_reply reply_;  // reused: its vectors keep their capacity
    timer_node timer_;
    std::uint64_t period_ticks_ = 1;
    std::uint64_t connects_ = 0;
    std::uint64_t failures_ = 0;
    std::error_code last_error_;
    bool stopped_ = false;
};

}  // namespace strix::chat::detail
