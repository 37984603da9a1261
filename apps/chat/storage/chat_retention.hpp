#pragma once
// chat_retention: the retention policy of the chat log, enforced in the background by a thread
// with its own database connection (never a shard, never the chat log writer's connection).
// Each pass walks the rooms that have messages and trims each to the policy in DELETEs of at
// most `batch` rows, pausing between them, so the writer's commits only ever wait for one small
// DELETE (SQLite has one write lock per file; PostgreSQL's row locks do not meet the writer's
// inserts at the other end of a room's range).
//
//   every interval:  rooms with logs (pages of 100) ─ per room: trim_room_logs(keep, cutoff, batch)
//                                                     again while a full batch went, pause between
//
// Deleted messages are a prefix of each room (chat_store::trim_room_logs), so what a room keeps
// is a contiguous range; history and resume read its oldest seq to tell a gap from an empty room.

#include "apps/chat/storage/chat_store.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

namespace strix::chat {

struct retention_policy {
    std::uint64_t max_per_room = 0;        // each room keeps its newest this many (0: no count limit)
    std::chrono::seconds max_age{0};        // messages older than this go (0: no age limit)
    std::size_t batch = 500;                // rows per DELETE at most
    std::chrono::milliseconds interval{1000};  // between passes
    std::chrono::milliseconds pause{2};     // between two DELETEs (the writer's turn)
};

struct retention_stats {
    std::uint64_t passes = 0;    // completed walks over the rooms
    std::uint64_t deleted = 0;   // rows deleted
    std::uint64_t failures = 0;  // passes cut short by a database error (retried next interval)
};

class chat_retention {
public:
    /// Takes its own store and starts the thread (the first pass runs at once). The owning
    /// (non-shard) thread.
    chat_retention(std::unique_ptr<chat_store> store, const retention_policy& policy);
    /// stop().
    ~chat_retention();
    chat_retention(const chat_retention&) = delete;
    chat_retention& operator=(const chat_retention&) = delete;

    /// One pass over every room now, on the calling thread, with the given clock (tests);
    /// returns the rows deleted. Only while the thread is not running: before start or after
    /// stop. Throws storage_error.
    static std::uint64_t run_pass(chat_store& store, const retention_policy& policy, std::int64_t now_us,
                                  std::chrono::milliseconds pause = std::chrono::milliseconds(0));

    /// Ends the current DELETE's pass and joins the thread. Idempotent. The owning thread.
    void stop();

    /// A snapshot of the counters. Any thread.
    retention_stats stats() const;

private:
    void run();

    std::unique_ptr<chat_store> store_;
    const retention_policy policy_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stopping_ = false;  // guarded by mu_
    std::atomic<std::uint64_t> passes_{0}, deleted_{0}, failures_{0};
    std::thread thread_;
};

}  // namespace strix::chat
