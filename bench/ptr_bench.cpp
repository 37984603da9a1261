// intrusive_ptr (non-atomic, shard-local) vs std::shared_ptr (atomic) copy cost: the Apex Core
// report, §7.
//
// One iteration = one copy (count increment) + one destruction (count decrement), both performed
// on the count in memory, for both pointer types alike:
//   - DoNotOptimize(source) before the copy: the compiler must assume the source pointer may
//     have changed, so it reloads it and cannot prove which object the count belongs to (a
//     handler gets its session pointer from a table, not from a register it can reason about).
//   - DoNotOptimize(copy) + ClobberMemory() while the copy is alive: the incremented count must
//     be in memory at that point, so ++ and -- cannot be merged into nothing.
//   - ClobberMemory() after the copy is destroyed: the decremented count must be stored too.
// Checked with objdump -d (gcc 12 -O3): each SessionPtr_Copy iteration loads the pointer, does
// `addl $1,(reg)` on the count, then reloads it, `sub $1` and stores it back (plus the zero test);
// each SharedPtr_Copy iteration loads the pointer and does `lock addl` + `lock xadd` (see
// become_multi_threaded below for why that needs care).
//
// The intrusive figure stays small (about 2 cycles per iteration on a Zen 5 at ~4 GHz) although
// both updates are in memory: nothing is folded away, the CPU forwards the stored count straight
// to the next load of the same address (memory renaming on recent AMD and Intel cores), so the
// ++/-- chain costs almost nothing. That is the real cost of a non-atomic count in a tight loop;
// the atomic count pays for two locked read-modify-writes each time.
#include <strix/core/intrusive_ptr.hpp>

#include <benchmark/benchmark.h>

#include <memory>
#include <thread>

namespace {

struct session_like : strix::ref_counted<session_like> {
    std::uint64_t id = 42;
};

// libstdc++'s shared_ptr skips the atomic instructions while glibc reports the process as
// single-threaded (__libc_single_threaded), which a benchmark binary is until something starts a
// thread. A server runs one thread per shard, so make the process multi-threaded first: then
// shared_ptr pays for atomics as it does in production, whatever ran before in this binary.
void become_multi_threaded() {
    std::thread([] {}).join();
}

template <class Ptr>
void copy_and_drop(benchmark::State& state, Ptr& source) {
    become_multi_threaded();
    for (auto _ : state) {
        benchmark::DoNotOptimize(source);
        {
            Ptr copy = source;  // count + 1
            benchmark::DoNotOptimize(copy);
            benchmark::ClobberMemory();
        }  // count - 1
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
}

void SessionPtr_Copy(benchmark::State& state) {
    auto p = strix::make_intrusive<session_like>();
    copy_and_drop(state, p);
    if (p->use_count() != 1) state.SkipWithError("reference count drifted");
}
BENCHMARK(SessionPtr_Copy);

void SharedPtr_Copy(benchmark::State& state) {
    auto p = std::make_shared<session_like>();
    copy_and_drop(state, p);
    if (p.use_count() != 1) state.SkipWithError("reference count drifted");
}
BENCHMARK(SharedPtr_Copy);

}  // namespace
