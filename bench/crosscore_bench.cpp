// Seed 000 §10's cross-core rows, through strix's mesh: an engine with two shards (threads not
// pinned: the machine the suite runs on has two cores, shared with this benchmark's own thread
// and with whatever else runs; on a bigger idle machine pin them for cleaner figures).
//
//   CrossCore_Latency/spin_us:S    a task posted shard 0 -> shard 1 (post_to), which posts one
//       back 1 -> 0; the next ping leaves when the pong arrived. One benchmark iteration is a
//       chain of 256 round trips timed on shard 0 (manual time: from the first ping to the last
//       pong, so this thread's wake-up is not in it); round_trip = time / round trips.
//       S is engine_config::poll_spin: 0 (the default) lets an idle shard sleep in epoll_wait,
//       so every hop pays the eventfd doorbell and a thread wake-up, as seed 000's ~17-24 µs
//       did; S = 50 keeps both shards polling for 50 µs after work, so a hop is the SPSC queue
//       and a cache line moving between cores.
//   CrossCore_PostThroughput/batch:B   65,536 tasks streamed shard 0 -> shard 1. Shard 0 posts
//       B tasks per loop turn (a turn's worth of work, as a handler fanning out does), then
//       yields to its loop (post_local of the next batch); shard 1 drains them 1,024 at a time
//       per turn. Timed from the first post on shard 0 to the last task run on shard 1. Every
//       task carries its sequence number; shard 1 checks they arrive once each, in order. When
//       the channel (4,096 tasks) is full, strix queues the rest in shard 0's overflow list
//       (see backpressure_bench.cpp): counted in overflows (per task).
//
// Both run once per poller backend (bench_backends.hpp).
#include "bench_backends.hpp"

#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace {

using clock_type = std::chrono::steady_clock;
using strix_bench::bench_backend;

strix::engine_config two_shards(const bench_backend& be, std::chrono::microseconds spin = {}) {
    strix::engine_config cfg;
    cfg.shards = 2;
    cfg.pin_threads = false;
    cfg.poll_spin = spin;
    be.configure(cfg);
    return cfg;
}

double seconds(clock_type::duration d) { return std::chrono::duration<double>(d).count(); }

// One signal from a shard to the benchmark thread (a futex wait, no spinning on its core).
struct done_flag {
    std::atomic<bool> set{false};
    void reset() noexcept { set.store(false, std::memory_order_relaxed); }
    void raise() noexcept {
        set.store(true, std::memory_order_release);
        set.notify_one();
    }
    void wait() const noexcept { set.wait(false, std::memory_order_acquire); }
};

// --- CrossCore_Latency ------------------------------------------------------------------------

constexpr std::uint64_t chain_length = 256;

struct ping_chain {
    std::uint64_t done = 0;          // round trips completed (shard 0)
    bool out_of_order = false;       // a pong answered another ping (shard 0)
    clock_type::time_point t0, t1;   // shard 0
    done_flag finished;
};

void ping(ping_chain* c) {  // on shard 0
    const std::uint64_t n = c->done;
    strix::shard::current()->post_to(1, [c, n] {      // on shard 1
        strix::shard::current()->post_to(0, [c, n] {  // back on shard 0
            if (n != c->done) c->out_of_order = true;
            if (++c->done < chain_length) {
                ping(c);
                return;
            }
            c->t1 = clock_type::now();
            c->finished.raise();
        });
    });
}

void crosscore_latency(benchmark::State& state, const bench_backend& be) {
    strix::engine eng(two_shards(be, std::chrono::microseconds(state.range(0))));
    eng.start();
    ping_chain c;
    std::uint64_t round_trips = 0;
    for (auto _ : state) {
        c.done = 0;
        c.finished.reset();
        eng.post(0, [&c] {
            c.t0 = clock_type::now();
            ping(&c);
        });
        c.finished.wait();
        if (c.out_of_order || c.done != chain_length) {
            state.SkipWithError("a pong did not answer the ping in flight");
            break;
        }
        round_trips += chain_length;
        state.SetIterationTime(seconds(c.t1 - c.t0));
    }
    eng.stop();
    eng.join();
    state.SetLabel(be.name);
    state.SetItemsProcessed(static_cast<std::int64_t>(round_trips));
    state.counters["round_trip"] = benchmark::Counter(static_cast<double>(round_trips),
                                                      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// --- CrossCore_PostThroughput -----------------------------------------------------------------

constexpr std::uint64_t stream_tasks = 65536;

struct post_stream {
    std::uint64_t batch = 0;
    std::uint64_t sent = 0;       // shard 0
    std::uint64_t received = 0;   // shard 1
    bool out_of_order = false;    // shard 1
    clock_type::time_point t0;    // shard 0
    clock_type::time_point t1;    // shard 1
    done_flag finished;
};

void produce(post_stream* s) {  // on shard 0: one loop turn's batch
    strix::shard& sh = *strix::shard::current();
    const std::uint64_t end = std::min(s->sent + s->batch, stream_tasks);
    for (; s->sent < end; ++s->sent) {
        sh.post_to(1, [s, seq = s->sent] {  // on shard 1
            if (seq != s->received) s->out_of_order = true;
            if (++s->received == stream_tasks) {
                s->t1 = clock_type::now();
                s->finished.raise();
            }
        });
    }
    if (s->sent < stream_tasks) sh.post_local([s] { produce(s); });
}

void crosscore_post_throughput(benchmark::State& state, const bench_backend& be) {
    strix::engine eng(two_shards(be));
    eng.start();
    post_stream s;
    s.batch = static_cast<std::uint64_t>(state.range(0));
    const std::uint64_t overflows_before = eng.at(0).stats().mesh_overflows.load();
    std::uint64_t tasks = 0;
    for (auto _ : state) {
        s.sent = 0;
        s.received = 0;
        s.finished.reset();
        eng.post(0, [&s] {
            s.t0 = clock_type::now();
            produce(&s);
        });
        s.finished.wait();
        if (s.out_of_order) {
            state.SkipWithError("tasks arrived out of order");
            break;
        }
        tasks += stream_tasks;
        state.SetIterationTime(seconds(s.t1 - s.t0));
    }
    const std::uint64_t overflows = eng.at(0).stats().mesh_overflows.load() - overflows_before;
    eng.stop();
    eng.join();
    state.SetLabel(be.name);
    state.SetItemsProcessed(static_cast<std::int64_t>(tasks));
    state.counters["per_task"] =
        benchmark::Counter(static_cast<double>(tasks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["overflows"] = benchmark::Counter(tasks ? static_cast<double>(overflows) / static_cast<double>(tasks) : 0);
}

const bool registered = [] {
    for (const bench_backend& be : strix_bench::bench_backends) {
        benchmark::RegisterBenchmark(be.family("CrossCore_Latency").c_str(),
                                     [&be](benchmark::State& st) { crosscore_latency(st, be); })
            ->ArgName("spin_us")
            ->Arg(0)
            ->Arg(50)
            ->UseManualTime();
        benchmark::RegisterBenchmark(be.family("CrossCore_PostThroughput").c_str(),
                                     [&be](benchmark::State& st) { crosscore_post_throughput(st, be); })
            ->ArgName("batch")
            ->Arg(1)
            ->Arg(256)
            ->UseManualTime();
    }
    return true;
}();

}  // namespace
