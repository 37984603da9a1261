#pragma once
// server: a session group on every shard, with listeners that spread connections over them.
//
// TCP: every shard binds its own SO_REUSEPORT listener on the same port, so the kernel spreads
// connections across shards and a session lives on the shard that accepted it.
// Unix domain socket: one listener on shard 0 hands accepted connections round-robin to the
// shards through the mesh; from then on the same session code runs.
//
//     strix::engine eng;
//     strix::server srv(eng, {.port = 7000}, [](strix::shard&) { return std::make_unique<echo>(); });
//     srv.start();
//     eng.run_until_signal();

#include <strix/core/engine.hpp>
#include <strix/core/metrics_registry.hpp>
#include <strix/core/sharded.hpp>
#include <strix/net/framer.hpp>
#include <strix/net/net_stats.hpp>
#include <strix/net/session.hpp>
#include <strix/net/session_group.hpp>
#include <strix/net/tls.hpp>
#include <strix/net/session_handler.hpp>

#include <concepts>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace strix {

struct server_config {
    std::string host = "127.0.0.1";
    std::uint16_t port = 0;           // 0 = ephemeral; port() tells which
    bool tcp = true;                  // listen on host:port
    std::string unix_path;            // also (or only) listen on this Unix socket path
    int backlog = 4096;
    const framer* framing = nullptr;  // nullptr = length_prefix_framer()
    session_limits limits;
    // Caps on accepted connections over all shards (see admission.hpp); 0 = no cap. Connections
    // beyond them are accepted and reset at once, counted in refused_max_sessions /
    // refused_per_address.
    std::size_t max_sessions = 0;
    std::size_t max_sessions_per_address = 0;  // TCP peers; Unix-socket peers count only in the total
    // Caps shared with other servers (a TCP and a WebSocket listener that make one service): when
    // set, it counts this server's sessions too, and max_sessions and max_sessions_per_address above
    // are not used.
    std::shared_ptr<admission> shared_caps;
    // TLS on every listener of this server (tcp and Unix socket alike; strix/net/tls.hpp);
    // nullptr = plain. Load it with tls_server::load before building the server.
    std::shared_ptr<tls_server> tls;
    tcp_keepalive keepalive;  // on every accepted TCP connection
};

class server {
public:
    /// Builds one handler per shard with make_handler(shard&), called here on the caller's thread.
    using handler_factory = std::function<std::unique_ptr<session_handler>(shard&)>;

    /// The engine's owning thread (before or after engine::start).
    server(engine& e, server_config cfg, const handler_factory& make_handler);

    /// Serves with the instances of a sharded service as the shards' handlers (they must outlive
    /// the server).
    template <class H>
        requires std::derived_from<H, session_handler>
    server(engine& e, server_config cfg, sharded<H>& handlers) : server(e, std::move(cfg), borrow(handlers), nullptr) {}

    /// Closes this server's listeners and sessions (handlers hear on_close) and frees its state,
    /// on each shard while the engine keeps running for whatever else it serves. The engine's
    /// owning thread (not a shard).
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    /// Binds and listens now (before the engine starts is fine), then hands each listener to its
    /// shard. Throws std::system_error naming the address and the cause (e.g. port in use).
    /// The owning thread only.
    void start();

    /// The TCP port actually bound (after start()). Any thread.
    std::uint16_t port() const noexcept { return port_; }

    /// Counters summed over shards; a snapshot. Any thread.
    net_stats stats() const;

    /// Exposes every shard's net_counters in r (summed at scrape) until the server is
    /// destroyed; r must outlive the server. The owning thread.
    void register_metrics(metrics_registry& r);

    /// The caps shared by the shards (nullptr when the config set none). Any thread.
    const admission* caps() const noexcept { return admission_.get(); }

    /// The handler of shard i (as built by the factory). Call its functions on shard i only.
    session_handler& handler(unsigned shard_index) noexcept { return *handlers_[shard_index]; }
    /// The session group of shard i. Call its functions on shard i only.
    session_group& group(unsigned shard_index) noexcept { return *groups_[shard_index]; }

    engine& owner() noexcept { return engine_; }
    const server_config& config() const noexcept { return cfg_; }

private:
    template <class H>
    static std::vector<session_handler*> borrow(sharded<H>& hs) {
        std::vector<session_handler*> out;
        for (unsigned i = 0; i < hs.size(); ++i) out.push_back(&hs.on(i));
        return out;
    }
    server(engine& e, server_config cfg, std::vector<session_handler*> handlers, std::nullptr_t);
    void make_groups();

    engine& engine_;
    server_config cfg_;
    std::vector<std::unique_ptr<session_handler>> owned_handlers_;
    std::vector<session_handler*> handlers_;
    std::shared_ptr<admission> admission_;  // shared by every shard's group (and shared_caps' servers); outlives them
    std::vector<std::unique_ptr<session_group>> groups_;
    std::vector<std::shared_ptr<bool>> alive_;  // per shard: its group still exists (read on that shard)
    std::uint16_t port_ = 0;
    bool started_ = false;
    std::vector<metrics_registry::registration> metric_regs_;  // dropped first in ~server
};

}  // namespace strix
