#pragma once
// db_pool: N database worker threads, each with its own chat_store connection, fed by one
// bounded job queue. Shard threads hand blocking work (logins, history queries) to it with
// try_submit(), which never waits: a full queue is an immediate false, and the caller answers
// server_busy. A job carries its result back itself, typically engine.post(shard, task); the
// pool knows nothing about the engine.
//
//   shard ──try_submit(job)──> [ bounded FIFO ] ──> worker 0 (store 0)
//   shard ──try_submit(job)──>                 └──> worker 1 (store 1) ... job(store)
//                                                        └── engine.post(shard, reply task)
//
// The queue is a mutex and a condition variable: the critical section is a deque push, and the
// workers are not shard threads, so a lock is the simple, adequate tool here.

#include <strix/storage/chat_store.hpp>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strix {

struct db_pool_config {
    std::string url;                                      // see open_chat_store()
    password_policy policy = password_policy::interactive();
    std::size_t workers = 2;                              // threads = connections (at least 1)
    std::size_t queue_capacity = 1024;                    // queued jobs, not counting running ones
};

struct db_pool_stats {
    std::size_t queue_depth = 0;  // jobs waiting now
    std::size_t queue_peak = 0;   // most jobs ever waiting at once
    std::uint64_t submitted = 0;  // accepted by try_submit
    std::uint64_t rejected = 0;   // refused by try_submit (queue full or stopped)
    std::uint64_t executed = 0;   // jobs that ran to completion or threw
    std::uint64_t failed = 0;     // jobs that let an exception escape (logged and swallowed)
};

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

    /// Queues `j` to run on some worker with that worker's store, and returns true; returns
    /// false at once, without queueing, when the queue is full or the pool is stopping. Never
    /// waits for space. Jobs start in submission order. A job should catch storage_error itself
    /// to send an error reply; an exception that escapes is logged and counted as failed. Any
    /// thread, shard threads included.
    bool try_submit(job j);

    /// Refuses new jobs, runs every job already queued, then joins the workers. Idempotent.
    /// Not from a worker (a job) and not from a shard thread: it blocks until the queue drains.
    void stop();

    /// A snapshot of the counters. Any thread.
    db_pool_stats stats() const;

    /// Number of worker threads (= connections). Any thread.
    std::size_t worker_count() const noexcept { return threads_.size(); }

private:
    void start(std::vector<std::unique_ptr<chat_store>> stores);
    void run(chat_store& store);

    const std::size_t capacity_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<job> queue_;   // guarded by mu_
    bool stopping_ = false;   // guarded by mu_
    std::size_t peak_ = 0;    // guarded by mu_
    std::uint64_t submitted_ = 0, rejected_ = 0;  // guarded by mu_
    std::atomic<std::uint64_t> executed_{0}, failed_{0};
    std::vector<std::unique_ptr<chat_store>> stores_;
    std::vector<std::thread> threads_;
    std::mutex stop_mu_;  // makes concurrent stop() calls wait for the one that joins
};

}  // namespace strix
