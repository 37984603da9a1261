// Per-core vs shared architecture on a stateful workload (Apex Core report, §10).
//
// Each message is a posted task whose handler finds a session in a map and updates its state,
// as a server does for every request. Both sides do the same work with N workers:
//
//   PerCore_Stateful/N  a strix engine with N shards; each shard owns its session map (no lock)
//                       and runs the tasks posted to itself (shard::post_local).
//   Shared_Stateful/N   one boost::asio::io_context run by N threads (the classic thread-pool
//                       server); tasks go through its shared queue and the session map is one
//                       map split into 64 mutex-guarded partitions (the usual optimisation).
//
// Each worker produces its own share of messages in batches (a generator task re-posting itself),
// so neither side has a single producer bottleneck. items/s = messages handled per second.
#include <strix/core/engine.hpp>

#include <benchmark/benchmark.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include <array>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace {

constexpr std::uint64_t sessions_per_worker = 10000;
constexpr std::uint64_t messages_per_worker = 200000;
constexpr std::uint64_t batch = 256;

struct session_state {
    std::uint64_t messages = 0;
    std::uint64_t bytes = 0;
    std::uint64_t last_seq = 0;
};

// A cheap, deterministic id sequence so both sides look up the same keys.
inline std::uint64_t session_key(std::uint64_t worker, std::uint64_t i) {
    return (worker << 32) | ((i * 2654435761u) % sessions_per_worker);
}

inline void handle(session_state& s, std::uint64_t seq) {
    ++s.messages;
    s.bytes += 64;
    s.last_seq = seq;
}

// ---------------------------------------------------------------------------------------------

struct per_core_shard_state {
    boost::unordered_flat_map<std::uint64_t, session_state> sessions;
    std::uint64_t produced = 0;
};

void generate(strix::engine& eng, unsigned me, std::vector<per_core_shard_state>& st, std::atomic<unsigned>& done) {
    auto& s = st[me];
    auto& sh = eng.at(me);
    std::uint64_t end = std::min(s.produced + batch, messages_per_worker);
    for (; s.produced < end; ++s.produced) {
        std::uint64_t i = s.produced;
        sh.post_local([&s, me, i] {
            auto it = s.sessions.find(session_key(me, i));
            handle(it->second, i);
        });
    }
    if (s.produced < messages_per_worker)
        sh.post_local([&eng, me, &st, &done] { generate(eng, me, st, done); });
    else
        sh.post_local([&done] {  // runs after the last message of this shard
            done.fetch_add(1, std::memory_order_release);
            done.notify_all();
        });
}

void PerCore_Stateful(benchmark::State& state) {
    const auto n = static_cast<unsigned>(state.range(0));
    strix::engine_config cfg;
    cfg.shards = n;
    cfg.pin_threads = true;  // per-core scaling: one shard per core, nothing else on it
    strix::engine eng(cfg);
    std::vector<per_core_shard_state> st(n);
    for (unsigned w = 0; w < n; ++w)
        for (std::uint64_t i = 0; i < sessions_per_worker; ++i) st[w].sessions[session_key(w, i)] = {};
    eng.start();
    for (auto _ : state) {
        std::atomic<unsigned> done{0};
        for (unsigned w = 0; w < n; ++w) {
            eng.post(w, [&eng, w, &st, &done] {
                st[w].produced = 0;
                generate(eng, w, st, done);
            });
        }
        // Block (futex) rather than spin: the benchmark thread must not steal a core from the shards.
        for (unsigned seen = done.load(std::memory_order_acquire); seen < n;
             seen = done.load(std::memory_order_acquire))
            done.wait(seen, std::memory_order_acquire);
    }
    eng.stop();
    eng.join();
    std::uint64_t handled = 0;
    for (auto& s : st)
        for (auto& [k, v] : s.sessions) handled += v.messages;
    if (handled != static_cast<std::uint64_t>(state.iterations()) * n * messages_per_worker)
        state.SkipWithError("per-core side lost messages");
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n * messages_per_worker));
}

// ---------------------------------------------------------------------------------------------

struct shared_map {
    static constexpr std::size_t partitions = 64;
    struct part {
        std::mutex m;
        boost::unordered_flat_map<std::uint64_t, session_state> sessions;
    };
    std::array<part, partitions> parts;
    part& of(std::uint64_t key) { return parts[(key * 0x9E3779B97F4A7C15ull) >> 58]; }
};

void shared_generate(boost::asio::io_context& io, shared_map& map, unsigned me, std::uint64_t from,
                     std::atomic<std::uint64_t>& handled_now) {
    std::uint64_t end = std::min(from + batch, messages_per_worker);
    for (std::uint64_t i = from; i < end; ++i) {
        boost::asio::post(io, [&map, me, i, &handled_now] {
            auto key = session_key(me, i);
            auto& p = map.of(key);
            {
                std::lock_guard<std::mutex> lock(p.m);
                handle(p.sessions.find(key)->second, i);
            }
            handled_now.fetch_add(1, std::memory_order_relaxed);
        });
    }
    if (end < messages_per_worker)
        boost::asio::post(io, [&io, &map, me, end, &handled_now] { shared_generate(io, map, me, end, handled_now); });
}

void Shared_Stateful(benchmark::State& state) {
    const auto n = static_cast<unsigned>(state.range(0));
    shared_map map;
    for (unsigned w = 0; w < n; ++w)
        for (std::uint64_t i = 0; i < sessions_per_worker; ++i) {
            auto key = session_key(w, i);
            map.of(key).sessions[key] = {};
        }
    std::uint64_t total = 0;
    for (auto _ : state) {
        boost::asio::io_context io;
        std::atomic<std::uint64_t> handled_now{0};
        for (unsigned w = 0; w < n; ++w)
            boost::asio::post(io, [&io, &map, w, &handled_now] { shared_generate(io, map, w, 0, handled_now); });
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < n; ++t) threads.emplace_back([&io] { io.run(); });
        for (auto& t : threads) t.join();
        total += handled_now.load();
    }
    if (total != static_cast<std::uint64_t>(state.iterations()) * n * messages_per_worker)
        state.SkipWithError("shared side lost messages");
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n * messages_per_worker));
}

BENCHMARK(PerCore_Stateful)->DenseRange(1, 4)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(Shared_Stateful)->DenseRange(1, 4)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
