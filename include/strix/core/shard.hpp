#pragma once
// shard: one thread (pinned to a core only when engine_config::pin_threads asks), owning a
// reactor, a timing wheel and everything registered with them. Nothing a shard owns is touched by
// another thread; other shards talk to it only by posting tasks through the mesh (see engine.hpp
// for the picture).
//
// One loop turn:
//   1. wait for I/O readiness (timeout 0 if work is pending, else until the next timer tick)
//   2. dispatch I/O events to their reactor_objects (reads, accepts, frame handlers)
//   3. drain tasks from the other shards (mesh) and from outside threads, in batches
//   4. run tasks posted locally
//   5. fire due timers
//   6. on_flush() every object marked dirty this turn: one gather write per connection
//   7. drop objects retired this turn

#include <strix/core/io_backend.hpp>
#include <strix/core/metrics.hpp>
#include <strix/core/mpsc_queue.hpp>
#include <strix/core/reactor_object.hpp>
#include <strix/core/spsc_queue.hpp>
#include <strix/core/task.hpp>
#include <strix/core/timing_wheel.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string_view>
#include <sys/socket.h>
#include <system_error>
#include <utility>
#include <vector>

// Owner checks. In debug and sanitizer builds (STRIX_THREAD_CHECKS=1), a shard-owned object
// touched from another thread while its shard runs aborts with a message naming both threads:
//
//     strix: session::send called on shard 1, but the object belongs to shard 0
//
// Release builds compile the checks away.
#if defined(STRIX_THREAD_CHECKS) && STRIX_THREAD_CHECKS
#define STRIX_ASSERT_OWNER(shard_ref, what) ::strix::detail::check_owner((shard_ref), (what))
#else
#define STRIX_ASSERT_OWNER(shard_ref, what) ((void)0)
#endif

namespace strix {

class engine;
class shard;
namespace detail {
class poller;
struct poll_event;
poller& backend_of(shard& s) noexcept;
/// Aborts with a message naming the calling thread and the owner shard. Any thread.
[[noreturn]] void wrong_thread(const shard& owner, const char* what) noexcept;
inline void check_owner(const shard& owner, const char* what) noexcept;
}  // namespace detail

/// Counters a shard keeps about itself, declared as metrics (engine::register_metrics exposes
/// them). Written by the owning shard only (relaxed stores); readable from any thread.
struct shard_stats : metric_group {
    static constexpr std::string_view tasks_help = "tasks run, by where they were posted from";
    counter turns{*this, "strix_loop_turns_total", "event-loop turns (all shards)"};
    counter io_events{*this, "strix_io_events_total", "I/O readiness events and completions dispatched"};
    counter tasks_local{*this, "strix_tasks_total", tasks_help, R"(source="local")"};
    counter tasks_mesh_in{*this, "strix_tasks_total", tasks_help, R"(source="mesh")"};
    counter tasks_external_in{*this, "strix_tasks_total", tasks_help, R"(source="external")"};
    counter wakeups{*this, "strix_shard_wakeups_total", "doorbell reads: a shard woken by another thread"};
    counter mesh_overflows{*this, "strix_mesh_overflows_total", "cross-shard posts that found their channel full"};
    counter timers_fired{*this, "strix_timers_fired_total", "timers fired (timeouts, retries, housekeeping)"};
    // Turns that found work, by how long they ran (wait excluded): the delay one turn can add to
    // everything else due on the shard. Observed in nanoseconds, rendered in seconds.
    static constexpr std::array<std::uint64_t, 4> turn_time_bounds_ns{50'000, 200'000, 1'000'000, 5'000'000};
    histogram turn_time{*this, "strix_loop_turn_seconds",
                        "event-loop turns that found work, by how long they ran (all shards)", turn_time_bounds_ns,
                        1e9};
    gauge max_turn_us{*this, "strix_loop_turn_max_us", "longest event-loop turn so far (any shard)", merge_by::max};
};

/// Increments a single-writer counter without a locked instruction.
inline void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) noexcept {
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

class shard {
public:
    shard(const shard&) = delete;
    shard& operator=(const shard&) = delete;
    ~shard();

    /// This shard's index in [0, shard_count()). Any thread.
    unsigned id() const noexcept { return id_; }
    unsigned shard_count() const noexcept;
    engine& owner() noexcept { return engine_; }

    /// The shard whose thread is calling, or nullptr off shard threads.
    static shard* current() noexcept;

    /// True while this shard's thread runs its loop (from start until its exit hooks are done).
    /// Objects a shard owns may be built and torn down by the engine's owning thread outside that
    /// window; inside it, only the shard's own thread may touch them. Any thread.
    bool running() const noexcept { return thread_live_.load(std::memory_order_acquire); }

    /// A number no other object on this shard got from it (the shard id in the top 16 bits), for
    /// sessions and connections. Owning shard only.
    std::uint64_t next_object_id() noexcept { return (static_cast<std::uint64_t>(id_) << 48) | ++object_ids_; }

    // --- I/O registration: owning shard only -------------------------------------------------

    /// Registers fd (edge-triggered) for io_events bits; target->on_io gets the readiness.
    /// The caller keeps target alive until remove_fd (retire() it to cover this turn's events).
    std::error_code add_fd(int fd, std::uint32_t events, reactor_object* target);
    std::error_code modify_fd(int fd, std::uint32_t events, reactor_object* target);
    std::error_code remove_fd(int fd);

    /// Queues obj->on_flush() for the end of this loop turn (once, however often it is called).
    /// Owning shard only.
    void mark_dirty(reactor_object& obj) {
        STRIX_ASSERT_OWNER(*this, "shard::mark_dirty");
        if (obj.dirty_) return;
        obj.dirty_ = true;
        dirty_.emplace_back(&obj);
    }

    /// Keeps obj alive until the end of the current turn, so events already fetched for it this
    /// turn find it closed rather than freed. Owning shard only.
    void retire(reactor_object_ptr obj);

    // --- tasks -------------------------------------------------------------------------------

    /// Runs t on this shard later in this turn (or the next). Owning shard only.
    void post_local(task t);

    /// Runs t on shard `target`. From this shard's own thread only: uses the SPSC channel
    /// this shard -> target (FIFO per pair); target == id() is post_local.
    void post_to(unsigned target, task t);

    /// Runs t at the end of the current loop turn, after objects retired this turn are released.
    /// Owning shard only.
    void post_after_turn(task t);

    /// Runs t on this shard; for threads that are not shards (database workers, main).
    /// FIFO per calling thread. Blocks (yielding) only while the bounded queue is full.
    void post_external(task t);

    // --- time --------------------------------------------------------------------------------

    /// The shard's timing wheel; owning shard only. One tick = tick_duration().
    timing_wheel& timers() noexcept {
        STRIX_ASSERT_OWNER(*this, "shard::timers");
        return wheel_;
    }
    std::uint64_t now_tick() const noexcept { return wheel_.now(); }
    std::chrono::milliseconds tick_duration() const noexcept { return tick_; }
    /// Converts a duration to whole ticks, rounding up (at least 1 for a non-zero duration).
    std::uint64_t ticks_for(std::chrono::milliseconds d) const noexcept;

    // --- shutdown ----------------------------------------------------------------------------

    /// True once the engine asked this shard to stop. Owning shard only.
    bool stopping() const noexcept { return stopping_; }

    /// Names a registered hook, for remove_hook(). 0 is never a hook.
    using hook_id = std::uint64_t;

    /// Registers a callback run on this shard when the engine stops (listeners close, servers
    /// start draining sessions). Owning shard only.
    hook_id on_stop(task t);

    /// Registers a callback run on this shard just before its thread exits, after the drain
    /// (forced closes of whatever is left). Owning shard only.
    hook_id on_exit(task t);

    /// The I/O backend this shard runs on: "epoll" or "io_uring". Any thread.
    const char* io_name() const noexcept;

    /// Unregisters a stop or exit hook (e.g. its owner is destroyed first); no-op for an id that
    /// already ran or was removed. Owning shard only.
    void remove_hook(hook_id id) noexcept;

    /// While any hold is taken the shard keeps turning after stop (up to the engine's drain
    /// timeout) so queued output can be flushed. Owning shard only.
    void hold() noexcept {
        STRIX_ASSERT_OWNER(*this, "shard::hold");
        ++holds_;
    }
    void release_hold() noexcept {
        STRIX_ASSERT_OWNER(*this, "shard::release_hold");
        --holds_;
    }

    const shard_stats& stats() const noexcept { return stats_; }

private:
    friend class engine;
    friend detail::poller& detail::backend_of(shard& s) noexcept;
    class doorbell;

    shard(engine& e, unsigned id, std::chrono::milliseconds tick);
    static std::unique_ptr<detail::poller> make_poller(io_backend want, unsigned share);
    static constexpr io_backend default_backend = io_backend::uring;  // architecture.md, "Two I/O backends"
    void run();                 // the loop; on the shard's own thread
    void turn(int timeout_ms);  // one loop turn
    int next_timeout() const noexcept;
    bool inbound_pending() const noexcept;
    std::size_t drain_inbound();
    void flush_overflow();
    bool overflow_only_to_exited() const noexcept;
    void advance_clock();
    void record_turn(std::chrono::steady_clock::duration took) noexcept;
    void ring() noexcept;       // wakes this shard if it may be asleep; any thread
    void mark_inbound(unsigned from) noexcept;  // a task from shard `from` is in its channel
    void request_stop() noexcept;
    static void run_hooks(std::vector<std::pair<hook_id, task>>& hooks);

    engine& engine_;
    const unsigned id_;
    const std::chrono::milliseconds tick_;
    std::unique_ptr<detail::poller> poller_;
    std::vector<detail::poll_event> events_;
    timing_wheel wheel_;
    std::chrono::steady_clock::time_point epoch_;

    std::vector<task> local_;
    std::vector<task> running_;
    std::vector<reactor_object_ptr> dirty_;
    std::vector<reactor_object_ptr> flushing_;
    std::vector<reactor_object_ptr> graveyard_;
    std::vector<task> after_turn_;
    std::vector<std::pair<hook_id, task>> stop_hooks_;
    std::vector<std::pair<hook_id, task>> exit_hooks_;
    hook_id next_hook_ = 0;
    std::uint64_t object_ids_ = 0;
    std::atomic<bool> thread_live_{false};
    std::vector<std::deque<task>> overflow_;  // per target shard, when its channel is full
    std::size_t overflow_count_ = 0;

    mpsc_queue<task> external_;

    // Which shards have tasks in their channel to this one: a bit per source, set by the source
    // after a push (mark_inbound), taken by this shard before it drains. A turn visits only the
    // channels with work: scanning all N - 1 of them twice a turn took 7 % of a CPU running 54
    // shards. carry_ keeps the sources a turn left work behind for (its batch limit).
    std::unique_ptr<std::atomic<std::uint64_t>[]> inbound_mask_;
    std::vector<std::uint64_t> carry_;
    intrusive_ptr<doorbell> bell_;
    int bell_fd_ = -1;

    // Cross-thread wake-up protocol (see ring()).
    alignas(64) std::atomic<bool> sleeping_{false};
    std::atomic<bool> stop_requested_{false};
    alignas(64) bool stopping_ = false;
    bool drained_ = false;
    int holds_ = 0;
    std::chrono::steady_clock::time_point drain_deadline_;
    const std::chrono::microseconds spin_;             // engine_config::poll_spin
    std::chrono::steady_clock::time_point last_work_;  // end of the last turn that found work
    shard_stats stats_;
};

namespace detail {
inline void check_owner(const shard& owner, const char* what) noexcept {
    if (owner.running() && shard::current() != &owner) wrong_thread(owner, what);
}
}  // namespace detail

}  // namespace strix
