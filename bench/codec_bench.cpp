// Frame codec and CRC32C costs on the message path.
//
// FrameCodec_Encode/N  encode one frame with CRC of an N-byte body into a preallocated buffer
//                      (header + CRC32C of the body + copy of the body).
// FrameCodec_Decode/N  decode one pre-encoded N-byte-body frame with CRC (header checks + CRC32C
//                      verification; the body is handed out in place, not copied).
// Crc32c_Hardware/4096 vs Crc32c_Software/4096: the same 4096 bytes through the SSE4.2 path and
//                      the slicing-by-8 table path.
// Bytes processed count the whole frame (header + body) for the codec, the input for the CRC.
#include <strix/codec/crc32c.hpp>
#include <strix/codec/frame_codec.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

namespace {

std::vector<std::byte> random_body(std::size_t n) {
    std::mt19937_64 rng(n);
    std::vector<std::byte> b(n);
    for (auto& x : b) x = static_cast<std::byte>(rng() & 0xFFu);
    return b;
}

void FrameCodec_Encode(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const std::vector<std::byte> body = random_body(n);
    std::vector<std::byte> out(strix::frame_header_size + n);
    for (auto _ : state) {
        const std::size_t written = strix::encode_frame(out, 0x0102, body, true);
        benchmark::DoNotOptimize(written);
        benchmark::ClobberMemory();  // the frame must really be stored
    }
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(out.size()));
}
BENCHMARK(FrameCodec_Encode)->Arg(64)->Arg(512)->Arg(4096)->Arg(16384);

void FrameCodec_Decode(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    const std::vector<std::byte> body = random_body(n);
    std::vector<std::byte> frame(strix::frame_header_size + n);
    if (strix::encode_frame(frame, 0x0102, body, true) != frame.size()) {
        state.SkipWithError("encode failed");
        return;
    }
    const strix::codec_limits limits{};
    for (auto _ : state) {
        // The input pointer is opaque to the optimiser, so the CRC cannot be hoisted.
        const std::byte* p = frame.data();
        benchmark::DoNotOptimize(p);
        const strix::decode_result r = strix::decode_frame(std::span<const std::byte>(p, frame.size()), limits);
        if (r.error != strix::frame_errc::ok) {
            state.SkipWithError("decode failed");
            break;
        }
        benchmark::DoNotOptimize(r.frame.body.data());
        benchmark::DoNotOptimize(r.consumed);
    }
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(frame.size()));
}
BENCHMARK(FrameCodec_Decode)->Arg(64)->Arg(512)->Arg(4096)->Arg(16384);

template <std::uint32_t (*Crc)(std::span<const std::byte>, std::uint32_t) noexcept>
void run_crc(benchmark::State& state) {
    const std::vector<std::byte> data = random_body(static_cast<std::size_t>(state.range(0)));
    for (auto _ : state) {
        const std::byte* p = data.data();
        benchmark::DoNotOptimize(p);
        std::uint32_t crc = Crc(std::span<const std::byte>(p, data.size()), 0);
        benchmark::DoNotOptimize(crc);
    }
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(data.size()));
}

void Crc32c_Hardware(benchmark::State& state) {
    if (!strix::crc32c_hw_available()) {
        state.SkipWithError("CPU without SSE4.2");
        return;
    }
    run_crc<&strix::crc32c_hw>(state);
}
BENCHMARK(Crc32c_Hardware)->Arg(4096);

void Crc32c_Software(benchmark::State& state) { run_crc<&strix::crc32c_sw>(state); }
BENCHMARK(Crc32c_Software)->Arg(4096);

}  // namespace
