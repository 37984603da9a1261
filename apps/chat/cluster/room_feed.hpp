#pragma once
// room_feed: one shard's supply of room messages from Redis, for the rooms it has local members
// in. It turns Redis pub/sub (fast, but lossy across a reconnect and silent when it stalls) into
// each watched room's messages in seq order, each once, by reading the room's stream whenever
// pub/sub cannot be trusted:
//
//   watch(room, after) ──SUBSCRIBE──> subscribed ──chat_since(after)──> catch up from the stream
//   pub/sub message seq == delivered+1 ──────────────────────────────> deliver
//   seq > delivered+1 (a hole: lost in a reconnect) ──buffer, chat_since──> fill, then deliver
//   seq <= delivered ─────────────────────────────────────────────────> duplicate, dropped
//   every check_interval: chat_positions for all rooms (batched); a room still behind a whole
//     interval later (a silent pub/sub stall) ──chat_since──> fill
//
// What the stream cannot give is reported, never papered over: when the room's epoch changed
// (Redis lost its data) or the stream was trimmed past what was delivered, sink.gap names the
// seqs that are gone and the feed goes on from what Redis has; the owner fills the gap from
// the database.
//
// A room is subscribed while watched (watch/unwatch count: one per local member is fine) and
// unsubscribed when the last local watcher leaves. Everything here is for the owning shard only;
// the sink is called there.

#include "apps/chat/cluster/redis_client.hpp"
#include "apps/chat/cluster/redis_subscriber.hpp"
#include "apps/chat/cluster/room_backplane.hpp"

#include <strix/core/timing_wheel.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace strix::chat {

struct room_feed_options {
    std::chrono::milliseconds check_interval{1000};  // the position check's period
    std::uint32_t fetch_limit = 500;  // stream entries per read
    std::size_t max_buffered = 2000;  // pub/sub messages held per room while filling
    std::size_t check_batch = 256;  // rooms per chat_positions call
};

/// What a feed has done, for metrics and the fault figures. Owning shard.
struct room_feed_stats {
    std::uint64_t delivered = 0;  // messages handed to the sink
    std::uint64_t from_stream = 0;  // ... of which read from the stream (not pub/sub)
    std::uint64_t duplicates = 0;  // pub/sub or stream copies of delivered messages, dropped
    std::uint64_t reads = 0;  // chat_since reads of entries
    std::uint64_t checks = 0;  // position check calls (one per batch of rooms)
    std::uint64_t stalls = 0;  // checks that found a room behind for a whole interval
    std::uint64_t gaps = 0;  // sink.gap calls
    std::uint64_t resubscribed = 0;  // subscriptions confirmed after a reconnect
};

class room_feed {
public:
    /// The sink is called on the owning shard from inside the feed: it must not call watch()
    /// or unwatch() directly (post them to the shard).
    struct sink {
        /// One message of a watched room, in seq order, once.
        std::function<void(std::string_view room, std::uint64_t seq, std::string_view body)> message;
        /// Seqs in (from, to] cannot come from Redis (epoch_changed: Redis lost the room's
        /// data; else the stream was trimmed). Delivery goes on with seq to + 1. With
        /// epoch_changed, `to` may be below `from`: the new epoch's seqs started at a floor
        /// below what was delivered (the publisher's floor lagged), so seqs are reused.
        std::function<void(std::string_view room, std::uint64_t from, std::uint64_t to, bool epoch_changed)> gap;
    };

    /// Opens its own command and pub/sub connections to opts.target. On the shard, or before
    /// the engine runs.
    room_feed(shard& sh, const redis_options& opts, sink s, room_feed_options fo = {});
    ~room_feed();
    room_feed(const room_feed&) = delete;
    room_feed& operator=(const room_feed&) = delete;

    /// Delivers the room's messages after seq `after` (of `epoch`; empty = whatever Redis has).
    /// A room already watched only gains a watcher (its position stays). Owning shard.
    void watch(const std::string& room, std::uint64_t after, const std::string& epoch = {});
    /// Drops one watcher; the last one unsubscribes. Owning shard.
    void unwatch(const std::string& room);
    /// The last seq delivered for a watched room (0 if not watched). Owning shard.
    std::uint64_t delivered(const std::string& room) const;
    bool watching(const std::string& room) const { return rooms_.contains(room); }

    const room_feed_stats& stats() const noexcept { return stats_; }
    /// The pub/sub connection is up and every watched room is subscribed on it.
    bool in_sync() const;

private:
    struct room_state {
        unsigned watchers = 0;
        std::uint64_t delivered = 0;
        std::string epoch;
        bool reading = false;  // a chat_since for entries is in flight
        bool read_again = false;  // something asked for a read while one was in flight
        bool checking = false;  // a position check is in flight
        std::uint64_t checked_top = 0;  // the room's top seq at the previous position check
        std::map<std::uint64_t, std::string> early;  // pub/sub messages past a hole, by seq
    };

    void on_message(std::string_view channel, std::string_view payload);
    void on_subscribed(std::string_view channel);
    void read(const std::string& room, bool from_start = false);
    void on_read(const std::string& room, room_state& st, const room_since& s, bool from_start);
    void deliver(const std::string& room, room_state& st, std::uint64_t seq, std::string_view body, bool stream);
    void drain_early(const std::string& room, room_state& st);
    void check();
    void on_position(const std::string& room, room_state& st, const room_position& at);
    std::string room_of(std::string_view channel) const;

    shard& owner_;
    sink sink_;
    room_feed_options fo_;
    std::unique_ptr<redis_client> commands_;
    std::unique_ptr<redis_subscriber> pubsub_;
    std::unordered_map<std::string, room_state> rooms_;
    room_feed_stats stats_;
    timer_node timer_;
    bool seen_up_ = false;  // the pub/sub connection was up before (later subscriptions are re-)
    // Set while alive: callbacks of commands still in flight at destruction find it false.
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace strix::chat
