// Session table: boost::unordered_flat_map vs std::unordered_map: the Apex Core report, §6.
//
// Keys are 64-bit session ids that look random (splitmix64 of a counter), as ids handed out by
// a server that must not be guessable are. The value is a 48-byte session state. Each map uses
// its library's default hash for std::uint64_t, as application code would.
//
// How the tables are built, identically for both (build_table below):
//   1. Sessions are inserted one by one, and after each insert the "connection" allocates its
//      own side objects (two buffers of 64..1024 bytes, kept alive), as accepting a connection
//      does. In a real shard the session table's allocations are interleaved with everything
//      else the shard allocates, so std::unordered_map's nodes are not laid out back to back.
//   2. Then churn: half as many disconnect/connect pairs as sessions (erase a random live
//      session with its side objects, insert a new one with new side objects). Freed nodes and
//      buffers are recycled by malloc in a different order, which scatters nodes further, as in
//      a server that has been running for a while.
// Without this, std::unordered_map's nodes would sit in insertion order in memory and iteration
// would look like a walk over an array; with it, both maps see the same history. Nothing else
// differs: same ids, same values, same lookup order, same work per iteration.
#include <boost/unordered/unordered_flat_map.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

namespace {

struct session_state {
    std::uint64_t id;
    std::uint64_t last_seen_ns;
    std::uint64_t bytes_in;
    std::uint64_t bytes_out;
    std::uint32_t room;
    std::uint32_t flags;
    std::uint64_t seq;
};
static_assert(sizeof(session_state) == 48);

std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// A session table with the history described at the top of the file, and the live ids in a
// shuffled order for lookups.
template <class Map>
struct session_table {
    Map map;
    std::vector<std::uint64_t> ids;                        // live ids, shuffled
    std::vector<std::unique_ptr<unsigned char[]>> side;  // per-connection buffers, kept alive
};

template <class Map>
session_table<Map> build_table(std::size_t n) {
    session_table<Map> t;
    std::mt19937_64 rng(0x5eed + n);  // same sequence for both map types
    std::uniform_int_distribution<std::size_t> buf_size(64, 1024);
    std::uint64_t counter = 0;
    std::vector<std::uint64_t> live;
    std::vector<std::size_t> side_of;  // live[i]'s first side buffer index in t.side
    live.reserve(n);
    side_of.reserve(n);

    auto connect = [&] {
        const std::uint64_t id = splitmix64(counter++);
        t.map.emplace(id, session_state{id, counter, 0, 0, static_cast<std::uint32_t>(counter % 64), 0, 0});
        side_of.push_back(t.side.size());
        for (int k = 0; k < 2; ++k) {
            t.side.push_back(std::make_unique<unsigned char[]>(buf_size(rng)));
            t.side.back()[0] = static_cast<unsigned char>(k);
        }
        live.push_back(id);
    };
    for (std::size_t i = 0; i < n; ++i) connect();
    for (std::size_t i = 0; i < n / 2; ++i) {
        const std::size_t victim = static_cast<std::size_t>(rng() % live.size());
        t.map.erase(live[victim]);
        t.side[side_of[victim]].reset();
        t.side[side_of[victim] + 1].reset();
        live[victim] = live.back();
        live.pop_back();
        side_of[victim] = side_of.back();
        side_of.pop_back();
        connect();
    }
    std::shuffle(live.begin(), live.end(), rng);
    t.ids = std::move(live);
    return t;
}

using flat_map = boost::unordered_flat_map<std::uint64_t, session_state>;
using std_map = std::unordered_map<std::uint64_t, session_state>;

// One lookup per iteration, ids in a pre-shuffled order, reading a field of the result (a
// handler looks a session up to use it).
template <class Map>
void session_lookup(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    auto t = build_table<Map>(n);
    if (t.map.size() != n) {
        state.SkipWithError("table has the wrong size");
        return;
    }
    std::size_t i = 0;
    for (auto _ : state) {
        auto it = t.map.find(t.ids[i]);
        benchmark::DoNotOptimize(it->second.bytes_in);
        if (++i == n) i = 0;
    }
    state.SetItemsProcessed(state.iterations());
}

void FlatMap_SessionLookup(benchmark::State& state) { session_lookup<flat_map>(state); }
void StdMap_SessionLookup(benchmark::State& state) { session_lookup<std_map>(state); }
BENCHMARK(FlatMap_SessionLookup)->Arg(100)->Arg(1000)->Arg(10000)->Arg(100000);
BENCHMARK(StdMap_SessionLookup)->Arg(100)->Arg(1000)->Arg(10000)->Arg(100000);

// Visits every session and touches its state (a broadcast or an idle-timeout sweep): reads
// last_seen_ns and bumps seq, so each session's memory is really read and written.
template <class Map>
void session_iterate(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    auto t = build_table<Map>(n);
    std::uint64_t sum = 0;
    for (auto _ : state) {
        for (auto& [id, s] : t.map) {
            sum += s.last_seen_ns;
            ++s.seq;
        }
        benchmark::DoNotOptimize(sum);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(t.map.size()));
}

void FlatMap_SessionIterate(benchmark::State& state) { session_iterate<flat_map>(state); }
void StdMap_SessionIterate(benchmark::State& state) { session_iterate<std_map>(state); }
BENCHMARK(FlatMap_SessionIterate)->Arg(100)->Arg(1000)->Arg(10000);
BENCHMARK(StdMap_SessionIterate)->Arg(100)->Arg(1000)->Arg(10000);

}  // namespace
