// intrusive_ptr (non-atomic, shard-local) vs std::shared_ptr (atomic) copy cost: seed 000 §7.
#include <strix/core/intrusive_ptr.hpp>

#include <benchmark/benchmark.h>

#include <memory>

namespace {

struct session_like : strix::ref_counted<session_like> {
    std::uint64_t id = 42;
};

// One copy + one destruction per iteration, as a handler taking a session reference does.
void SessionPtr_Copy(benchmark::State& state) {
    auto p = strix::make_intrusive<session_like>();
    for (auto _ : state) {
        strix::intrusive_ptr<session_like> copy = p;
        benchmark::DoNotOptimize(copy.get());
        // Forces the count update to memory, so the non-atomic ++/-- pair is not folded away.
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(SessionPtr_Copy);

void SharedPtr_Copy(benchmark::State& state) {
    auto p = std::make_shared<session_like>();
    for (auto _ : state) {
        std::shared_ptr<session_like> copy = p;
        benchmark::DoNotOptimize(copy.get());
        // Forces the count update to memory, so the non-atomic ++/-- pair is not folded away.
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(SharedPtr_Copy);

}  // namespace
