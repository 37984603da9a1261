#pragma once
// metrics_endpoint: a tiny HTTP/1.0 server on 127.0.0.1 that answers GET /metrics with whatever
// render() returns (Prometheus text format). It runs on a shard, as a session group of its own
// with an HTTP framer (the request head, up to its blank line, is one frame), so the reactor
// serves any number of scrapers at once and the engine's deadlines deal with bad ones:
//
//   request head not complete 2 s after connecting (handshake timeout), or 2 s after its first
//   byte (frame timeout)   -> 408 Request Timeout, closed
//   head over 8 KiB        -> 431 Request Header Fields Too Large, closed
//   a reader too slow for the response -> dropped after 2 s (close linger)
//   more than 64 connections at once   -> refused at accept
//
// One half-sent request (or twenty) delays nobody: a scrape is answered in the loop turn its
// request completes in. Every answer closes the connection (Connection: close).
//
//     strix::metrics_registry metrics;
//     srv.register_metrics(metrics);                   // the server's sessions, summed over shards
//     eng.register_metrics(metrics);                   // the shards' loops
//     strix::metrics_endpoint http(eng.at(0), 9100, metrics);

#include <strix/core/metrics_registry.hpp>
#include <strix/net/admission.hpp>
#include <strix/net/framer.hpp>
#include <strix/net/session_group.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace strix {

class shard;

/// Cuts an HTTP request head: everything up to and including the first empty line ("\r\n\r\n",
/// or "\n\n" from a lenient client). A head longer than max_frame is reported as that size plus
/// one (the session refuses it). Stateless; any thread.
const framer& http_head_framer() noexcept;

/// The response to one request head: status line, headers and body, ready to send.
/// `render` is called only for GET /metrics. Any thread.
std::string http_response_for(std::string_view head, const std::function<std::string()>& render);

class metrics_endpoint {
public:
    using renderer = std::function<std::string()>;

    struct limits {
        std::chrono::milliseconds request_timeout{2000};  // whole head within this of connecting
        std::size_t max_connections = 64;
        std::uint32_t max_head = 8 * 1024;
    };

    /// Listens on 127.0.0.1:port (0 = any free port) on shard `sh`, whose thread calls render()
    /// for each scrape. Call on the engine's owning thread before the engine starts. Throws
    /// std::runtime_error with one sentence when the port cannot be bound.
    metrics_endpoint(shard& sh, std::uint16_t port, renderer render, limits lim);
    metrics_endpoint(shard& sh, std::uint16_t port, renderer render)
        : metrics_endpoint(sh, port, std::move(render), limits{}) {}

    /// The same, serving r.render(); the endpoint also counts itself in r
    /// (strix_metrics_requests_total, strix_metrics_timeouts_total) until it is destroyed. r must
    /// outlive the endpoint.
    metrics_endpoint(shard& sh, std::uint16_t port, metrics_registry& r, limits lim);
    metrics_endpoint(shard& sh, std::uint16_t port, metrics_registry& r) : metrics_endpoint(sh, port, r, limits{}) {}
    /// Once the shard no longer runs (after engine::join), or on the shard.
    ~metrics_endpoint();
    metrics_endpoint(const metrics_endpoint&) = delete;
    metrics_endpoint& operator=(const metrics_endpoint&) = delete;

    /// The port actually bound. Any thread.
    std::uint16_t port() const noexcept { return port_; }
    /// The endpoint's own connection counters (timeouts, refusals). Any thread (a snapshot).
    const net_counters& counters() const noexcept { return group_->counters(); }

private:
    class handler;
    std::unique_ptr<handler> handler_;
    std::unique_ptr<admission> caps_;
    std::unique_ptr<session_group> group_;  // after handler_ and caps_: destroyed first
    std::vector<metrics_registry::registration> metric_regs_;  // read group_: dropped before it
    std::uint16_t port_ = 0;
};

}  // namespace strix
