// What a full queue costs the producer: the Apex Core report's *_Backpressure rows (§2), and
// strix's mesh.
//
//   SpscQueue_Backpressure   try_push on a full strix::spsc_queue<uint64_t> (capacity 1024):
//                            the refusal the producer sees, the consumer's index re-read
//                            included. Each iteration must fail; one that succeeds fails the run.
//   MpscQueue_Backpressure   the same on a full strix::mpsc_queue.
//   Mesh_Backpressure        what strix does instead of refusing: shard::post_to never blocks
//                            a shard (two shards waiting on each other's full channel would
//                            deadlock), so a post that finds the channel full goes to the
//                            sender's per-target overflow list, and later posts line up behind
//                            it (FIFO per pair); the list moves into the channel at the end of
//                            each of the sender's turns as room appears. Per iteration: shard 1
//                            is parked in a task (its loop stops), shard 0 fills the 1,024-task
//                            channel, then 4,096 more posts are timed on shard 0 (manual time),
//                            every one an overflow. Then shard 1 resumes and must receive all
//                            5,120 tasks once, in order, and shard_stats::mesh_overflows must
//                            have counted exactly the 4,096. 64 iterations; items and per_post
//                            are per overflowing post.
//
// Session backpressure (high_water pausing reads from a peer whose output is not drained) is a
// network behaviour measured in connections, not nanoseconds; the net tests cover it.
#include "bench_opaque.hpp"
#include "done_flag.hpp"

#include <strix/core/engine.hpp>
#include <strix/core/mpsc_queue.hpp>
#include <strix/core/shard.hpp>
#include <strix/core/spsc_queue.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace {

constexpr std::size_t queue_capacity = 1024;

template <class Queue>
void push_to_full(benchmark::State& state) {
    Queue q(queue_capacity);
    std::uint64_t v = 0;
    while (q.try_push(v)) ++v;
    if (v != queue_capacity) {
        state.SkipWithError("the queue did not fill at its capacity");
        return;
    }
    std::uint64_t accepted = 0;
    for (auto _ : state) {
        std::uint64_t item = v;
        strix_bench::opaque(item);
        accepted += q.try_push(item);
    }
    if (accepted != 0) state.SkipWithError("a full queue accepted an item");
    state.SetItemsProcessed(state.iterations());
}

void SpscQueue_Backpressure(benchmark::State& state) { push_to_full<strix::spsc_queue<std::uint64_t>>(state); }
BENCHMARK(SpscQueue_Backpressure);

void MpscQueue_Backpressure(benchmark::State& state) { push_to_full<strix::mpsc_queue<std::uint64_t>>(state); }
BENCHMARK(MpscQueue_Backpressure);

constexpr std::uint64_t overflow_posts = 4096;

struct mesh_round {
    strix_bench::done_flag parked;      // shard 1 is inside the parking task
    std::atomic<bool> release{false};   // shard 0 lets shard 1 go
    strix_bench::done_flag finished;    // shard 1 ran the last task
    std::uint64_t received = 0;         // shard 1
    bool out_of_order = false;          // shard 1
    std::chrono::steady_clock::time_point t0, t1;  // shard 0
    std::uint64_t total = 0;
};

void Mesh_Backpressure(benchmark::State& state) {
    strix::engine_config cfg;
    cfg.shards = 2;
    cfg.pin_threads = false;
    cfg.mesh_capacity = queue_capacity;
    strix::engine eng(cfg);
    eng.start();
    const std::uint64_t overflows_before = eng.at(0).stats().mesh_overflows.value();
    mesh_round r;
    std::uint64_t posts = 0;
    for (auto _ : state) {
        r.parked.reset();
        r.release.store(false);
        r.finished.reset();
        r.received = 0;
        r.total = queue_capacity + overflow_posts;
        eng.post(1, [&r] {
            r.parked.raise();
            while (!r.release.load(std::memory_order_acquire)) std::this_thread::yield();
        });
        if (!r.parked.wait_for(strix_bench::round_limit)) {
            state.SkipWithError("shard 1 never ran the parking task");
            r.release.store(true);
            break;
        }
        eng.post(0, [&r] {
            strix::shard& sh = *strix::shard::current();
            auto post = [&](std::uint64_t seq) {
                sh.post_to(1, [&r, seq] {
                    if (seq != r.received) r.out_of_order = true;
                    if (++r.received == r.total) r.finished.raise();
                });
            };
            for (std::uint64_t i = 0; i < queue_capacity; ++i) post(i);  // fills the channel
            r.t0 = std::chrono::steady_clock::now();
            for (std::uint64_t i = 0; i < overflow_posts; ++i) post(queue_capacity + i);
            r.t1 = std::chrono::steady_clock::now();
            r.release.store(true, std::memory_order_release);
        });
        if (!r.finished.wait_for(strix_bench::round_limit)) {
            state.SkipWithError("stuck: shard 1 did not receive every task");
            break;
        }
        if (r.out_of_order) {
            state.SkipWithError("tasks arrived out of order");
            break;
        }
        posts += overflow_posts;
        state.SetIterationTime(std::chrono::duration<double>(r.t1 - r.t0).count());
    }
    const std::uint64_t overflows = eng.at(0).stats().mesh_overflows.value() - overflows_before;
    eng.stop();
    eng.join();
    if (!state.error_occurred() && overflows != posts)
        state.SkipWithError("mesh_overflows does not count exactly the posts that found the channel full");
    state.SetItemsProcessed(static_cast<std::int64_t>(posts));
    state.counters["per_post"] =
        benchmark::Counter(static_cast<double>(posts), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
// A fixed iteration count: each iteration also parks shard 1 and drains 5,120 tasks untimed,
// which costs far more wall time than the timed posts, so letting min_time pick the count
// (on manual time) ran thousands of them: 53 s per repetition on the loaded 2-core machine.
BENCHMARK(Mesh_Backpressure)->UseManualTime()->Iterations(64);

}  // namespace
