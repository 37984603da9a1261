#pragma once
// db_pool: the chat server's database workers: strix::blocking_pool with one chat_store
// connection per worker. Shard threads hand blocking work (logins, history queries) to it with
// try_submit(), which never waits: a full queue is an immediate false, and the caller answers
// server_busy. A job carries its result back itself, typically engine.post(shard, task).
//
//   shard ──try_submit(job)──> blocking_pool ──> worker i ── job(store i)

#include "apps/chat/storage/chat_store.hpp"

#include <strix/core/blocking_pool.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace strix::chat {

struct db_pool_config {
    std::string url;                                      // see open_chat_store()
    password_policy policy = password_policy::interactive();
    std::size_t workers = 2;                              // threads = connections (at least 1)
    std::size_t queue_capacity = 1024;                    // queued jobs, not counting running ones
};

using db_pool_stats = blocking_pool_stats;

class db_pool {
public:
    using job = std::function<void(chat_store&)>;

    /// Opens cfg.workers connections (the first one migrates the schema) and starts one thread
    /// per connection. Throws std::runtime_error from open_chat_store when the database cannot
    /// be used. The owning (non-shard) thread.
    explicit db_pool(const db_pool_config& cfg);

    /// Runs over ready-made stores, one thread each (tests, or a caller that opens stores
    /// itself). The owning (non-shard) thread.
    db_pool(std::vector<std::unique_ptr<chat_store>> stores, std::size_t queue_capacity);

    /// stop().
    ~db_pool();

    db_pool(const db_pool&) = delete;
    db_pool& operator=(const db_pool&) = delete;

    /// Queues `j` to run on some worker with that worker's store (see blocking_pool::try_submit).
    /// A job should catch storage_error itself to send an error reply.
    bool try_submit(job j);

    /// Refuses new jobs, runs every job already queued, then joins the workers. Idempotent.
    void stop() { pool_->stop(); }

    db_pool_stats stats() const { return pool_->stats(); }
    std::size_t worker_count() const noexcept { return stores_.size(); }

private:
    std::vector<std::unique_ptr<chat_store>> stores_;  // one per worker, used only by it
    std::unique_ptr<blocking_pool> pool_;
};

}  // namespace strix::chat
