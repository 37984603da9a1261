#pragma once
// chat_log_writer: group commit of chat logs and room changes. Shards enqueue each chat message
// (and each room created, deleted, joined or left) without waiting on the database; one writer
// thread takes everything queued (up to batch_limit) and commits it in ONE transaction, so a
// burst of N messages costs a few commits, not N.
//
//   shard 0 ─┐                         ┌─ take ≤ batch_limit ─> write_batch (1 transaction)
//   shard 1 ─┼─ try_enqueue ─> [FIFO] ─┤     failure: keep the batch, retry with backoff
//   shard 2 ─┘   (false: full)         ├─ lag = age of the batch's oldest entry at commit
//                                      └─ committed(tags of the batch) ─> whoever waits for it
//
// Acknowledgements: an entry may carry a tag (any non-zero number the caller chooses). After a
// batch commits, the writer calls `committed` with the tags of its entries in the order they
// were accepted, once per batch: the chat server uses that to acknowledge messages only once
// they are stored (one post per batch and owner shard, see chat_server.cpp).
//
// Nothing acknowledged is dropped silently: a failed batch is retried (backoff doubling up to
// retry_max) until it commits. Only stop() gives up, after stop_attempts failed attempts on one
// batch, and then it logs loudly and returns how many entries were not written.

#include "apps/chat/storage/chat_store.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <variant>
#include <vector>

namespace strix::chat {

struct chat_log_writer_config {
    std::size_t capacity = 65536;     // queued entries (not counting the batch being written)
    std::size_t batch_limit = 1000;   // entries per transaction at most
    std::chrono::milliseconds retry_initial{50};  // first backoff after a failed commit
    std::chrono::milliseconds retry_max{2000};    // backoff ceiling
    unsigned stop_attempts = 3;       // while stopping: failed attempts per batch before giving up
    // Group commit gathers until the oldest entry of a batch is this old, so a steady trickle
    // becomes a few large transactions instead of thousands of tiny ones (each commit costs the
    // writer thread CPU the shards need). Entries that waited for the previous commit are old
    // enough already: the delay never adds to a slow commit. When the caller acknowledges only
    // after the commit (tags), it is part of that wait. 0 (the default) = commit as soon as the
    // writer is free: entries that arrive during a commit still share the next one, which is
    // grouping enough under load (docs/architecture.md, Decisions, has the measurement).
    std::chrono::microseconds commit_delay{0};
    // Called on the writer thread after each committed batch with the non-zero tags of its
    // entries, in acceptance order (not called for a batch without tags, nor for entries given
    // up by stop()). It must not block for long: the next batch waits for it. Empty: no calls.
    std::function<void(std::span<const std::uint64_t> tags)> committed;
};

struct chat_log_writer_stats {
    std::uint64_t enqueued = 0;      // accepted by try_enqueue (chat logs and room changes)
    std::uint64_t rejected = 0;      // refused by try_enqueue (full or stopped)
    std::uint64_t written = 0;       // committed chat log rows (duplicates included; see below)
    std::uint64_t room_changes = 0;  // committed room changes
    std::uint64_t duplicates = 0;    // committed entries whose (room_id, seq) was already stored
    std::uint64_t copies = 0;        // committed try_enqueue_copy entries (in written, duplicates)
    std::uint64_t batches = 0;       // committed transactions
    std::uint64_t failures = 0;      // failed commit attempts (each one retried)
    std::uint64_t lost = 0;          // entries stop() could not write
    std::size_t queue_depth = 0;     // entries waiting now
    std::size_t queue_peak = 0;      // most entries ever waiting at once
    std::uint64_t last_lag_us = 0;   // age of the oldest entry of the last batch when it committed
    std::uint64_t max_lag_us = 0;    // the largest such age so far
};

class chat_log_writer {
public:
    /// Takes the store it writes with (used only by the writer thread from now on) and starts
    /// the writer thread. The owning (non-shard) thread.
    chat_log_writer(std::unique_ptr<chat_store> store, const chat_log_writer_config& cfg = {});

    /// stop().
    ~chat_log_writer();

    chat_log_writer(const chat_log_writer&) = delete;
    chat_log_writer& operator=(const chat_log_writer&) = delete;

    /// Queues `e` for the next batch and returns true; returns false at once, without queueing,
    /// when `capacity` entries are waiting or the writer is stopping: the caller must then not
    /// acknowledge the message. Entries are written in the order they were accepted. Never
    /// waits for space. Any thread, shard threads included.
    bool try_enqueue(chat_log_entry e, std::uint64_t tag = 0);
    /// The same for a copy of a message that may be stored already (cluster mode: taken from
    /// Redis's stream because another node may have died before storing it): the stored row wins,
    /// as always, and finding it is expected, so it is not warned about (counted in
    /// stats().copies). Any thread.
    bool try_enqueue_copy(chat_log_entry e);

    /// The same for a room change. With `beyond_capacity` it is queued even when `capacity`
    /// entries wait (not while stopping): for changes that must not fail, like a member leaving,
    /// which the caller bounds itself (each follows a change that was queued within capacity).
    bool try_enqueue(room_change c, std::uint64_t tag = 0, bool beyond_capacity = false);

    /// Blocks until every entry accepted before this call is committed (or, during stop(),
    /// given up). Not from a shard thread. Any other thread.
    void flush();

    /// Refuses new entries, writes EVERYTHING queued, joins the writer thread and returns the
    /// number of entries that could not be written (0 unless the database kept failing; then it
    /// is also logged as an error). Idempotent: a second call returns 0. Not from a shard
    /// thread (it blocks on the database); the owning thread at shutdown.
    std::uint64_t stop();

    /// A snapshot of the counters. Any thread.
    chat_log_writer_stats stats() const;

private:
    using clock = std::chrono::steady_clock;
    struct queued {
        std::variant<chat_log_entry, room_change> what;
        std::uint64_t tag;
        clock::time_point at;
        bool copy = false;  // try_enqueue_copy
    };
    struct batch_buffer {
        std::vector<room_change> changes;
        std::vector<chat_log_entry> logs;
        std::vector<std::uint64_t> tags;
        std::size_t copies = 0;  // logs from try_enqueue_copy: finding them stored is expected
        std::size_t size() const noexcept { return changes.size() + logs.size(); }
        void clear() noexcept {
            changes.clear();
            logs.clear();
            tags.clear();
            copies = 0;
        }
    };

    bool push(queued q, bool beyond_capacity);
    void run();
    bool commit_with_retry(const batch_buffer& batch, clock::time_point oldest);
    void complete(std::size_t n);

    const chat_log_writer_config cfg_;
    std::unique_ptr<chat_store> store_;

    mutable std::mutex mu_;
    std::condition_variable work_cv_;   // writer waits for entries or stop
    std::condition_variable done_cv_;   // flush() waits for completed_ to advance
    std::deque<queued> queue_;          // guarded by mu_
    bool stopping_ = false;             // guarded by mu_
    std::uint64_t accepted_ = 0;        // guarded by mu_: sequence number of the last accepted
    std::uint64_t completed_ = 0;       // guarded by mu_: entries committed or given up, in order
    std::size_t peak_ = 0;              // guarded by mu_
    std::uint64_t rejected_ = 0;        // guarded by mu_

    std::atomic<std::uint64_t> written_{0}, room_changes_{0}, duplicates_{0}, copies_{0}, batches_{0}, failures_{0},
        lost_{0};
    std::atomic<std::uint64_t> last_lag_us_{0}, max_lag_us_{0};

    std::mutex stop_mu_;
    bool stopped_ = false;  // guarded by stop_mu_
    std::thread thread_;
};

}  // namespace strix::chat
