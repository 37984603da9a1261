// The Apex Core report's cross-core rows (§10), through strix's mesh: an engine with two shards
// (threads not pinned: the machine the suite runs on has two cores, shared with this benchmark's
// own thread and with whatever else runs; on a bigger idle machine pin them for cleaner figures).
//
//   CrossCore_Latency/spin_us:S    a task posted shard 0 -> shard 1 (post_to), which posts one
//       back 1 -> 0; the next ping leaves when the pong arrived. One benchmark iteration is a
//       chain of 256 round trips timed on shard 0 (manual time: from the first ping to the last
//       pong, so this thread's wake-up is not in it); round_trip = time / round trips.
//       S is engine_config::poll_spin: 0 (the default) lets an idle shard sleep in epoll_wait,
//       so every hop pays the eventfd doorbell and a thread wake-up, as Apex Core's ~17-24 µs
//       did; S = 50 keeps both shards polling for 50 µs after work, so on idle cores a hop is
//       the SPSC queue and a cache line moving between cores. On a loaded machine two polling
//       shards compete for CPU time with everything else and a hop can wait for a time slice.
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
#include "done_flag.hpp"

#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

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

using strix_bench::done_flag;
using strix_bench::round_limit;

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
        if (!c.finished.wait_for(round_limit)) {
            state.SkipWithError("a round trip was lost: the chain stopped");
            break;
        }
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
    state.counters["round_trip"] =
        benchmark::Counter(static_cast<double>(round_trips), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// --- CrossCore_PostThroughput -----------------------------------------------------------------

constexpr std::uint64_t stream_tasks = 65536;

struct post_stream {
    std::uint64_t batch = 0;
    std::uint64_t sent = 0;       // shard 0
    std::atomic<std::uint64_t> received{0};  // written by shard 1 only (atomic for a stuck run's message)
    bool out_of_order = false;    // shard 1
    clock_type::time_point t0;    // shard 0
    clock_type::time_point t1;    // shard 1
    done_flag finished;
};

void produce(post_stream* s) {  // on shard 0: one loop turn's batch
    strix::shard& sh = *strix::shard::current();
    // Nothing in *s may be touched after the last post: shard 1 may run it at once, raise the
    // flag, and the benchmark thread reset *s for the next round while this task still runs.
    const std::uint64_t first = s->sent;
    const std::uint64_t end = std::min(first + s->batch, stream_tasks);
    s->sent = end;
    for (std::uint64_t seq = first; seq < end; ++seq) {
        sh.post_to(1, [s, seq] {  // on shard 1
            const std::uint64_t got = s->received.load(std::memory_order_relaxed);
            if (seq != got) s->out_of_order = true;
            s->received.store(got + 1, std::memory_order_relaxed);
            if (got + 1 == stream_tasks) {
                s->t1 = clock_type::now();
                s->finished.raise();
            }
        });
    }
    if (end < stream_tasks) sh.post_local([s] { produce(s); });
}

void crosscore_post_throughput(benchmark::State& state, const bench_backend& be) {
    strix::engine eng(two_shards(be));
    eng.start();
    post_stream s;
    s.batch = static_cast<std::uint64_t>(state.range(0));
    const std::uint64_t overflows_before = eng.at(0).stats().mesh_overflows.value();
    std::uint64_t tasks = 0;
    for (auto _ : state) {
        s.sent = 0;
        s.received.store(0, std::memory_order_relaxed);
        s.finished.reset();
        eng.post(0, [&s] {
            s.t0 = clock_type::now();
            produce(&s);
        });
        if (!s.finished.wait_for(round_limit)) {
            const std::string msg = "stuck: shard 1 ran " + std::to_string(s.received.load()) + " of " +
                                    std::to_string(stream_tasks) + " tasks";
            state.SkipWithError(msg.c_str());
            break;
        }
        if (s.out_of_order) {
            state.SkipWithError("tasks arrived out of order");
            break;
        }
        tasks += stream_tasks;
        state.SetIterationTime(seconds(s.t1 - s.t0));
    }
    const std::uint64_t overflows = eng.at(0).stats().mesh_overflows.value() - overflows_before;
    eng.stop();
    eng.join();
    state.SetLabel(be.name);
    state.SetItemsProcessed(static_cast<std::int64_t>(tasks));
    state.counters["per_task"] =
        benchmark::Counter(static_cast<double>(tasks), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["overflows"] =
        benchmark::Counter(tasks ? static_cast<double>(overflows) / static_cast<double>(tasks) : 0);
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
