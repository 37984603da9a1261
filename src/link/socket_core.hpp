#pragma once
// socket_core: what a link::socket wraps. It holds the options, the pattern (pattern/), the
// state of each transport it bound or connected on (transport/: tcp and ipc carry ZMTP from
// zmtp/, inproc its own batches), and the application's callbacks.
//
//   application ──send──> socket_core ──pattern (lb, dist, router, req/rep)──> pipe::write
//                                                                               ├─ zmtp_pipe (zmtp/zmtp_pipe.cpp)
//                                                                               └─ inproc_pipe (transport/inproc.cpp)
//   session ──frames──> zmtp_pipe (greeting, READY, commands, multipart assembly) ─┐
//   inproc peer ──batch──> inproc_pipe ────────────────────────────────────────────┴─> pattern::receive ──> on_message

#include "link/pipe.hpp"
#include "link/transport/transport.hpp"

#include <strix/core/shard.hpp>
#include <strix/core/timing_wheel.hpp>
#include <strix/link/socket.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace strix::link::detail {

class pattern;
class zap_client;

/// What socket wraps: options, pattern, the state of each transport it uses, callbacks.
class socket_core final {
public:
    socket_core(shard& sh, socket_type t, socket_options o);
    ~socket_core();

    /// Ends c (socket::~socket says what goes now and what lingers). When peers still have
    /// output queued (transport_state::flushing) and the shard runs (not stopping), c deletes
    /// itself once that output is written, the peers are gone, `linger` passes (negative: no
    /// limit) or the shard exits; else it is deleted now. `done` runs as it is deleted. On c's
    /// shard, or on the owning thread before the shard runs.
    static void close(std::unique_ptr<socket_core> c, std::chrono::milliseconds linger,
                      std::function<void()> done = {});

    /// Through the transport table: the row for address's scheme, its state made at first use.
    std::string bind(std::string_view address);
    void connect(std::string_view address);
    void unbind(std::string_view address);
    void disconnect(std::string_view address);
    /// socket::set_options: checks o (a malformed key throws, nothing changed), replaces opts and
    /// tells the transports.
    void set_options(socket_options o);
    /// The options as they are now, shared by the binds and connects made until they change
    /// (their connections keep them: libzmq's listeners and sessions keep a copy).
    std::shared_ptr<const socket_options> options_snapshot();
    std::error_code send_part(bytes_view part, bool more);
    std::error_code send_parts(std::span<const bytes_view> parts, const part* source = nullptr);

    // --- called by transports, pipes and patterns -------------------------------------------
    void attach(pipe& p);
    void greet(pipe& p);  // probe_router, xpub_welcome_msg
    void detach(pipe& p);
    /// To the application, with the properties of the connection the message came from.
    void deliver(std::span<const bytes_view> parts, const message_properties_ptr* props = nullptr);
    void event(socket_event::kind k, const std::string& ep, std::error_code ec = {}, std::string detail = {});
    void pipe_writable(pipe& p);
    void note_would_block() noexcept { want_writable_ = true; }
    std::uint64_t next_pipe_id() noexcept { return ++pipe_ids_; }
    /// The link to a ZAP handler socket (security/zap_client.hpp), made at first use.
    zap_client& zap();
    /// A transport's peer closed: a lingering core goes once no transport flushes any more;
    /// else the transports prune what unbind and disconnect left, after the turn.
    void peer_closed();

    shard& owner;
    const socket_type type;
    socket_options opts;  // set_options replaces them (on the shard)
    socket_stats stats;
    std::unique_ptr<pattern> pat;
    std::function<void(message_view)> on_message;
    std::function<void()> on_writable;
    std::function<void(const socket_event&)> on_event;
    bool closing = false;
    bool paused = false;  // pause_receiving(true)
    void pause(bool on);

private:
    // One per transport this socket has bound or connected on, in order of first use.
    struct transport_slot {
        decltype(transport::make) make;
        std::unique_ptr<transport_state> state;
    };
    transport_state& transport_for(std::string_view address);
    std::size_t flushing() const noexcept;
    void abort_transports();
    void linger_check();
    void prune_later();

    std::function<void()> linger_done_;  // close()'s `done`
    timer_node linger_timer_;
    shard::hook_id exit_hook_ = 0;
    bool lingering_ = false;
    bool check_pending_ = false;
    std::vector<transport_slot> transports_;  // cleared first in ~socket_core, while the pattern lives
    std::vector<bytes_view> pending_;  // parts of a message being sent with more = true
    std::vector<std::vector<std::byte>> pending_store_;
    std::uint64_t pipe_ids_ = 0;
    std::unique_ptr<zap_client> zap_;  // after transports_: the pipes waiting on it go first
    bool want_writable_ = false;
    bool notifying_ = false;
    bool prune_pending_ = false;
    std::shared_ptr<const socket_options> snapshot_;  // options_snapshot(), until opts change
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for tasks that run after the turn
};

/// What the rest of strix::link reaches inside a socket (the blocking API's bridge).
struct socket_access {
    static socket_core& core(socket& s) noexcept { return *s.core_; }
    /// Closes s's core with this linger and `done` (s is left empty: destroy it next).
    static void close(socket& s, std::chrono::milliseconds linger, std::function<void()> done) {
        socket_core::close(std::move(s.core_), linger, std::move(done));
    }
};

}  // namespace strix::link::detail
