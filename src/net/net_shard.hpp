#pragma once
// net_shard: one server's state on one shard: its sessions, listeners, receive-buffer pool,
// handler and counters. Everything here is touched by that shard's thread only, except the
// counters (single writer, read anywhere).

#include <strix/core/shard.hpp>
#include <strix/core/timing_wheel.hpp>
#include <strix/mem/slab_pool.hpp>
#include <strix/net/net_stats.hpp>
#include <strix/net/session.hpp>
#include <strix/net/session_handler.hpp>

#include <boost/unordered/unordered_flat_map.hpp>

#include <memory>
#include <string>
#include <vector>

namespace strix::detail {

class listener;

class net_shard {
public:
    net_shard(shard& s, const session_limits& limits, frame_format format,
              std::unique_ptr<session_handler> handler, std::vector<net_shard*>& peers);
    ~net_shard();

    /// Wraps an accepted, non-blocking socket in a session on this shard.
    void adopt(int fd, std::string peer);
    /// Called by a session as it finalizes.
    void forget(session& s);
    /// Installs a listener on this shard (on this shard's thread).
    void add_listener(intrusive_ptr<listener> l);
    /// Registers stop/exit hooks with the shard (on this shard's thread, once).
    void install_hooks();

    std::byte* take_rx_buffer();
    /// Returns a ring to the pool; cold = the session went idle, so its pages go back to the kernel.
    void give_rx_buffer(std::byte* p, bool cold = false) noexcept;

    shard& owner;
    const session_limits limits;
    const frame_format format;
    std::unique_ptr<session_handler> handler;
    net_counters counters;
    std::vector<net_shard*>& peers;  // every shard's net_shard of this server, by shard id
    unsigned next_handoff = 0;       // round-robin target for unix-socket connections

private:
    slab_pool rx_pool_;               // carves new receive rings; never given one back
    std::vector<std::byte*> free_rx_;  // rings not in use (idle ones with their pages returned)
    boost::unordered_flat_map<std::uint64_t, session_ptr> sessions_;
    std::vector<intrusive_ptr<listener>> listeners_;
    std::uint64_t next_id_ = 1;
    bool hooks_installed_ = false;
    timer_node sweep_;  // trims idle sessions' send chains once a second
    static void on_sweep(timer_node& t);
};

}  // namespace strix::detail
