#pragma once
// session_group: the sessions of one shard that share a handler, a framer and limits, with the
// listeners and outbound connections that create them. The building block of servers (one group
// per shard, see server.hpp), clients, and messaging sockets (one group per socket).
//
//     struct echo : strix::session_handler {
//         void on_frame(strix::session& s, std::span<const std::byte> f) override { s.send(f); }
//     };
//     // on shard `sh` (or before the engine starts):
//     echo handler;
//     strix::session_group group(sh, handler);
//     group.listen(strix::endpoint::parse("tcp://127.0.0.1:7000"));
//     auto conn = group.connect(strix::endpoint::parse("tcp://127.0.0.1:7001"), {.reconnect = true});
//
// Thread contract: a group belongs to its shard. It may be built, listened on and connected
// from the engine's owning thread before the shard runs; from then on, only on the shard. It is
// destroyed on the shard, or anywhere once the shard no longer runs (engine::run_on_all_shards
// does that for a server torn down while the engine keeps running).
//
// Shutdown: when the engine stops, a group closes its listeners and connections and closes
// every session gracefully (flushing queued output, bounded by close_linger and the engine's
// drain timeout); at the shard's exit, whatever is left is aborted.

#include <strix/core/unique_fd.hpp>
#include <strix/net/admission.hpp>
#include <strix/net/connection.hpp>
#include <strix/net/endpoint.hpp>
#include <strix/net/framer.hpp>
#include <strix/net/net_stats.hpp>
#include <strix/net/session.hpp>
#include <strix/net/session_handler.hpp>
#include <strix/net/tls.hpp>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace strix {

class shard;
namespace detail {
class listener;
class tls_gate;
}// namespace detail

struct session_group_config {
    session_limits limits;
    const framer* framing = nullptr;  // nullptr = length_prefix_framer()
    // Caps on accepted (and adopted) sessions, possibly shared with other groups (a server's
    // shards share one); nullptr = none. Must outlive the group.
    admission* admit = nullptr;
    // TLS on the sessions this group accepts (strix/net/tls.hpp); nullptr = plain. Outbound
    // connections choose for themselves (connect_options::tls).
    std::shared_ptr<tls_server> tls;
    tcp_keepalive keepalive;  // on the sessions this group accepts (connections: connect_options)
};

class session_group {
public:
    /// Sessions on `sh` reporting to `handler`, which must outlive the group. Any thread before
    /// the shard runs, else the shard.
    session_group(shard& sh, session_handler& handler, session_group_config cfg = {});
    /// Aborts what is still open (handler.on_close for each) and closes listeners and
    /// connections.
    ~session_group();
    session_group(const session_group&) = delete;
    session_group& operator=(const session_group&) = delete;

    /// Listens at ep on this shard; accepted connections become sessions of this group. Returns
    /// the bound endpoint (with the real port when ep asked for port 0). Throws
    /// std::system_error naming the address and the cause (address in use, bad path, ...).
    endpoint listen(const endpoint& ep, int backlog = 4096);

    /// Starts connecting to ep and returns the connection at once; the handler hears on_open
    /// (with session::origin() == the connection) or on_connect_failed. Throws
    /// std::invalid_argument for an endpoint that cannot be connected to (a tcp host that is not
    /// a numeric address); every other failure goes to the handler.
    connection_ptr connect(const endpoint& ep, const connect_options& opts = {});

    /// Wraps an already connected, non-blocking socket in a session of this group (listeners
    /// call this for every accepted connection). With an admission (session_group_config::admit)
    /// over its caps, the socket is closed at once instead (reset, counted, the handler hears
    /// nothing).
    void adopt(unique_fd fd, std::string peer);

    /// Closes the listeners (their ports and socket files are free at return); connections and
    /// sessions stay. On the shard.
    void stop_listening();
    /// Stops listening and connecting, and closes every session gracefully (flushing output).
    void close_all(std::error_code reason);
    /// The same, dropping queued output: every session is closed when this returns.
    void abort_all(std::error_code reason);

    shard& owner() const noexcept { return owner_; }
    session_handler& handler() const noexcept { return handler_; }
    const session_limits& limits() const noexcept { return limits_; }
    /// Changes session_limits::close_linger for the graceful closes that start from now on (a
    /// messaging socket whose linger is set after it was built). On the shard.
    void set_close_linger(std::chrono::milliseconds linger) noexcept { limits_.close_linger = linger; }
    const framer& framing() const noexcept { return *framer_; }
    /// This group's counters (single writer: the shard; readable as a snapshot anywhere).
    const net_counters& counters() const noexcept { return counters_; }
    /// The same, for a protocol layered over the sessions (WebSocket) to count in. This shard only.
    net_counters& counters() noexcept { return counters_; }
    /// Open sessions.
    std::size_t size() const noexcept;

    /// Calls f(session&) for every open session. f must not open or close sessions.
    void for_each(const std::function<void(session&)>& f) const;

    // --- for servers ------------------------------------------------------------------------

    /// What a listener does with an accepted socket (adopt it here, or hand it to another
    /// shard's group).
    using accept_fn = std::function<void(unique_fd fd, std::string peer)>;
    /// Adds an already listening socket; accepted connections go to on_accept (default: adopt
    /// here). Returns nothing; errors registering with the shard are logged.
    void add_listener(unique_fd fd, accept_fn on_accept = {});

private:
    friend class session;
    friend class connection;
    friend class detail::listener;
    struct impl;

    void install_hooks();
    void forget(session& s) noexcept;
    void forget(connection& c) noexcept;
    std::byte* take_rx_buffer();
    void give_rx_buffer(std::byte* p, bool cold) noexcept;
    // A frame above a session's max_frame being collected (session_limits::max_large_frame):
    // malloc'd, so that growing a large block is a remap, not a copy (glibc's realloc of an
    // mmap'd chunk). Held by the group, not in each session: few sessions ever have one.
    struct large_frame {
        struct release {
            void operator()(std::byte* p) const noexcept { std::free(p); }
        };
        std::unique_ptr<std::byte, release> data;
        std::size_t size = 0;   // bytes collected
        std::size_t total = 0;  // the frame's size, from its header
        std::size_t cap = 0;
    };
    large_frame& large_frame_of(std::uint64_t session_id);
    void drop_large_frame(std::uint64_t session_id) noexcept;
    detail::tls_gate& tls_gate();
    session& make_session(unique_fd fd, std::string peer, connection* origin, bool admitted = false);
    inline void list_for_sweep(session& s);
    void sweep();

    shard& owner_;
    session_handler& handler_;
    session_limits limits_;  // close_linger may change (set_close_linger); the rest is fixed
    const framer* framer_;
    net_counters counters_;
    admission* admit_;
    std::shared_ptr<tls_server> tls_;
    tcp_keepalive keepalive_;
    std::uint64_t frame_ticks_;  // limits_.frame_timeout in ticks (read per batch of frames)
    std::size_t released_bytes_ = 0;  // bytes given back to malloc since the last malloc_trim
    // The sessions the idle sweep looks at: those that took a receive ring, queued output or
    // opened since they last held nothing. An idle session is not on it, so the sweep's work
    // follows what is active, not what is open. Ids: a closed session drops off at the next sweep.
    std::vector<std::uint64_t> sweep_list_;
    std::unique_ptr<impl> impl_;
};

inline void session_group::list_for_sweep(session& s) {
    if (s.life_.sweep_listed) return;
    s.life_.sweep_listed = true;
    sweep_list_.push_back(s.id());
}

}  // namespace strix
