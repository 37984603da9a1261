// Message-type -> handler lookup: the Apex Core report's Dispatcher_Lookup/{10,100,1000} (§6),
// N handlers registered. Apex Core's MessageDispatcher kept them in a boost::unordered_flat_map;
// strix's frame header has a 16-bit type, so the bench dispatcher (message_dispatcher.hpp) is a table
// indexed by type. The three rows do the same work on the same keys:
//
//   Dispatcher_Lookup/N          message_dispatcher::find: bounds check + one load
//   Dispatcher_LookupFlatMap/N   boost::unordered_flat_map<uint16_t, handler*>::find
//   Dispatcher_LookupStdMap/N    std::unordered_map<uint16_t, handler*>::find
//
// The N registered types are distinct random 16-bit values (a protocol's types are not always
// 0..N-1: chat's run 1..14 and 100..103), which spreads the table over up to 512 KiB. Lookups
// walk a fixed random sequence of 4096 registered types, so neither the branch predictor nor
// the prefetcher learns the next one. Every lookup must find a handler; after the loop every
// registered type is looked up in all three and must give the same handler.
#include "message_dispatcher.hpp"

#include <benchmark/benchmark.h>
#include <boost/unordered/unordered_flat_map.hpp>

#include <algorithm>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

namespace {

using strix_bench::message_dispatcher;
using strix_bench::message_handler;

class noop_handler final : public message_handler {
public:
    void on_message(std::uint16_t, const strix::bench::bench_msg&) override {}
};

constexpr std::size_t key_count = 4096;  // power of two: the loop masks its index

struct dispatch_setup {
    std::vector<std::uint16_t> types;     // registered, distinct
    std::vector<std::uint16_t> lookups;   // key_count picks from types
    std::vector<std::unique_ptr<noop_handler>> handlers;
    message_dispatcher table;
    boost::unordered_flat_map<std::uint16_t, message_handler*> flat;
    std::unordered_map<std::uint16_t, message_handler*> std_map;
};

dispatch_setup make_setup(std::size_t n) {
    dispatch_setup s;
    std::mt19937 rng(static_cast<unsigned>(0xd15 + n));
    std::vector<std::uint16_t> all(65535);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i + 1);
    std::shuffle(all.begin(), all.end(), rng);
    s.types.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    for (const std::uint16_t t : s.types) {
        s.handlers.push_back(std::make_unique<noop_handler>());
        s.table.add(t, *s.handlers.back());
        s.flat.emplace(t, s.handlers.back().get());
        s.std_map.emplace(t, s.handlers.back().get());
    }
    std::uniform_int_distribution<std::size_t> pick(0, n - 1);
    for (std::size_t i = 0; i < key_count; ++i) s.lookups.push_back(s.types[pick(rng)]);
    return s;
}

bool all_agree(const dispatch_setup& s) {
    for (const std::uint16_t t : s.types) {
        message_handler* h = s.table.find(t);
        const auto f = s.flat.find(t);
        const auto m = s.std_map.find(t);
        if (!h || f == s.flat.end() || m == s.std_map.end() || f->second != h || m->second != h) return false;
    }
    return s.table.find(0) == nullptr;  // 0 is never registered above
}

template <class Find>
void run_lookups(benchmark::State& state, const dispatch_setup& s, Find find) {
    std::size_t i = 0;
    std::size_t misses = 0;
    for (auto _ : state) {
        message_handler* h = find(s.lookups[i++ & (key_count - 1)]);
        misses += h == nullptr;
        benchmark::DoNotOptimize(h);
    }
    if (misses != 0)
        state.SkipWithError("a registered type found no handler");
    else if (!all_agree(s))
        state.SkipWithError("the three lookups disagree");
    state.SetItemsProcessed(state.iterations());
}

void Dispatcher_Lookup(benchmark::State& state) {
    const auto s = make_setup(static_cast<std::size_t>(state.range(0)));
    run_lookups(state, s, [&](std::uint16_t t) { return s.table.find(t); });
}
BENCHMARK(Dispatcher_Lookup)->Arg(10)->Arg(100)->Arg(1000);

void Dispatcher_LookupFlatMap(benchmark::State& state) {
    const auto s = make_setup(static_cast<std::size_t>(state.range(0)));
    run_lookups(state, s, [&](std::uint16_t t) -> message_handler* {
        const auto it = s.flat.find(t);
        return it == s.flat.end() ? nullptr : it->second;
    });
}
BENCHMARK(Dispatcher_LookupFlatMap)->Arg(10)->Arg(100)->Arg(1000);

void Dispatcher_LookupStdMap(benchmark::State& state) {
    const auto s = make_setup(static_cast<std::size_t>(state.range(0)));
    run_lookups(state, s, [&](std::uint16_t t) -> message_handler* {
        const auto it = s.std_map.find(t);
        return it == s.std_map.end() ? nullptr : it->second;
    });
}
BENCHMARK(Dispatcher_LookupStdMap)->Arg(10)->Arg(100)->Arg(1000);

}  // namespace
