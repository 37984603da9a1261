#pragma once
// room_host: the rooms one shard owns. Every decision about a room is made here, on its owner
// shard: who is a member, the next seq, whether a message is accepted (queued for the database).
// The outcome goes to the shards that have members as room_events (one per shard), and failures
// go back to the requesting session's shard as error replies.
//
// Room ids name their creating shard, which owns the room (room_id.hpp: modulo the shard count,
// so a room loaded from the database after a restart with fewer shards still has an owner).
//
// Acknowledged means stored (--ack stored, the default). Every database write a decision needs
// (a chat log entry, a room created, deleted, joined or left) goes to the chat log writer with a
// ticket, numbered per owner shard: tag = shard_stamp::pack(ticket, shard). The events that announce the
// decision wait in held_, in decision order, until the writer reports that ticket committed
// (committed(), one post per committed batch and shard); events that need no write but come
// after a waiting one wait behind it, so every shard still sees a room's events in the owner's
// order and a chat_msg of seq N never overtakes N-1. With --ack early nothing waits.
//
//   decide ─> writer.try_enqueue(tag) ─> held_ [ev t=7][ev t=7][ev t=0][ev t=8]   (FIFO)
//   writer thread: commit batch ─> post committed(8) to this shard ─> deliver the front up to t=8
//
// Cluster mode (--cluster, room_host_cluster.cpp): Redis assigns the seq and publishes, and
// every node's room_feed delivers the messages; see docs/architecture.md, "The room service in
// cluster mode".

#include "cluster_presence.hpp"
#include "member.hpp"
#include "member_notices.hpp"
#include "room.hpp"
#include "room_event.hpp"
#include "room_gap_fill.hpp"
#include "room_id.hpp"
#include "apps/chat/cluster/redis_client.hpp"
#include "apps/chat/cluster/room_feed.hpp"
#include "apps/chat/server/service/chat_counters.hpp"

#include <strix/proto/chat_generated.h>
#include "apps/chat/storage/chat_store.hpp"

#include <boost/unordered/unordered_flat_map.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace strix::chat {

struct chat_context;
class chat_service;

/// A chat message on its way to the room's owner.
struct chat_request {
    room_id room;
    member sender;
    std::string text;
    std::uint64_t client_ts = 0;
    std::uint64_t client_seq = 0;
};

class room_host {
public:
    friend class cluster_presence;  // cluster mode: tells this shard's members of other nodes' changes

    /// Rooms owned by shard `self`, hosted by that shard's service (which reaches the other
    /// shards). Built on any thread; used on shard `self` only.
    room_host(chat_service& service, chat_context& ctx, unsigned self, chat_counters& counters);

    /// A fresh room id owned by this shard. Owner shard only.
    /// In cluster mode the counter also carries the node id (low 16 bits), so two nodes that
    /// started from the same database never hand out the same id.
    room_id allocate_id() noexcept {
        const std::uint64_t c = next_counter_++;
        return room_id::make(node_id_ == 0 ? c : (c << 16) | node_id_, self_);
    }

    /// Takes a room loaded from the database (its owner is this shard): no member present,
    /// its accounts absent, its seq continuing after the last stored message. Before the engine
    /// starts, on the thread that builds the server.
    void restore(stored_room r);

    /// Creates room `id` (from allocate_id) with `creator` as its only member and stores it; the
    /// creator's shard (this one) gets a joined event carrying create_room_res once stored, or
    /// server_busy when the database queue is full. Owner shard only.
    void create(room_id id, std::string name, member creator);

    /// Adds session m to the room and stores that m's account belongs to it: join_room_res to m
    /// (every member with its online state, the last seq), and to the others member_joined for a
    /// new member, member_presence (online) for a member coming back; unknown_room,
    /// already_in_room or server_busy back to m's shard otherwise. `rejoin`: the login of an
    /// account that belongs to the room (nothing to store; a room that is gone fails silently).
    /// Owner shard only.
    /// In cluster mode a room this node does not hold is loaded from the shared database first
    /// (`after_load`: that was done; a second miss is unknown_room).
    void join(room_id id, member m, bool rejoin = false, bool after_load = false);
    /// A room read from the database for a join (cluster mode; nothing when it does not exist):
    /// kept unless the room arrived meanwhile, then the join goes on. Owner shard only.
    void loaded(room_id id, std::optional<stored_room> r, member m, bool rejoin);

    /// Removes the session from the room. `reply`: it asked to leave: leave_room_res to it, the
    /// account no longer belongs to the room (stored; member_left to the others), and a room
    /// nobody belongs to any more is deleted (in cluster mode the database decides, once the leave is
    /// stored: a node's view may be stale). Without `reply` (the session closed) failures are
    /// silent and the account stays a member, offline (member_presence to the others), to be put
    /// back by its next login. Either way only the account's last session in the room counts.
    /// Owner shard only.
    void leave(room_id id, std::uint64_t session_id, unsigned session_shard, bool reply);

    /// Checks membership, assigns the seq, queues the log record for the database and broadcasts
    /// the chat_msg (after the commit with --ack stored), in that order: a message the database
    /// queue refused is neither sequenced nor sent (server_busy to the sender). In cluster mode
    /// Redis assigns the seq (chat_publish) and the feed delivers it, after the commit. Owner
    /// shard only.
    void chat(chat_request& req);
    /// Whether this node runs in cluster mode (its messages are sequenced by Redis). Any thread.
    bool clustered() const noexcept { return node_id_ != 0; }

    /// The writer committed every write of this shard up to ticket `upto`: deliver what waited
    /// for them. Posted by the writer thread, runs on the owner shard.
    void committed(std::uint64_t upto);

    /// Cluster mode: the database deleted room `id` on this node's request (its last member
    /// left): the other nodes are told, and the room is forgotten here. Posted by a worker.
    void room_deleted(room_id id);
    /// Cluster mode: fills in each room's online count (accounts online on live nodes, from
    /// Redis; left as it is when Redis does not answer), then calls `done`. Any shard, for
    /// that shard's room_host.
    void online_counts(std::vector<room_summary> rooms, std::function<void(std::vector<room_summary>)> done);

    /// Cluster mode: what the room's Redis stream holds of seqs (after, after + limit], as chat
    /// log entries in seq order (the stream has what the database may not have yet: a commit
    /// still pending, or a publisher that stopped before its commit); nullopt when Redis did
    /// not answer. Entries that are also in the database carry the same fields. Each shard has
    /// its own Redis connection: any shard, for that shard's room_host, which calls `done` there.
    /// `only_node`: just the messages that node published (0: all).
    void read_stream(room_id id, std::uint64_t after, std::uint32_t limit,
                     std::function<void(std::optional<std::vector<chat_log_entry>>)> done,
                     std::uint32_t only_node = 0);
    /// Cluster mode: node `node` was found down (or restarted): the messages it published that
    /// are still in the streams of the rooms this shard watches are queued for the database,
    /// insert-if-absent, since it may have died between publishing and committing them while
    /// members here got them. Owner shard.
    void store_left_by(std::uint32_t node);

    /// Events waiting for a commit (or behind one). Owner shard only.
    std::size_t held() const noexcept { return held_.size(); }

    /// Every room this shard owns. Owner shard only.
    std::vector<room_summary> summaries() const;

    /// Sends every pending member notice now. Owner shard only.
    void flush_notices();
    /// Cancels the notice timer; later notices go out at once (the shard is exiting). Owner
    /// shard only.
    void stop();
    std::size_t size() const noexcept { return rooms_.size(); }

private:
    struct held_event {
        std::uint64_t ticket;  // the write it waits for; 0: none (it only keeps its place)
        unsigned to;
        room_event ev;
    };

    // Sends ev to shard `to` once write `ticket` is committed and everything decided before it
    // went out: applied at once when `to` is this shard, else posted (FIFO per pair).
    void deliver(unsigned to, room_event ev, std::uint64_t ticket);
    void send_event(unsigned to, room_event ev);
    // Sends one event per shard with members of r; `subject_shard` always gets one (it may have
    // just lost its last member) with `to_subject` attached. `ticket` as for deliver.
    void fan_out(const room& r, room_event::kind what, std::uint64_t subject, unsigned subject_shard,
                 const shared_buffer_ptr& to_subject, const shared_buffer_ptr& to_members, std::uint64_t ticket = 0,
                 std::uint64_t seq = 0);
    // Queues a write for the database: the ticket to wait for (0 with --ack early), or nothing
    // when the queue is full. `beyond_capacity` for changes that must not fail (see the writer).
    template <class Write>
    std::optional<std::uint64_t> write(Write w, bool beyond_capacity = false);
    void fail(unsigned shard, std::uint64_t session_id, room_id id, proto::msg_type request, proto::error_code code,
              const char* reason);
    // Member notices (see member_notices.hpp): queue one, or send a room's pending ones now.
    void notify(const room& r, std::uint64_t subject, unsigned subject_shard, bool joined, shared_buffer_ptr frame);
    void flush_notices(const room& r);
    // Cluster mode (room_host_cluster.cpp): Redis sequences and publishes the room's messages,
    // the feed delivers every room's messages (this node's own too) in seq order, once.
    void start_cluster();
    void stop_cluster();
    void cluster_chat(room& r, chat_request& req);
    void load_room(room_id id, member m, bool rejoin);
    // The floor a chat_publish passes (Redis starts a room that lost its state there): the
    // highest seq known taken, from this node's feed, its own publish replies and the database,
    // read again for a room's first publish after every reconnect of the publisher
    // (room_host_cluster_floor.cpp). False: req waits for that read and is published after it.
    bool floor_ready(room& r, chat_request& req);
    std::uint64_t floor_of(const room& r) const;
    void published(room_id id, std::uint64_t seq);
    void floor_read(room_id id, std::uint64_t newest, std::uint64_t conn, bool settled = false);
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
    // Membership and presence changes of this node's sessions, for the other nodes
    // (cluster_presence: the room's online hash and its channel, not ordered with the room's
    // messages). No-op on one node.
    void announce(const room& r, presence_change what, std::uint64_t player_id, std::string_view name);
    // Another node deleted the room (its last member left there): forget it.
    void deleted_elsewhere(room_id id);
    // Cluster mode, after a member left for good: the database decides whether anyone still
    // belongs to the room, and deletes it if not (room_host_cluster_rooms.cpp).
    void delete_if_empty(room_id id);
    // Runs fn once write `ticket` is committed (at once for ticket 0 or one already committed).
    void after_commit(std::uint64_t ticket, std::function<void()> fn);
    void feed_gap(std::string_view room_key, std::uint64_t from, std::uint64_t to, bool epoch_changed);
    // The feed watches a room while this node has sessions in it (0 -> 1 and 1 -> 0).
    void watch(const room& r);
    void unwatch(const room& r);

    chat_service& service_;
    chat_context& ctx_;
    const unsigned self_;
    chat_counters& counters_;
    std::uint64_t next_counter_;
    boost::unordered_flat_map<room_id, room> rooms_;
    member_notices notices_;
    timer_node notice_timer_;  // sends what waits in notices_ after the notice delay
    bool stopped_ = false;
    const bool ack_stored_;               // --ack stored: events of a write wait for its commit
    std::uint64_t next_ticket_ = 1;       // the next write's ticket (per shard)
    std::uint64_t committed_ = 0;         // the writer committed every ticket up to this one
    std::deque<held_event> held_;         // decided, waiting for a commit or behind one
    std::deque<std::pair<std::uint64_t, std::function<void()>>> after_commit_;  // by ticket, ascending
    const std::uint32_t node_id_;         // --node-id in cluster mode, 0 on a single node
    std::unique_ptr<redis_client> publisher_;  // cluster mode: FCALL chat_publish
    std::unique_ptr<room_feed> feed_;          // cluster mode: the watched rooms' messages
    std::unique_ptr<cluster_presence> presence_;  // cluster mode: the watched rooms' presence
    std::unique_ptr<room_gap_fill> gap_fill_;     // cluster mode: the feed's gaps, from the database
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
        std::uint64_t seq = 0;                // the highest seq known taken besides the room's last_seq
        std::uint64_t checked = ~std::uint64_t{0};  // the publisher's connects() the database was read at
        // The connects() at which the database was read --epoch-wait-ms after Redis was found
        // without the room: only then may this node's publish start a new epoch.
        std::uint64_t settled = ~std::uint64_t{0};
        bool reading = false;                 // a read of the database's last seq is in flight (or waited for)
        bool settling = false;                // waiting out --epoch-wait-ms before that read
        std::size_t returned = 0;             // chats at the front of waiting that Redis sent back
        std::deque<chat_request> waiting;     // chats for the room meanwhile, in arrival order
    };
    boost::unordered_flat_map<room_id, publish_floor> floors_;
    // Rooms waiting out --epoch-wait-ms, with when their wait ends (in order of that time).
    std::deque<std::pair<room_id, std::chrono::steady_clock::time_point>> settle_queue_;
    timer_node settle_timer_;
};

}  // namespace strix::chat
