#pragma once
// cluster_sequencer: room sequencing in cluster mode (--cluster). Redis gives each room's
// messages one seq for the whole cluster and publishes them; every node's room_feed delivers the
// rooms it has sessions in, in seq order, once.
//
//   chat_req ─> owner shard: FCALL chat_publish ─> reply (seq) ─> chat log writer (that seq)
//   Redis PUBLISH chat:{R} ─> room_feed of every node watching R ─> feed_message ─> fan_out
//
// A node's own messages reach its members through the feed too, so one path orders them with
// the other nodes' messages. Gaps the feed cannot fill from Redis come from the database
// (room_gap_fill); who is online on the other nodes comes from cluster_presence. Rooms and
// memberships live in the shared database: a join for a room this node does not hold reads it
// from there first, list_rooms lists the database's rooms, and a room is deleted when the
// database says nobody belongs to it any more. docs/architecture.md, "The room service in
// cluster mode", tells the whole design.
//
// Files: cluster_sequencer.cpp (publishing and the feed), cluster_sequencer_floor.cpp (the floor
// a publish passes), cluster_sequencer_rooms.cpp (rooms as the shared database has them),
// cluster_sequencer_stream.cpp (what the Redis stream holds that the database lacks).
// Everything here runs on the owner shard, except database reads (on db_pool workers, posted
// back).

#include "cluster_presence.hpp"
#include "room_gap_fill.hpp"
#include "room_sequencer.hpp"
#include "apps/chat/cluster/redis_client.hpp"
#include "apps/chat/cluster/room_feed.hpp"

#include <strix/core/timing_wheel.hpp>
#include <strix/proto/chat_generated.h>

#include <boost/unordered/unordered_flat_map.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strix::chat {

class chat_service;

class cluster_sequencer final : public room_sequencer {
public:
    /// For shard `self`'s room host on node `ctx.options.cluster.node_id`; opens this shard's
    /// Redis connections. Built on any thread before the engine runs; used on shard `self`.
    cluster_sequencer(room_host& host, chat_context& ctx, unsigned self, chat_counters& counters);
    ~cluster_sequencer() override;

    /// The cluster sequencer of `svc`'s shard (on a cluster node every shard's sequencer is
    /// one). That shard.
    static cluster_sequencer& of(chat_service& svc);

    void chat(room& r, chat_request& req) override;

    void fetch(room_id id, std::function<void(room*, bool)> then) override;
    bool load(room_id id, member& m, bool rejoin) override;
    bool defer_join(const room& r, member& m, bool rejoin) override;
    std::uint64_t join_point(const room& r) const override;
    shared_buffer_ptr join_room_res(const room& r, std::uint64_t join_seq) const override;
    bool online_elsewhere(room_id id, std::uint64_t account) const override;
    void watch(const room& r) override;
    void unwatch(const room& r) override;
    void announce(const room& r, presence_change what, std::uint64_t player_id, std::string_view name) override;
    bool left(room& r, std::int64_t now, std::uint64_t& ticket) override;
    bool holds_idle_rooms() const noexcept override { return false; }
    void typed(const room& r, std::uint64_t account, std::string_view name) override;
    void marked_read(const room& r, std::uint64_t account, std::uint64_t seq) override;
    void direct_opened(const stored_room& info, bool created) override;
    void block_changed(room_id id, std::uint64_t blocker, std::uint64_t blocked, bool on) override;
    void disconnected(const account& a) override;
    void deleted_by_api(room_id id) override;

    bool list_rooms(std::size_t limit, std::function<void(std::optional<std::vector<room_summary>>)> done) override;
    void complete_resume(std::uint64_t from, std::uint64_t to, stored_range rows,
                         std::function<void(stored_range)> done) override;

    void stop() override;

    // --- for cluster_presence ----------------------------------------------------------------

    /// Node `node` was found down (or restarted): the messages it published that are still in
    /// the streams of the rooms this shard watches are queued for the database,
    /// insert-if-absent, since it may have died between publishing and committing them while
    /// members here got them. Owner shard.
    void store_left_by(std::uint32_t node);
    /// This shard's presence, or nullptr once stopped. Owner shard.
    cluster_presence* presence() noexcept { return presence_.get(); }

private:
    // A room read from the database for a join (nothing when it does not exist): kept unless
    // the room arrived meanwhile, then the join goes on. Owner shard.
    void loaded(room_id id, std::optional<stored_room> r, member m, bool rejoin);
    // The database deleted room `id` on this node's request (its last member left): the other
    // nodes are told, and the room is forgotten here. Owner shard.
    void room_deleted(room_id id);
    // Fills in each room's online count (accounts online on live nodes, from Redis; left as it
    // is when Redis does not answer), then calls `done`. Owner shard.
    void online_counts(std::vector<room_summary> rooms, std::function<void(std::vector<room_summary>)> done);
    // What the room's Redis stream holds of seqs (after, after + limit], as chat log entries in
    // seq order (the stream has what the database may not have yet: a commit still pending, or
    // a publisher that stopped before its commit); nullopt when Redis did not answer. Entries
    // that are also in the database carry the same fields. Each shard has its own Redis
    // connection: `done` runs on this shard.
    // `only_node`: just the messages that node published (0: all).
    void read_stream(room_id id, std::uint64_t after, std::uint32_t limit,
                     std::function<void(std::optional<std::vector<chat_log_entry>>)> done, std::uint32_t only_node = 0);
    // The database's last seq of room `id` as read for connection `conn` of the publisher
    // (cluster_sequencer_floor.cpp). Posted by a worker.
    void floor_read(room_id id, std::uint64_t newest, std::uint64_t conn, bool settled = false);

    void publish(room& r, chat_request& req);
    // req was not published: its `taken` hears why, else its sender's session gets the error.
    void refuse(chat_request& req, room_id id, proto::error_code code, const char* why);
    // chat_publish answered req's publish with `at` (queued as write `ticket`): a server API post
    // is told; with no session here in the room its copy will not come back through the feed,
    // so nothing waits for it.
    void told_taken(chat_request& req, room_id id, std::uint64_t no, const room_position& at, std::uint64_t ticket);
    // The floor a chat_publish passes (Redis starts a room that lost its state there): the
    // highest seq known taken, from this node's feed, its own publish replies and the database,
    // read again for a room's first publish after every reconnect of the publisher
    // (cluster_sequencer_floor.cpp). False: req waits for that read and is published after it.
    bool floor_ready(room& r, chat_request& req);
    std::uint64_t floor_of(const room& r) const;
    void published(room_id id, std::uint64_t seq);
    // Redis has no state for the room and this node's publish did not start one: `req` goes back
    // to the front of the room's queue, and the room's floor is read again after --epoch-wait-ms.
    void no_room_state(room_id id, chat_request req);
    void settle_due();
    void read_floor(room_id id, std::uint64_t conn, bool settled);
    void feed_message(std::string_view room_key, std::uint64_t seq, std::string_view body);
    // A room's next message in seq order (from the feed, or a gap's from the database; an empty
    // body: seqs up to `seq` are lost, reported to the members as a gap).
    void feed_ordered(room_id id, std::uint64_t seq, std::string_view body);
    void deliver_chat(room& r, std::uint64_t seq, std::string_view body);
    void release(room_id id);
    void feed_gap(std::string_view room_key, std::uint64_t from, std::uint64_t to, bool epoch_changed);
    // After a member left for good: the database decides whether anyone still belongs to the
    // room, and deletes it if not (cluster_sequencer_rooms.cpp).
    void delete_if_empty(room_id id);

    room_host& host_;
    chat_context& ctx_;
    const unsigned self_;
    chat_counters& counters_;
    const std::uint32_t node_id_;                 // --node-id
    std::unique_ptr<redis_client> publisher_;     // FCALL chat_publish
    std::unique_ptr<room_feed> feed_;             // the watched rooms' messages
    std::unique_ptr<cluster_presence> presence_;  // the watched rooms' presence
    std::unique_ptr<room_gap_fill> gap_fill_;     // the feed's gaps, from the database
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for replies after stop()
    // This node's own publishes by number: absent once delivered or failed, no_ticket while
    // chat_publish has not answered, else the database write's ticket (the delivery waits for
    // its commit: the sender's copy is its acknowledgement).
    static constexpr std::uint64_t no_ticket = ~std::uint64_t{0};
    std::uint64_t publish_no_ = 0;
    boost::unordered_flat_map<std::uint64_t, std::uint64_t> own_;
    // Per room, the feed's messages held behind one of ours whose chat_publish reply (and so
    // its ticket) has not come yet: pub/sub may be faster than the command connection.
    boost::unordered_flat_map<room_id, std::deque<std::pair<std::uint64_t, std::string>>> stashed_;
    // This node's publishes by (room, seq) from chat_publish's reply until the feed delivered
    // them: a gap fill that reads one from the database (its feed copy was lost) restores the
    // origin and client fields, so its sender still gets it as its acknowledgement.
    struct own_publish {
        std::uint64_t no = 0, client_ts = 0, client_seq = 0;
    };
    boost::unordered_flat_map<std::pair<room_id, std::uint64_t>, own_publish> own_seqs_;
    struct publish_floor {
        std::uint64_t seq = 0;                      // the highest seq known taken besides the room's last_seq
        std::uint64_t checked = ~std::uint64_t{0};  // the publisher's connects() the database was read at
        // The connects() at which the database was read --epoch-wait-ms after Redis was found
        // without the room: only then may this node's publish start a new epoch.
        std::uint64_t settled = ~std::uint64_t{0};
        bool reading = false;              // a read of the database's last seq is in flight (or waited for)
        bool settling = false;             // waiting out --epoch-wait-ms before that read
        std::size_t returned = 0;          // chats at the front of waiting that Redis sent back
        std::deque<chat_request> waiting;  // chats for the room meanwhile, in arrival order
    };
    boost::unordered_flat_map<room_id, publish_floor> floors_;
    // Rooms waiting out --epoch-wait-ms, with when their wait ends (in order of that time).
    std::deque<std::pair<room_id, std::chrono::steady_clock::time_point>> settle_queue_;
    timer_node settle_timer_;
};

}  // namespace strix::chat
