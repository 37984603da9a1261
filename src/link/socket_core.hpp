#pragma once
// socket_core: what a link::socket wraps. It holds the options, the pattern (pattern/), the
// peers' pipes through its transports (transport/, zmtp/) and the application's callbacks.
//
//   application ──send──> socket_core ──pattern (lb, dist, router, req/rep)──> pipe::write
//                                                                               ├─ zmtp_pipe (zmtp/zmtp_pipe.cpp)
//                                                                               └─ inproc_pipe (transport/inproc.cpp)
//   session ──frames──> zmtp_pipe (greeting, READY, commands, multipart assembly) ─┐
//   inproc peer ──batch──> inproc_pipe ────────────────────────────────────────────┴─> pattern::receive ──> on_message

#include "link/pipe.hpp"

#include <strix/core/reactor_object.hpp>
#include <strix/core/shard.hpp>
#include <strix/core/shared_buffer.hpp>
#include <strix/core/timing_wheel.hpp>
#include <strix/link/socket.hpp>
#include <strix/net/connection.hpp>
#include <strix/net/session.hpp>
#include <strix/net/session_group.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace strix::link::detail {

class socket_core;
class pattern;

/// A socket's inproc pipes and names (inproc.cpp).
struct inproc_state;
struct inproc_state_deleter {
    void operator()(inproc_state* p) const noexcept;
};

/// What socket wraps: options, pattern, the session group for tcp/ipc, inproc pipes, callbacks.
class socket_core final : public session_handler {
public:
    socket_core(shard& sh, socket_type t, socket_options o);
    ~socket_core() override;

    /// Ends c (socket::~socket says what goes now and what lingers). When tcp/ipc peers still
    /// have output queued and the shard runs (not stopping), c deletes itself once that output
    /// is written, the peers are gone, `linger` passes (negative: no limit) or the shard exits;
    /// else it is deleted now. `done` runs as it is deleted. On c's shard, or on the owning
    /// thread before the shard runs.
    static void close(std::unique_ptr<socket_core> c, std::chrono::milliseconds linger,
                      std::function<void()> done = {});

    std::string bind(std::string_view address);
    void connect(std::string_view address);
    std::error_code send_part(bytes_view part, bool more);
    std::error_code send_parts(std::span<const bytes_view> parts, const part* source = nullptr);

    // --- called by pipes and patterns ----------------------------------------------------------
    void attach(pipe& p);
    void greet(pipe& p);  // probe_router, xpub_welcome_msg
    void detach(pipe& p);
    void deliver(std::span<const bytes_view> parts);  // to the application
    void event(socket_event::kind k, const std::string& ep, std::error_code ec = {}, std::string detail = {});
    void pipe_writable(pipe& p);
    void note_would_block() noexcept { want_writable_ = true; }
    std::uint64_t next_pipe_id() noexcept { return ++pipe_ids_; }

    // --- session_handler (tcp/ipc peers: zmtp_pipe.cpp) ----------------------------------------
    void on_open(session& s) override;
    void on_frame(session& s, std::span<const std::byte> frame) override;
    void on_protocol_error(session& s, std::error_code ec) override;
    void on_close(session& s, std::error_code ec) override;
    void on_connect_failed(connection& c, std::error_code ec) override;
    void on_drained(session& s) override;

    shard& owner;
    const socket_type type;
    const socket_options opts;
    socket_stats stats;
    std::unique_ptr<pattern> pat;
    std::function<void(message_view)> on_message;
    std::function<void()> on_writable;
    std::function<void(const socket_event&)> on_event;
    std::unique_ptr<inproc_state, inproc_state_deleter> inproc;
    bool closing = false;
    bool paused = false;  // pause_receiving(true)
    void pause(bool on);

private:
    void linger_check();

    std::function<void()> linger_done_;  // close()'s `done`
    timer_node linger_timer_;
    shard::hook_id exit_hook_ = 0;
    bool lingering_ = false;
    bool check_pending_ = false;
    std::unique_ptr<session_group> group_;  // declared last: destroyed first, while the pattern lives
    std::vector<connection_ptr> connections_;
    std::vector<bytes_view> pending_;  // parts of a message being sent with more = true
    std::vector<std::vector<std::byte>> pending_store_;
    std::uint64_t pipe_ids_ = 0;
    bool want_writable_ = false;
    bool notifying_ = false;
};

/// What the rest of strix::link reaches inside a socket (the blocking API's bridge).
struct socket_access {
    static socket_core& core(socket& s) noexcept { return *s.core_; }
    /// Closes s's core with this linger and `done` (s is left empty: destroy it next).
    static void close(socket& s, std::chrono::milliseconds linger, std::function<void()> done) {
        socket_core::close(std::move(s.core_), linger, std::move(done));
    }
};

// tcp:// and ipc:// (zmtp_pipe.cpp)
/// The session group's framing and limits for a socket's ZMTP peers.
session_group_config zmtp_group_config(const socket_options& o);

// inproc (inproc.cpp)
std::string inproc_bind(socket_core& c, std::string_view name);
void inproc_connect(socket_core& c, std::string_view name);
void inproc_close_all(socket_core& c);
/// Delivers what inproc peers sent while the socket was paused.
void inproc_resume(socket_core& c);

}  // namespace strix::link::detail
