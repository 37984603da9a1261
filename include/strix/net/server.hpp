#pragma once
// server: listeners on every shard plus the sessions they accept.
//
// TCP: every shard binds its own SO_REUSEPORT listener on the same port, so the kernel spreads
// connections across shards and a session lives on the shard that accepted it.
// Unix domain socket: one listener on shard 0 hands accepted connections round-robin to the
// shards through the mesh; from then on the same session code runs.

#include <strix/core/engine.hpp>
#include <strix/net/net_stats.hpp>
#include <strix/net/session.hpp>
#include <strix/net/session_handler.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace strix {

namespace detail {
class net_shard;
}

struct server_config {
    std::string host = "127.0.0.1";
    std::uint16_t port = 0;           // 0 = ephemeral; port() tells which
    bool tcp = true;                  // listen on host:port
    std::string unix_path;            // also (or only) listen on this Unix socket path
    int backlog = 4096;
    frame_format format = frame_format::length_prefix_le32;
    session_limits limits;
};

class server {
public:
    /// Builds one handler per shard with make_handler(shard&), called here on the caller's thread.
    using handler_factory = std::function<std::unique_ptr<session_handler>(shard&)>;

    server(engine& e, server_config cfg, const handler_factory& make_handler);
    /// Stops and joins the engine if it still runs: shards must not outlive the state they use.
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
    net_stats stats() const noexcept;

    /// The handler of shard i (as built by the factory). Call its functions on shard i only.
    session_handler& handler(unsigned shard_index) noexcept;

    engine& owner() noexcept { return engine_; }
    const server_config& config() const noexcept { return cfg_; }

private:
    engine& engine_;
    server_config cfg_;
    // Every shard's state by shard id; the listener of a Unix socket hands connections across.
    std::unique_ptr<std::vector<detail::net_shard*>> peers_;
    std::vector<std::unique_ptr<detail::net_shard>> shards_;
    std::uint16_t port_ = 0;
    bool started_ = false;
};

}  // namespace strix
