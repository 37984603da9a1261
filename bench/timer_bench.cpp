// Timing wheel costs: bulk schedule-and-expire, and the schedule/cancel pair a session pays on
// every read when it re-arms its idle timeout.
//
// TimingWheel_ScheduleTick/N  schedule N timers with random delays in [1, N], then advance one tick
//                             at a time until all N have fired. Items = N timers per iteration.
// TimingWheel_ScheduleOnly    one schedule + one cancel per iteration, delays random in
//                             [1, 2^18] so every level but the top is exercised.
#include <strix/core/timing_wheel.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace {

void TimingWheel_ScheduleTick(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    std::mt19937_64 rng(42);
    std::vector<std::uint64_t> delays(n);
    for (auto& d : delays) d = 1 + rng() % n;

    strix::timing_wheel wheel;
    std::size_t fired = 0;
    auto nodes = std::make_unique<strix::timer_node[]>(n);
    for (std::size_t i = 0; i < n; ++i) {
        nodes[i].set_callback([&fired] { ++fired; });
    }
    for (auto _ : state) {
        fired = 0;
        for (std::size_t i = 0; i < n; ++i) wheel.schedule(nodes[i], delays[i]);
        const std::uint64_t end = wheel.now() + n;
        while (wheel.now() < end) wheel.advance_to(wheel.now() + 1);
        if (fired != n) {
            state.SkipWithError("not every timer fired");
            break;
        }
        benchmark::DoNotOptimize(fired);
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}
BENCHMARK(TimingWheel_ScheduleTick)->Arg(1000)->Arg(10000)->Arg(50000);

void TimingWheel_ScheduleOnly(benchmark::State& state) {
    std::mt19937_64 rng(7);
    std::vector<std::uint64_t> delays(4096);
    for (auto& d : delays) d = 1 + rng() % (std::uint64_t{1} << 18);

    strix::timing_wheel wheel;
    std::size_t fired = 0;
    strix::timer_node node;
    node.set_callback([&fired] { ++fired; });
    // Some company in the wheel, so slots are not all empty.
    auto others = std::make_unique<strix::timer_node[]>(1024);
    for (std::size_t i = 0; i < 1024; ++i) {
        others[i].set_callback([&fired] { ++fired; });
        wheel.schedule(others[i], delays[i * 4]);
    }
    std::size_t i = 0;
    for (auto _ : state) {
        wheel.schedule(node, delays[i++ & 4095]);
        benchmark::ClobberMemory();  // the links must really be written
        wheel.cancel(node);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
    for (std::size_t k = 0; k < 1024; ++k) wheel.cancel(others[k]);
}
BENCHMARK(TimingWheel_ScheduleOnly);

}  // namespace
