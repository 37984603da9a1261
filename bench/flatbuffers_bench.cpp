// Serialisation: FlatBuffers vs a heap-allocated struct graph, Apex Core report §5 ("FlatBuffers vs
// new+memcpy"). The message is bench/schema/bench_msg.fbs: three 64-bit fields, a 16-bit kind
// and a payload of N bytes (the argument). Bytes processed count the payload, as Apex Core's do.
//
//   FlatBuffers_Build/N   a reused FlatBufferBuilder: Clear, payload vector (one memcpy), the
//                         table, Finish. The result is wire bytes, ready to frame and send.
//   HeapAlloc_Build/N     new heap_msg + new payload vector (memcpy) + delete of both: the
//                         object only, not yet serialised (Apex Core's comparison; a sender would
//                         still have to encode it).
//   FlatBuffers_Read/N    GetRoot on received bytes and read_fields(): in place, no copy, no
//                         verification (Apex Core's figure: what the read itself costs).
//   FlatBuffers_VerifyRead/N  the same after flatbuffers::Verifier, which a server must run on
//                         bytes from a peer it does not trust (strix's chat server does).
//   HeapAlloc_Read/N      the receiver of the heap form: unpack the packed wire bytes into a new
//                         heap_msg (new + memcpy), read_fields(), delete.
//
// Every read is checked against the sender's sum of the same fields; a build is checked once
// after the loop by reading what it made.
#include "bench_messages.hpp"
#include "bench_opaque.hpp"

#include <benchmark/benchmark.h>

#include <thread>

namespace {

using namespace strix_bench;

// Allocation-heavy rows must not measure glibc's single-threaded shortcuts (see alloc_bench.cpp).
void become_multi_threaded() {
    std::thread([] {}).join();
}

msg_fields fields_for(std::uint64_t i) {
    return {0x5e55'1000 + i, i, 1'700'000'000'000'000'000ull + i, static_cast<std::uint16_t>(7 + (i & 3))};
}

void set_counts(benchmark::State& state) {
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * state.range(0));
}

void FlatBuffers_Build(benchmark::State& state) {
    become_multi_threaded();
    const auto payload = make_payload(static_cast<std::size_t>(state.range(0)));
    flatbuffers::FlatBufferBuilder fbb(1024);
    std::uint64_t i = 0;
    for (auto _ : state) {
        const auto bytes = build_fb(fbb, fields_for(i++), payload);
        benchmark::DoNotOptimize(bytes.data());
        benchmark::ClobberMemory();
    }
    // The last message built must read back as what was put in.
    flatbuffers::Verifier v(fbb.GetBufferPointer(), fbb.GetSize());
    if (!fb::Verifybench_msgBuffer(v) ||
        read_fields(*fb::Getbench_msg(fbb.GetBufferPointer())) != expected_sum(fields_for(i - 1), payload))
        state.SkipWithError("the built message does not read back");
    set_counts(state);
}
BENCHMARK(FlatBuffers_Build)->Arg(64)->Arg(512)->Arg(4096);

void HeapAlloc_Build(benchmark::State& state) {
    become_multi_threaded();
    const auto payload = make_payload(static_cast<std::size_t>(state.range(0)));
    std::uint64_t i = 0;
    std::uint64_t last_sum = 0;
    for (auto _ : state) {
        auto m = std::make_unique<heap_msg>();
        m->fields = fields_for(i++);
        m->payload.assign(payload.begin(), payload.end());
        benchmark::DoNotOptimize(m.get());
        benchmark::ClobberMemory();
        if (i == static_cast<std::uint64_t>(state.max_iterations)) last_sum = read_fields(*m);
    }
    if (state.iterations() > 0 && last_sum != expected_sum(fields_for(i - 1), payload))
        state.SkipWithError("the built message does not read back");
    set_counts(state);
}
BENCHMARK(HeapAlloc_Build)->Arg(64)->Arg(512)->Arg(4096);

// The received message as wire bytes in a buffer of its own. A std::byte vector: its storage
// comes from operator new, aligned for any scalar as FlatBuffers needs, and bytes may hold any
// object (a std::vector<std::uint64_t> filled by memcpy and then read as FlatBuffers' 32-bit
// offsets breaks strict aliasing, and GCC -O3 miscompiled exactly that here).
std::vector<std::byte> received_fb(const msg_fields& f, std::span<const std::uint8_t> payload) {
    flatbuffers::FlatBufferBuilder fbb(1024);
    const auto bytes = build_fb(fbb, f, payload);
    return {bytes.begin(), bytes.end()};
}

template <bool Verify>
void flatbuffers_read(benchmark::State& state) {
    const auto payload = make_payload(static_cast<std::size_t>(state.range(0)));
    const msg_fields f = fields_for(42);
    const auto buf = received_fb(f, payload);
    const std::size_t size = buf.size();
    const std::uint64_t want = expected_sum(f, payload);
    for (auto _ : state) {
        // The pointer is opaque to the optimiser, so the reads cannot be hoisted out of the loop.
        const auto* p = reinterpret_cast<const std::uint8_t*>(buf.data());
        opaque(p);
        if constexpr (Verify) {
            flatbuffers::Verifier v(p, size);
            if (!fb::Verifybench_msgBuffer(v)) {
                state.SkipWithError("verifier refused a valid message");
                break;
            }
        }
        const std::uint64_t sum = read_fields(*fb::Getbench_msg(p));
        if (sum != want) {
            state.SkipWithError("read different fields than were sent");
            break;
        }
    }
    set_counts(state);
}

void FlatBuffers_Read(benchmark::State& state) { flatbuffers_read<false>(state); }
BENCHMARK(FlatBuffers_Read)->Arg(64)->Arg(512)->Arg(4096);

void FlatBuffers_VerifyRead(benchmark::State& state) { flatbuffers_read<true>(state); }
BENCHMARK(FlatBuffers_VerifyRead)->Arg(64)->Arg(512)->Arg(4096);

void HeapAlloc_Read(benchmark::State& state) {
    become_multi_threaded();
    const auto payload = make_payload(static_cast<std::size_t>(state.range(0)));
    const msg_fields f = fields_for(42);
    std::vector<std::byte> wire;
    pack(heap_msg{f, payload}, wire);
    const std::uint64_t want = expected_sum(f, payload);
    for (auto _ : state) {
        const std::byte* p = wire.data();
        opaque(p);
        const auto m = unpack({p, wire.size()});
        if (!m || read_fields(*m) != want) {
            state.SkipWithError("read different fields than were sent");
            break;
        }
        benchmark::DoNotOptimize(m.get());
    }
    set_counts(state);
}
BENCHMARK(HeapAlloc_Read)->Arg(64)->Arg(512)->Arg(4096);

}  // namespace
