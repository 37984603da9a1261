#pragma once
// node_registry: which chat nodes are alive, by heartbeats in Redis with an expiry, so a node
// that dies (kill -9, a lost machine) has its members shown offline everywhere within a bounded
// time: at most ttl + scan_interval after its last heartbeat.
//
//   chat:node:<id>   string  the node's incarnation (random per process), SET ... PX ttl every
//                            ttl/3: it disappears ttl after the node's last heartbeat
//   chat:nodes       set     every node id ever seen (SADD); a scan MGETs their keys
//
// Each node scans every scan_interval and reports changes: up(id) for a node seen for the first
// time or with a new incarnation (it restarted: what its previous run had is gone), down(id)
// for a node whose key expired. A node's own id is reported too, so a node whose heartbeats
// could not reach Redis for a whole ttl learns that the others consider it down.
// After its Redis connection comes back, no node is reported down for one ttl (the heartbeats a
// Redis restart lost are sent again meanwhile); a new incarnation is still reported at once.
// Run it on one shard per node. Everything here is for the owning shard only.

#include "apps/chat/cluster/redis_client.hpp"

#include <strix/core/timing_wheel.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace strix::chat {

struct node_registry_options {
    std::uint32_t node_id = 0;
    std::chrono::milliseconds ttl{3000};            // heartbeats every ttl/3
    std::chrono::milliseconds scan_interval{1000};
    std::string incarnation;  // this run's; empty: a random one (new_epoch())
};

class node_registry {
public:
    struct events {
        std::function<void(std::uint32_t node)> up;
        std::function<void(std::uint32_t node)> down;
        /// This node's heartbeat had expired when it beat again (its beats were late by more
        /// than ttl): the others may have reported it down meanwhile.
        std::function<void()> lapsed;
    };

    /// Starts heartbeating and scanning at once. On the shard, or before the engine runs.
    node_registry(shard& sh, const redis_options& opts, node_registry_options no, events ev);
    ~node_registry();
    node_registry(const node_registry&) = delete;
    node_registry& operator=(const node_registry&) = delete;

    /// Nodes alive at the last scan, with their incarnations. Owning shard.
    const std::map<std::uint32_t, std::string>& alive() const noexcept { return alive_; }
    const std::string& incarnation() const noexcept { return incarnation_; }
    /// Heartbeats that found another incarnation under this node's id (two nodes given one id).
    std::uint64_t id_conflicts() const noexcept { return conflicts_; }

private:
    void beat();
    void scan();
    void on_scan(const resp_reply& ids, const resp_reply& values);

    shard& owner_;
    node_registry_options no_;
    events ev_;
    std::string incarnation_;
    std::string key_;
    std::unique_ptr<redis_client> redis_;
    timer_node beat_timer_;
    timer_node scan_timer_;
    std::map<std::uint32_t, std::string> alive_;
    std::uint64_t beats_ = 0;
    std::uint64_t conflicts_ = 0;
    bool scanning_ = false;
    std::uint64_t connections_ = 0;
    // A Redis restarted empty forgot every heartbeat: for one ttl after a reconnect, a node
    // missing from a scan is not reported down (it beats again within ttl/3).
    std::chrono::steady_clock::time_point grace_until_{};
    std::shared_ptr<bool> alive_flag_ = std::make_shared<bool>(true);
};

}  // namespace strix::chat
