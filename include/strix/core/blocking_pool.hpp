#pragma once
// blocking_pool: worker threads for work that blocks (database calls, password hashing, file
// I/O, name resolution), fed by one bounded queue. Shard threads hand work over with
// try_submit(), which never waits: a full queue is an immediate false, and the caller answers
// "busy". A job carries its result back itself, typically engine.post(shard, task).
//
//   shard ──try_submit(job)──> [ bounded FIFO ] ──> worker 0 ── job(0)
//   shard ──try_submit(job)──>                 └──> worker 1 ── job(1) ... engine.post(shard, reply)
//
// A job receives its worker's index, so a caller can keep one resource per worker (a database
// connection each) without locks. The queue is a mutex and a condition variable: the critical
// section is a deque push, and the workers are not shard threads, so a lock is the simple,
// adequate tool here.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strix {

struct blocking_pool_config {
    std::size_t workers = 2;            // threads (at least 1)
    std::size_t queue_capacity = 1024;  // queued jobs, not counting running ones
    std::string name = "blocking";      // for log lines and thread names ("blocking-0")
};

struct blocking_pool_stats {
    std::size_t queue_depth = 0;  // jobs waiting now
    std::size_t queue_peak = 0;   // most jobs ever waiting at once
    std::uint64_t submitted = 0;  // accepted by try_submit
    std::uint64_t rejected = 0;   // refused by try_submit (queue full or stopped)
    std::uint64_t executed = 0;   // jobs that ran to completion or threw
    std::uint64_t failed = 0;     // jobs that let an exception escape (logged and swallowed)
};

class blocking_pool {
public:
    /// job(worker_index), worker_index in [0, worker_count()).
    using job = std::function<void(std::size_t worker)>;

    /// Starts the workers. The owning (non-shard) thread.
    explicit blocking_pool(blocking_pool_config cfg = {});
    /// stop().
    ~blocking_pool();
    blocking_pool(const blocking_pool&) = delete;
    blocking_pool& operator=(const blocking_pool&) = delete;

    /// Queues j to run on some worker and returns true; returns false at once, without queueing,
    /// when the queue is full or the pool is stopping. Never waits for space. Jobs start in
    /// submission order. An exception that escapes a job is logged and counted as failed. Any
    /// thread, shard threads included.
    bool try_submit(job j);

    /// Refuses new jobs, runs every job already queued, then joins the workers. Idempotent.
    /// Not from a worker (a job) and not from a shard thread: it blocks until the queue drains.
    void stop();

    /// A snapshot of the counters. Any thread.
    blocking_pool_stats stats() const;

    /// Number of worker threads. Any thread.
    std::size_t worker_count() const noexcept { return workers_; }

private:
    void run(std::size_t worker);

    const std::size_t capacity_;
    const std::size_t workers_;
    const std::string name_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<job> queue_;   // guarded by mu_
    bool stopping_ = false;   // guarded by mu_
    std::size_t peak_ = 0;    // guarded by mu_
    std::uint64_t submitted_ = 0, rejected_ = 0;  // guarded by mu_
    std::atomic<std::uint64_t> executed_{0}, failed_{0};
    std::vector<std::thread> threads_;
    std::mutex stop_mu_;  // makes concurrent stop() calls wait for the one that joins
};

}  // namespace strix
