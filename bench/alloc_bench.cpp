// Shard-local allocators vs the system allocator: the Apex Core report, §3.
//
// Every benchmark does the same work per iteration: obtain one object of the given size, write
// one byte into it (so the memory is really touched), let the pointer escape
// (DoNotOptimize + ClobberMemory, so the compiler can neither skip the write nor pair and delete
// a malloc/free), and give it back. Pools give back with deallocate(); arenas hand out
// monotonically and are reset when the next request would not fit, as a per-request arena is,
// so one iteration is one allocation plus, on average, a small share of a reset.
//
// Every benchmark first makes the process multi-threaded, as a server with one thread per shard
// is: glibc malloc and libstdc++'s shared_ptr take cheaper paths while the process is
// single-threaded, and whether an earlier benchmark in this binary started a thread must not
// decide which path the baselines measure.
#include <strix/mem/block_arena.hpp>
#include <strix/mem/bump_arena.hpp>
#include <strix/mem/slab_pool.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <thread>

namespace {

constexpr std::size_t arena_bytes = 64 * 1024;  // one bump buffer / one arena block

void become_multi_threaded() {
    std::thread([] {}).join();
}

// Writes one byte so the allocation is real memory traffic, then publishes the pointer.
inline void touch(void* p, std::uint64_t i) {
    *static_cast<unsigned char*>(p) = static_cast<unsigned char>(i);
    benchmark::DoNotOptimize(p);
    benchmark::ClobberMemory();
}

void SlabAllocator_AllocDealloc(benchmark::State& state) {
    const auto size = static_cast<std::size_t>(state.range(0));
    strix::slab_pool pool(size);
    std::uint64_t i = 0;
    become_multi_threaded();
    for (auto _ : state) {
        void* p = pool.allocate();
        touch(p, i++);
        pool.deallocate(p);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(SlabAllocator_AllocDealloc)->Arg(64)->Arg(256)->Arg(1024);

// glibc malloc/free with the same shape: the fair baseline for the slab pool.
void Malloc_AllocFree(benchmark::State& state) {
    const auto size = static_cast<std::size_t>(state.range(0));
    std::uint64_t i = 0;
    become_multi_threaded();
    for (auto _ : state) {
        void* p = std::malloc(size);
        if (p == nullptr) {
            state.SkipWithError("malloc failed");
            break;
        }
        touch(p, i++);
        std::free(p);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(Malloc_AllocFree)->Arg(64)->Arg(256)->Arg(1024);

struct payload64 {
    unsigned char bytes[64];
};
static_assert(sizeof(payload64) == 64);

// make_shared allocates object + control block in one go and initialises the (atomic) counts.
void MakeShared_AllocDealloc(benchmark::State& state) {
    std::uint64_t i = 0;
    become_multi_threaded();
    for (auto _ : state) {
        auto sp = std::make_shared<payload64>();
        touch(sp.get(), i++);
    }  // last reference dropped: destroyed and freed every iteration
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(MakeShared_AllocDealloc);

void BumpAllocator_Alloc(benchmark::State& state) {
    const auto size = static_cast<std::size_t>(state.range(0));
    strix::bump_arena arena(arena_bytes);
    std::uint64_t i = 0;
    become_multi_threaded();
    for (auto _ : state) {
        void* p = arena.allocate(size);
        if (p == nullptr) [[unlikely]] {
            arena.reset();  // end of the "request": start over
            p = arena.allocate(size);
        }
        touch(p, i++);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BumpAllocator_Alloc)->Arg(64)->Arg(256)->Arg(1024);

void ArenaAllocator_Alloc(benchmark::State& state) {
    const auto size = static_cast<std::size_t>(state.range(0));
    strix::block_arena arena(arena_bytes);
    std::uint64_t i = 0;
    become_multi_threaded();
    for (auto _ : state) {
        // Reset before the arena would have to chain a second block, the same cadence as the bump
        // arena above (sizes here are multiples of the alignment, so in_use is exact).
        if (arena.stats().in_use + size > arena_bytes) [[unlikely]]
            arena.reset();
        void* p = arena.allocate(size);
        touch(p, i++);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(ArenaAllocator_Alloc)->Arg(64)->Arg(256)->Arg(1024);

}  // namespace
