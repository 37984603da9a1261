#pragma once
// engine: starts one shard per core and wires them into a mesh of SPSC channels.
//
//            shard 0          shard 1          shard 2
//          +---------+      +---------+      +---------+
//          | reactor |----->| inbound |<-----| reactor |      every ordered pair (i, j), i != j,
//          | timers  |<-----| from 0  |----->| timers  |      has its own wait-free SPSC channel:
//          | sessions|      | from 2  |      | sessions|      N x (N-1) channels, no CAS, no lock.
//          +----+----+      +----+----+      +----+----+
//               ^ eventfd doorbell, rung only when the receiver may be asleep
//
// Threads that are not shards (database workers, main) post through each shard's bounded MPSC
// queue instead.

#include <strix/core/metrics_registry.hpp>
#include <strix/core/shard.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <type_traits>
#include <memory>
#include <thread>
#include <vector>

namespace strix {

struct engine_config {
    unsigned shards = 0;                        // 0 = one per online CPU
    bool pin_threads = false;                   // pin shard i to the i-th allowed CPU (architecture.md, "Pinning")
    std::size_t mesh_capacity = 4096;           // tasks per SPSC channel (power of two)
    std::size_t external_capacity = 16384;      // tasks per shard's MPSC queue
    std::chrono::milliseconds tick{10};         // timing wheel resolution
    std::chrono::milliseconds drain_timeout{5000};  // how long a graceful stop may flush
    // Busy-poll: after a turn that found work, keep polling (epoll_wait with a zero timeout)
    // this long before sleeping. 0 = always sleep when idle. Trades a core's idle time for the
    // wakeup a sleeping thread needs (an IPI and, in a VM, a halted vCPU's resume).
    std::chrono::microseconds poll_spin{0};
    io_backend io = io_backend::automatic;
    // Each shard thread gets a descriptor table of its own (unshare(CLONE_FILES)) as it starts, so
    // RLIMIT_NOFILE caps each shard's descriptors rather than the process's: N shards hold about N
    // times the limit. For a machine whose hard limit cannot be raised (architecture.md,
    // "Descriptor tables"). A descriptor made on another thread before start() reaches its shard
    // only through note_shard_fd; after start() each shard opens its own.
    bool fd_table_per_shard = false;
};

class engine {
public:
    /// Builds the shards (not yet running). Throws std::system_error if the kernel refuses
    /// an epoll instance or eventfd.
    explicit engine(engine_config cfg = {});
    /// Stops (gracefully) and joins if still running.
    ~engine();
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    unsigned shard_count() const noexcept { return static_cast<unsigned>(shards_.size()); }
    /// Shard i. The reference is stable; calling its owner-only functions is still owner-only.
    shard& at(unsigned i) noexcept { return *shards_[i]; }
    const engine_config& config() const noexcept { return cfg_; }
    /// Shards per CPU this process may run on, rounded up: 1 unless there are more shards than
    /// CPUs. Then each shard's io_uring ring and provided buffers shrink by it, and shard threads
    /// run under SCHED_BATCH (architecture.md, "More shards than CPUs"). Any thread.
    unsigned shards_per_cpu() const noexcept { return per_cpu_; }
    /// The backend the shards use ("epoll" or "io_uring"), after any fallback. Any thread.
    const char* io_name() const noexcept;

    /// Exposes every shard's shard_stats in r (loop turns and their durations, tasks, wake-ups,
    /// mesh overflows) until the engine is destroyed; r must outlive the engine. The owning
    /// thread.
    void register_metrics(metrics_registry& r);

    /// Starts the shard threads. Call once, from the thread that owns the engine. With
    /// fd_table_per_shard, returns once every shard has its own table.
    void start();

    /// With fd_table_per_shard: fd, opened on this thread before start(), belongs to shard
    /// `target` (a listener it is given). At start the shard keeps it, the other shards and this
    /// thread close their copies, so closing it on the shard really closes it. Without the option
    /// it does nothing. The owning thread, before start(): after it, throws std::logic_error
    /// (a descriptor opened now is in no shard's table).
    void note_shard_fd(unsigned target, int fd);

    /// Runs t on shard `target`. Any thread: shard threads use the mesh, others the MPSC queue.
    void post(unsigned target, task t);

    /// Runs fn(shard) on every shard and returns once each has run it and finished that loop turn
    /// (so objects fn retired are released). A shard whose thread is not running (not started
    /// yet, or exited) has fn run on the calling thread instead. For tearing down per-shard state
    /// while the engine keeps running. Not from a shard thread of this engine (it would wait on
    /// itself): that aborts with a message.
    void run_on_all_shards(const std::function<void(shard&)>& fn);

    /// Runs f() on shard `target`, waits for it and returns its result (an exception f throws is
    /// rethrown here). For threads that are not shards of this engine (it would wait on itself);
    /// the engine must be running.
    template <class F>
    auto run_on(unsigned target, F&& f) -> decltype(f()) {
        check_not_own_shard("engine::run_on");
        using R = decltype(f());
        std::promise<R> p;
        auto done = p.get_future();
        post(target, [&] {
            try {
                if constexpr (std::is_void_v<R>) {
                    f();
                    p.set_value();
                } else {
                    p.set_value(f());
                }
            } catch (...) {
                p.set_exception(std::current_exception());
            }
        });
        return done.get();
    }

    /// True between start() and the moment every shard thread has exited. Any thread.
    bool running() const noexcept { return running_.load(std::memory_order_acquire) > 0; }

    /// Asks every shard to stop gracefully: stop hooks run, held work drains (bounded by
    /// drain_timeout), then the threads exit. Any thread, idempotent; does not wait.
    void stop() noexcept;

    /// Waits for every shard thread to exit. The owning thread only.
    void join();

    /// Blocks SIGINT and SIGTERM, starts the shards if needed, waits for a signal (or for the
    /// shards to exit by themselves), then stops and joins. Returns the signal number or 0.
    /// Call from the main thread before any other thread is created, so every thread inherits
    /// the blocked mask.
    int run_until_signal();

private:
    friend class shard;
    void check_not_own_shard(const char* what) const noexcept;
    /// SPSC channel carrying tasks from shard `from` to shard `to` (from != to).
    spsc_queue<task>& channel(unsigned from, unsigned to) noexcept {
        return *mesh_[static_cast<std::size_t>(to) * shards_.size() + from];
    }

    void shard_finished_draining() noexcept;
    bool all_drained() const noexcept { return draining_.load(std::memory_order_acquire) == 0; }
    bool has_exited(unsigned shard_index) const noexcept {
        return exited_[shard_index].load(std::memory_order_acquire);
    }

    engine_config cfg_;
    std::vector<std::unique_ptr<shard>> shards_;
    std::vector<std::unique_ptr<spsc_queue<task>>> mesh_;  // [to * N + from]
    std::vector<std::thread> threads_;
    std::unique_ptr<std::atomic<bool>[]> exited_;  // per shard: its loop has ended
    std::atomic<unsigned> draining_{0};
    std::atomic<unsigned> running_{0};
    bool started_ = false;
    unsigned per_cpu_ = 1;
    struct shard_fd {
        unsigned shard;
        int fd;
    };
    std::vector<shard_fd> shard_fds_;                 // note_shard_fd, until start()
    std::atomic<unsigned> tables_pending_{0};         // shards yet to make their own table
    std::atomic<bool> tables_failed_{false};          // an unshare failed: the table stays shared
    void take_own_fd_table(unsigned shard_index) noexcept;
    std::vector<metrics_registry::registration> metric_regs_;  // dropped before the shards
};

}  // namespace strix
