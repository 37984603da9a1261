#pragma once
// cluster_presence: who is online in a room on the other nodes, for one shard's room host in
// cluster mode; part of its cluster_sequencer (docs/architecture.md, "Presence across nodes").
//
//   this node's sessions ─announce─> FCALL chat_presence (HSET/HDEL chat:{R}:o + PUBLISH chat:{R}:p)
//   chat:{R}:p ──> on_message ──┐
//   HGETALL chat:{R}:o ─────────┴─> remote view of R ─> member_joined/_presence/_left to locals
//   node_registry (shard 0) ──alive nodes──> every shard: a dead node's accounts go offline
//
// The remote view of a room is kept while the node watches it (has sessions in it): it is read
// from the hash before the first local join (so join_room_res lists other nodes' members with
// their online state), and again on every subscription confirmation (a late subscription, a
// Redis restart), and the difference is told to the local members; a channel message applied
// twice changes nothing. An entry counts only while its node is alive with that incarnation;
// the entries of a node found dead are dropped here and in Redis (by every node that notices,
// idempotently). This node re-announces its online members when its Redis connection comes
// back and when the registry sees it alive again after others could have cleared it.
// Everything here runs on the owning shard.

#include "member.hpp"
#include "apps/chat/storage/chat_store.hpp"
#include "room_id.hpp"
#include "apps/chat/cluster/node_registry.hpp"
#include "apps/chat/cluster/presence_backplane.hpp"
#include "apps/chat/cluster/redis_client.hpp"
#include "apps/chat/cluster/redis_subscriber.hpp"

#include <strix/core/timing_wheel.hpp>

#include <boost/unordered/unordered_flat_map.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strix::chat {

class room;
class room_host;
class cluster_sequencer;
struct cluster_options;

/// The room a channel "chat:{<room>}:..." is about (0 when malformed). Any thread.
room_id room_of_channel(std::string_view channel);

class cluster_presence {
public:
    /// For the rooms of `host` (whose sequencer is `seq`) on shard `sh`; `registry`: this shard
    /// also heartbeats the node and watches the others (one shard per node). Changes are
    /// announced through `publisher` (the sequencer's chat_publish connection, so a node's
    /// presence changes and its messages reach Redis in the order it decided them; it must
    /// outlive this object). Built on the shard or before the engine runs.
    cluster_presence(room_host& host, cluster_sequencer& seq, shard& sh, const redis_options& ro,
                     redis_client& publisher, std::uint32_t node, const cluster_options& co, bool registry);
    ~cluster_presence();
    cluster_presence(const cluster_presence&) = delete;
    cluster_presence& operator=(const cluster_presence&) = delete;

    /// This process's incarnation: what its heartbeat and its online entries carry. Any thread.
    static const std::string& incarnation();

    /// The node has sessions in r from now on / no longer: follow its presence channel or stop.
    /// Owning shard.
    void watch(const room& r);
    void unwatch(const room& r);
    /// Whether the remote view of the room was read (a join waits for that). Owning shard.
    bool primed(room_id id) const;
    /// Reads the room's online hash, then calls `then` (also when Redis did not answer: the
    /// next subscription confirmation reads it again). Owning shard.
    void prime(room_id id, std::function<void()> then);
    /// A change of this node's sessions: stored in the hash and published. Owning shard.
    void announce(const room& r, presence_change what, std::uint64_t account, std::string_view name);
    /// This node deleted the room (in the database): the other nodes forget it. Owning shard.
    void announce_deleted(room_id id);
    /// Whether the account has a session in the room on another (live) node. Owning shard.
    bool online_elsewhere(room_id id, std::uint64_t account) const;
    /// The room's member accounts with the online state across nodes as join_room_res lists them
    /// (none in a room larger than `limit`), and its summary (counts kept by the room, O(1)).
    std::vector<room_member> accounts(const room& r, std::size_t limit) const;
    room_summary summary(const room& r) const;
    /// The nodes alive at the registry's last scan (node -> incarnation). Posted to every shard
    /// by the registry's shard.
    void nodes_changed(const std::map<std::uint32_t, std::string>& alive);
    /// The alive nodes, once a scan reported them. Owning shard.
    const std::optional<std::map<std::uint32_t, std::string>>& alive() const noexcept { return alive_; }
    /// The command connection (list_rooms reads online counts through it). Owning shard.
    redis_client& redis() noexcept { return *redis_; }

    // --- signals: published, never stored (cluster_presence_signals.cpp) --------------------
    //   chat:{R}:e   "<node> t <account> <name>"        a member typing in R
    //                "<node> r <account> <seq>"         an account's read marker in R rose
    //   chat:ctl     "<node> d <room> <created 0|1> <account> <name> <account> <name>"
    //                                                  the two accounts of direct room <room>
    //                                                  (created: the room is new, all of it here)
    //                "<node> b <room> <blocker> <blocked> <0|1>"   a block in a direct room
    //                "<node> x <account> <name>"       the server API closed the account's
    //                                                  sessions: every node closes its own
    //                "<node> g <room>"                 the server API deleted the room (stored):
    //                                                  every node's sessions leave it
    // A node follows chat:{R}:e while it watches R, and chat:ctl on its registry shard. What is
    // published while a node does not follow is lost to it: typing is ephemeral anyway, a read
    // marker and a direct room reach its sessions at their next login, a block at the room's
    // next load.

    void signal_typing(room_id id, std::uint64_t account, std::string_view name);
    void signal_read(room_id id, std::uint64_t account, std::uint64_t seq);
    void signal_direct(const stored_room& info, bool created);
    void signal_block(room_id id, std::uint64_t blocker, std::uint64_t blocked, bool on);
    void signal_disconnect(const account& a);
    void signal_deleted(room_id id);

private:
    using entry_key = std::pair<std::uint64_t, std::uint32_t>;  // account, node
    struct room_state {
        std::map<entry_key, std::string> remote;  // online elsewhere -> incarnation
        bool primed = false;
        std::uint64_t version = 0;  // the newest hash version applied (read or message)
        std::vector<std::function<void()>> waiting;  // joins waiting for the first read
    };

    void read(room_id id);
    void apply_hash(room_id id, const std::vector<online_entry>& entries, const std::vector<std::uint64_t>& left);
    void forget_remote(room& r, room_state& st, std::uint64_t account);
    void on_message(std::string_view channel, std::string_view payload);
    // A signal from another node (cluster_presence_signals.cpp): true when `channel` carries
    // signals (handled or dropped here).
    bool on_signal(std::string_view channel, std::string_view payload);
    void publish_signal(std::string channel, std::string payload);
    void on_subscribed(std::string_view channel);
    void forget_versions();
    // Redis may have restarted empty: for a grace period (--node-ttl-ms) entries missing from a
    // room's hash are not taken for members gone offline (their nodes are putting them back);
    // such rooms are read again when it ends.
    void start_grace();
    void grace_over();
    void set_online(room& r, room_state& st, std::uint64_t account, std::uint32_t node, std::string inc,
                    std::string_view name);
    void set_offline(room& r, room_state& st, std::uint64_t account, std::uint32_t node);
    bool online_anywhere(const room& r, const room_state& st, std::uint64_t account) const;
    bool counts(std::uint32_t node, const std::string& inc) const;
    void clear_node(std::vector<std::string> rooms, std::uint32_t node);
    void broadcast_alive();

public:
    /// Announces every online member of the watched rooms again (idempotent for the others).
    /// Owning shard.
    void reannounce();

private:
    room_host& host_;
    cluster_sequencer& seq_;
    shard& shard_;
    const std::uint32_t node_;
    redis_client& publisher_;
    std::unique_ptr<redis_client> redis_;  // reads, clears, and a reconnect noticed
    std::unique_ptr<redis_subscriber> sub_;
    std::unique_ptr<node_registry> registry_;
    boost::unordered_flat_map<room_id, room_state> rooms_;
    std::optional<std::map<std::uint32_t, std::string>> alive_;
    bool self_alive_ = false;
    std::uint64_t connections_ = 0;
    bool sub_seen_up_ = false;
    const std::chrono::milliseconds grace_;
    std::chrono::steady_clock::time_point grace_until_{};
    std::vector<room_id> reread_;  // rooms whose hash lacked entries during the grace
    timer_node grace_timer_;
    std::shared_ptr<bool> alive_flag_ = std::make_shared<bool>(true);
};

}  // namespace strix::chat
