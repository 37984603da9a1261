#pragma once
// cluster_options: strix-chat-server's cluster mode settings: --cluster
// redis://host:port, --node-id N and the bounds of the Redis backplane. Part of chat_options
// (same config-file keys as the long option names).

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace strix::chat {

struct cluster_options {
    std::string redis;               // --cluster redis://host:port; empty = a single node
    std::uint32_t node_id = 0;       // --node-id: 1..65535, unique per node
    std::uint32_t node_ttl_ms = 3000;  // --node-ttl-ms: a silent node is offline after this (+ a scan)
    std::uint32_t node_scan_ms = 1000; // --node-scan-ms: how often a node looks for dead nodes
    std::uint32_t position_check_ms = 1000;  // --position-check-ms: the pub/sub stall check's period
    std::uint32_t stream_max = 1000;  // --stream-max: messages per room kept in Redis (about)
    // --epoch-wait-ms: how long a node waits, when Redis has lost a room's state, for the other
    // nodes' commits in flight before reading the room's last stored seq and starting a new epoch
    // after it (cluster_sequencer_floor.cpp).
    std::uint32_t epoch_wait_ms = 500;

    bool enabled() const noexcept { return !redis.empty(); }
};

/// Adds the options above to the server's command line. Main thread.
void add_cluster_options(CLI::App& app, cluster_options& c);

/// Empty when valid, else one sentence naming the problem and the fix. `db` is the --db URL:
/// cluster mode needs PostgreSQL (one database every node shares). Any thread.
std::string validate_cluster(const cluster_options& c, const std::string& db);

}  // namespace strix::chat
