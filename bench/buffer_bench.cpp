// Receive-buffer cost per message: ring_buffer (preallocated, read in place) vs a naive buffer that
// allocates per message (Apex Core report, §8, "zero-copy RingBuffer vs naive new + memcpy + delete").
//
// Every variant moves one message of `size` bytes from the same source (standing in for the
// socket) to the same destination `dst` (standing in for the handler consuming the bytes), so the
// byte copies are identical and the comparison isolates buffer management:
//
//   RingBuffer_WriteRead   ring.write(src)                 copy in   (memcpy, contiguous)
//                          s = ring.read_span()            in place, no copy
//                          memcpy(dst, s)                  consumer's copy
//                          ring.consume(size)              buffer empties -> rewinds to 0
//   RingBuffer_Linearize   ring.write(src)                 copy in, split in two at the end
//                          s = ring.linearize(size)        moves `size` bytes to offset 0
//                          memcpy(dst, s)                  consumer's copy
//                          consume + commit bookkeeping    O(1), places the next message across
//                                                          the end again (see below)
//   NaiveBuffer_CopyWrite  p = new std::byte[size]         allocation per message
//                          memcpy(p, src)                  copy in
//                          memcpy(dst, p)                  consumer's copy
//                          delete[] p
//
// So WriteRead and Naive both do two copies of `size` bytes; Naive adds new/delete. Linearize is
// the ring's worst case: one extra move of `size` bytes on every message.
#include <strix/core/ring_buffer.hpp>

#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

namespace {

constexpr std::size_t ring_capacity = 64 * 1024;

std::vector<std::byte> make_message(std::size_t size) {
    std::vector<std::byte> v(size);
    for (std::size_t i = 0; i < size; ++i) v[i] = static_cast<std::byte>(i * 31 + 7);
    return v;
}

void RingBuffer_WriteRead(benchmark::State& state) {
    const auto size = static_cast<std::size_t>(state.range(0));
    const auto src = make_message(size);
    std::vector<std::byte> dst(size);
    strix::ring_buffer ring(ring_capacity);
    for (auto _ : state) {
        ring.write(src);
        const auto s = ring.read_span();
        std::memcpy(dst.data(), s.data(), s.size());
        ring.consume(s.size());
        benchmark::DoNotOptimize(dst.data());
        benchmark::ClobberMemory();
    }
    if (dst != src) state.SkipWithError("consumer received different bytes");
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(RingBuffer_WriteRead)->Arg(64)->Arg(512)->Arg(4096);

void RingBuffer_Linearize(benchmark::State& state) {
    const auto size = static_cast<std::size_t>(state.range(0));
    const auto src = make_message(size);
    std::vector<std::byte> dst(size);
    strix::ring_buffer ring(ring_capacity);
    // Every message is written at offset capacity - size/2, so half of it wraps to offset 0.
    // A 1-byte placeholder stays readable in front of it, so the buffer never drains (draining
    // would rewind to offset 0 and nothing would straddle). Steady state before each message:
    // read = capacity - size/2 - 1, write = capacity - size/2.
    const std::size_t start = ring_capacity - size / 2;
    ring.commit(start);
    ring.consume(start - 1);
    bool straddled = true;
    for (auto _ : state) {
        ring.write(src);
        ring.consume(1);  // the placeholder
        if (ring.read_span().size() >= size) straddled = false;
        const auto s = ring.linearize(size);
        std::memcpy(dst.data(), s.data(), size);
        // Now read = 0, write = size. Skip to the next start with one placeholder byte in front
        // (commit and consume only move the counters).
        ring.commit(start - size);
        ring.consume(start - 1);
        benchmark::DoNotOptimize(dst.data());
        benchmark::ClobberMemory();
    }
    if (!straddled) state.SkipWithError("a message did not straddle the end of the ring");
    if (dst != src) state.SkipWithError("consumer received different bytes");
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(RingBuffer_Linearize)->Arg(64)->Arg(512)->Arg(4096);

void NaiveBuffer_CopyWrite(benchmark::State& state) {
    const auto size = static_cast<std::size_t>(state.range(0));
    const auto src = make_message(size);
    std::vector<std::byte> dst(size);
    for (auto _ : state) {
        auto* p = new std::byte[size];
        // Escaping p keeps the compiler from eliding the new/delete pair.
        benchmark::DoNotOptimize(p);
        std::memcpy(p, src.data(), size);
        std::memcpy(dst.data(), p, size);
        delete[] p;
        benchmark::DoNotOptimize(dst.data());
        benchmark::ClobberMemory();
    }
    if (dst != src) state.SkipWithError("consumer received different bytes");
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(NaiveBuffer_CopyWrite)->Arg(64)->Arg(512)->Arg(4096);

}  // namespace
