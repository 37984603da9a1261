#pragma once
// room_gap_fill: fills the gaps a room_feed reports (seqs Redis no longer has: a new epoch after
// Redis lost its data, or a stream trimmed past what this node delivered) from the shared
// database, so members get them in seq order instead of missing them. One per owner shard.
//
//   feed: gap (from, to] ──> gap() ──worker: history_page(after next-1)──> stored(): from+1 .. to
//   feed: messages past `to` ──> hold() ──(the fill is done)──────────────> released(), in order
//
// The database may not hold a seq yet (another node publishes before its commit: the ack waits
// for the database, the pub/sub copy does not) or never (a publisher died between FCALL and its
// commit). A seq missing from the database is read again every retry_interval until it turns up
// or wait_for_commit passed since it was first found missing; then it is reported (missing())
// and the fill goes on: a gap is reported, never skipped silently. A failing database read is
// retried the same way. Several gaps of one room are filled in the order they were reported.
//
// Everything here runs on the owner shard, except the database reads, which run on a db_pool
// worker and post their rows back.

#include "room_id.hpp"
#include "apps/chat/storage/chat_store.hpp"

#include <strix/core/timing_wheel.hpp>

#include <boost/unordered/unordered_flat_map.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strix {
class shard;
}

namespace strix::chat {

class db_pool;

struct gap_fill_options {
    std::chrono::milliseconds retry_interval{50};  // between reads while a seq is missing
    std::chrono::milliseconds wait_for_commit{1500};  // how long a missing seq is waited for
    std::size_t read_limit = 500;  // rows per database read
};

/// What the fills have done, for the log and the fault figures. Owner shard.
struct gap_fill_stats {
    std::uint64_t gaps = 0;  // gaps started (not counting empty ones)
    std::uint64_t filled = 0;  // messages read from the database and delivered
    std::uint64_t missing = 0;  // seqs the database did not have in time: reported
    std::uint64_t reads = 0;  // database reads
    std::uint64_t retries = 0;  // reads repeated because a seq was missing or a read failed
    std::uint64_t held = 0;  // feed messages held behind a fill
};

class room_gap_fill {
public:
    /// Called on the owner shard, in each room's seq order.
    struct sink {
        /// A message of a gap, as stored.
        std::function<void(room_id, chat_log_entry&&)> stored;
        /// Seqs (from, to] of a gap are not in the database: to be reported to the members.
        std::function<void(room_id, std::uint64_t from, std::uint64_t to)> missing;
        /// A feed message that was held behind a fill, released after it.
        std::function<void(room_id, std::uint64_t seq, std::string&& body)> released;
    };

    /// Reads through `pool`, comes back to shard `sh`. On the owner shard, or before the engine
    /// runs.
    room_gap_fill(shard& sh, db_pool& pool, sink s, gap_fill_options o = {});
    /// Reads still in flight find the fill gone (their rows are dropped). Owner shard.
    ~room_gap_fill();
    room_gap_fill(const room_gap_fill&) = delete;
    room_gap_fill& operator=(const room_gap_fill&) = delete;

    /// Seqs (from, to] of `room` are to come from the database, before any message held after
    /// them. Nothing to do when to <= from. Owner shard.
    void gap(room_id room, std::uint64_t from, std::uint64_t to);
    /// Holds a feed message while `room` is being filled (true: held, released() gets it
    /// later); false when the room has no fill running (deliver it now). Owner shard.
    bool hold(room_id room, std::uint64_t seq, std::string_view body);
    /// Whether `room` has a fill running. Owner shard.
    bool filling(room_id room) const { return fills_.contains(room); }

    const gap_fill_stats& stats() const noexcept { return stats_; }

private:
    struct fill {
        std::deque<std::pair<std::uint64_t, std::uint64_t>> ranges;  // (from, to], the front in progress
        std::uint64_t next = 0;  // the front range's next seq to deliver
        std::uint64_t filled = 0, missing = 0;  // of the front range, for its log line
        // Every seq of the front range was published before the feed reported it, so each may
        // be waited for until wait_for_commit after that; then what is missing is reported.
        std::chrono::steady_clock::time_point deadline{};
        bool reading = false;  // a database read is in flight
        std::deque<std::pair<std::uint64_t, std::string>> held;
        timer_node retry;
    };
    // A database read's outcome, posted back to the shard.
    struct read_result {
        bool ok = false;
        std::vector<chat_log_entry> rows;
    };

    void read(room_id room, fill& f);
    void on_read(room_id room, std::uint64_t hi, read_result r);
    // Seqs next .. upto are not in the database: past the deadline they are reported (true: go
    // on), before it a read is scheduled again (false).
    bool give_up(room_id room, fill& f, std::uint64_t upto);
    void retry(fill& f);
    void start_range(room_id room, fill& f);

    shard& owner_;
    db_pool& pool_;
    sink sink_;
    gap_fill_options o_;
    boost::unordered_flat_map<room_id, std::unique_ptr<fill>> fills_;
    gap_fill_stats stats_;
    // Set while alive: reads finishing after destruction find it false (checked on the shard).
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace strix::chat
