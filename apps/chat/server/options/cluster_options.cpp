#include "cluster_options.hpp"

#include "apps/chat/cluster/redis_options.hpp"

#include <CLI/CLI.hpp>

#include <stdexcept>

namespace strix::chat {

void add_cluster_options(CLI::App& app, cluster_options& c) {
    app.add_option("--cluster", c.redis,
                   "cluster mode: the Redis every node shares, redis://host:port (needs a postgresql:// --db)");
    app.add_option("--node-id", c.node_id, "cluster mode: this node's id, 1-65535, different on every node");
    app.add_option("--node-ttl-ms", c.node_ttl_ms,
                   "cluster mode: a node silent this long is offline for the others (heartbeats every third of it)")
        ->capture_default_str();
    app.add_option("--node-scan-ms", c.node_scan_ms,
                   "cluster mode: how often a node looks for nodes gone silent (their members are shown offline "
                   "within --node-ttl-ms plus this)")
        ->capture_default_str();
    app.add_option("--position-check-ms", c.position_check_ms,
                   "cluster mode: how often a node compares each room's seq in Redis with what it delivered")
        ->capture_default_str();
    app.add_option("--stream-max", c.stream_max, "cluster mode: about this many recent messages per room kept in Redis")
        ->capture_default_str();
    app.add_option("--epoch-wait-ms", c.epoch_wait_ms,
                   "cluster mode: when Redis lost a room's state, wait this long for the other nodes' commits in "
                   "flight before continuing the room's seqs after the last stored one")
        ->capture_default_str();
}

std::string validate_cluster(const cluster_options& c, const std::string& db) {
    if (!c.enabled()) {
        if (c.node_id != 0) return "--node-id applies to cluster mode only: give --cluster redis://host:port too";
        return {};
    }
    try {
        (void)parse_redis_url(c.redis);
    } catch (const std::invalid_argument& e) {
        return std::string("--cluster: ") + e.what();
    }
    if (db.rfind("sqlite:", 0) == 0) {
        return "--cluster needs a PostgreSQL --db that every node shares; SQLite is one node's file "
               "(give --db postgresql://...)";
    }
    if (c.node_id == 0 || c.node_id > 65535)
        return "--cluster needs --node-id between 1 and 65535, different on every node";
    if (c.node_ttl_ms < 300) return "--node-ttl-ms must be at least 300";
    if (c.node_scan_ms < 10) return "--node-scan-ms must be at least 10";
    if (c.position_check_ms < 10) return "--position-check-ms must be at least 10";
    if (c.stream_max < 10) return "--stream-max must be at least 10";
    if (c.epoch_wait_ms > 60000) return "--epoch-wait-ms must be at most 60000";
    return {};
}

}  // namespace strix::chat
