// Cross-shard queue costs: the Apex Core report, §2 (SPSC vs MPSC) plus boost::lockfree::spsc_queue
// as the outside peer. Element type is std::uint64_t throughout.
//
//   *_Throughput/<capacity>, MpscQueue_1P1C/<capacity>   one thread, one push + one pop per
//       iteration: the bare cost of the two operations with the ring's lines in this core's cache.
//       The three families run the identical loop, so their ratios compare the queues alone.
//   SpscQueue_Latency                 one item ping-ponged between two threads; time per item is
//                                     half a round trip.
//   SpscQueue_ConcurrentThroughput    a producer thread streams batches; this thread consumes.
//   MpscQueue_2P1C                    two producer threads; this thread consumes.
//
// The threaded ones report wall time (UseRealTime): the consumer's CPU time says nothing about
// how long the items took to arrive.
#include <strix/core/mpsc_queue.hpp>
#include <strix/core/spsc_queue.hpp>

#include <benchmark/benchmark.h>
#include <boost/lockfree/spsc_queue.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

using spsc = strix::spsc_queue<std::uint64_t>;
using mpsc = strix::mpsc_queue<std::uint64_t>;
using boost_spsc = boost::lockfree::spsc_queue<std::uint64_t>;  // capacity given at run time

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Waiting for the other thread: spin first (on idle cores the peer answers within a few dozen
// pauses, so the numbers show a pure spin), then yield, so a machine with fewer free cores than
// threads still makes progress instead of burning whole time slices on a descheduled peer.
class backoff {
public:
    void pause() noexcept {
        if (spins_ < 256) {
            ++spins_;
            cpu_relax();
        } else {
            std::this_thread::yield();
        }
    }

private:
    unsigned spins_ = 0;
};

bool push(spsc& q, std::uint64_t v) noexcept { return q.try_push(v); }
bool push(mpsc& q, std::uint64_t v) noexcept { return q.try_push(v); }
bool push(boost_spsc& q, std::uint64_t v) noexcept { return q.push(v); }
bool pop(spsc& q, std::uint64_t& v) noexcept { return q.try_pop(v); }
bool pop(mpsc& q, std::uint64_t& v) noexcept { return q.try_pop(v); }
bool pop(boost_spsc& q, std::uint64_t& v) noexcept { return q.pop(v); }

// The single-thread work shape shared by SpscQueue_Throughput, MpscQueue_1P1C and
// BoostLockfreeSpsc_Throughput: per iteration push one item, pop one item.
template <class Queue>
void push_pop_one(benchmark::State& state, Queue& q) {
    // One untimed lap around the ring first, so page faults and cold lines of the large rings
    // are not charged to the first timed laps.
    std::uint64_t v = 0;
    for (std::int64_t i = 0; i < state.range(0); ++i) {
        push(q, v);
        pop(q, v);
    }
    std::uint64_t next = 0;
    for (auto _ : state) {
        const bool pushed = push(q, next++);
        std::uint64_t out = 0;
        const bool popped = pop(q, out);
        benchmark::DoNotOptimize(out);
        if (!pushed || !popped) {
            state.SkipWithError("push or pop failed on a ring holding at most one item");
            break;
        }
    }
    state.SetItemsProcessed(state.iterations());
}

void SpscQueue_Throughput(benchmark::State& state) {
    spsc q(static_cast<std::size_t>(state.range(0)));
    push_pop_one(state, q);
}
BENCHMARK(SpscQueue_Throughput)->Arg(1024)->Arg(4096)->Arg(32768)->Arg(65536);

void MpscQueue_1P1C(benchmark::State& state) {
    mpsc q(static_cast<std::size_t>(state.range(0)));
    push_pop_one(state, q);
}
BENCHMARK(MpscQueue_1P1C)->Arg(1024)->Arg(4096)->Arg(32768)->Arg(65536);

void BoostLockfreeSpsc_Throughput(benchmark::State& state) {
    boost_spsc q(static_cast<std::size_t>(state.range(0)));
    push_pop_one(state, q);
}
BENCHMARK(BoostLockfreeSpsc_Throughput)->Arg(1024)->Arg(4096)->Arg(32768)->Arg(65536);

// Iterations alternate: an even one sends the item, the odd one after it waits for the echo.
// Each pair of iterations is one round trip, so the mean time per iteration (= per item) is half
// a round trip. The echo thread stops on the `stop_value` sentinel.
void SpscQueue_Latency(benchmark::State& state) {
    constexpr std::uint64_t stop_value = ~std::uint64_t{0};
    spsc ping(64);
    spsc pong(64);
    std::thread echo([&] {
        for (;;) {
            std::uint64_t v = 0;
            backoff wait;
            while (!ping.try_pop(v)) wait.pause();
            if (v == stop_value) return;
            // Cannot be full: at most one item is ever in flight.
            pong.try_push(v);
        }
    });
    std::uint64_t sent = 0;
    bool in_flight = false;
    bool lost = false;
    auto await_echo = [&] {
        std::uint64_t v = 0;
        backoff wait;
        while (!pong.try_pop(v)) wait.pause();
        if (v != sent) lost = true;
        ++sent;
        in_flight = false;
    };
    for (auto _ : state) {
        if (!in_flight) {
            ping.try_push(sent);  // cannot be full, as above
            in_flight = true;
        } else {
            await_echo();
        }
    }
    if (in_flight) await_echo();  // an odd iteration count leaves one echo to collect
    ping.try_push(stop_value);
    echo.join();
    if (lost) state.SkipWithError("echo returned a different item");
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(SpscQueue_Latency)->UseRealTime();

constexpr std::size_t stream_capacity = 4096;
constexpr std::size_t stream_batch = 64;

// The consumer side shared by the two streaming benchmarks: drain up to a batch into a local
// buffer with one pop_batch, then hand out one item per iteration, as a shard's loop does.
template <class Queue>
void consume_stream(benchmark::State& state, Queue& q) {
    std::array<std::uint64_t, stream_batch> local{};
    std::size_t have = 0;
    std::size_t at = 0;
    for (auto _ : state) {
        if (at == have) {
            backoff wait;
            for (;;) {
                std::size_t n = 0;
                have = q.pop_batch([&](std::uint64_t&& v) { local[n++] = v; }, stream_batch);
                if (have != 0) break;
                wait.pause();
            }
            at = 0;
        }
        benchmark::DoNotOptimize(local[at++]);
    }
    state.SetItemsProcessed(state.iterations());
}

void SpscQueue_ConcurrentThroughput(benchmark::State& state) {
    spsc q(stream_capacity);
    alignas(64) std::atomic<bool> stop{false};
    std::thread producer([&] {
        std::array<std::uint64_t, stream_batch> batch{};
        std::uint64_t next = 0;
        while (!stop.load(std::memory_order_relaxed)) {
            for (std::size_t i = 0; i < stream_batch; ++i) batch[i] = next + i;
            std::size_t sent = 0;
            backoff wait;
            while (sent < stream_batch) {
                const std::size_t n =
                    q.try_push_batch(batch.begin() + static_cast<std::ptrdiff_t>(sent), stream_batch - sent);
                if (n == 0) {
                    if (stop.load(std::memory_order_relaxed)) return;
                    wait.pause();
                }
                sent += n;
            }
            next += stream_batch;
        }
    });
    consume_stream(state, q);
    stop.store(true, std::memory_order_relaxed);
    producer.join();
}
BENCHMARK(SpscQueue_ConcurrentThroughput)->UseRealTime();

void MpscQueue_2P1C(benchmark::State& state) {
    mpsc q(stream_capacity);
    alignas(64) std::atomic<bool> stop{false};
    std::vector<std::thread> producers;
    for (std::uint64_t p = 0; p < 2; ++p) {
        producers.emplace_back([&q, &stop, p] {
            std::uint64_t next = p << 32;
            backoff wait;
            while (!stop.load(std::memory_order_relaxed)) {
                if (q.try_push(next)) {
                    ++next;
                    wait = backoff{};
                } else {
                    wait.pause();
                }
            }
        });
    }
    consume_stream(state, q);
    stop.store(true, std::memory_order_relaxed);
    for (auto& t : producers) t.join();
}
BENCHMARK(MpscQueue_2P1C)->UseRealTime();

}  // namespace
