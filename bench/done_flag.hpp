#pragma once
// done_flag: a shard tells the benchmark thread that a round of work finished. The benchmark
// thread sleeps on a condition variable (it must not spin on a core the shards need) and gives
// up after a limit, so a round that never completes (a lost task) fails the benchmark with a
// message instead of hanging it and the ctest that runs it.
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace strix_bench {

class done_flag {
public:
    /// Clears the flag before a round. The benchmark thread, while no shard can raise it.
    void reset() {
        std::lock_guard<std::mutex> lock(mutex_);
        set_ = false;
    }
    /// Sets the flag and wakes the waiter. Any thread.
    void raise() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            set_ = true;
        }
        cv_.notify_one();
    }
    /// Waits until raised; false when `limit` passed first.
    bool wait_for(std::chrono::milliseconds limit) {
        std::unique_lock<std::mutex> lock(mutex_);
        return cv_.wait_for(lock, limit, [this] { return set_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool set_ = false;
};

/// How long a round may take before the benchmark reports the engine stuck.
inline constexpr std::chrono::milliseconds round_limit{20000};

}  // namespace strix_bench
