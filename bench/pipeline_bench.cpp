// The Apex Core report's Frame Pipeline (§10): a client message from the bytes a read left in the
// receive buffer to its handler, without the socket. Per frame (time per iteration = per frame):
//
//   FramePipeline/N        strix's path, the steps a session and the chat server take:
//     1. bytes in the ring   a batch of frames (about 16 KiB: one read's worth) is written into
//                            a strix::ring_buffer whenever it is empty; the copy stands in for
//                            the read and is shared out over the batch's frames
//     2. header parse + cut  strix_header_framer().cut() on the ring's readable span: the
//                            session's step, decode_frame's checks (length, flags, CRC field)
//     3. frame in place      the frame is the first `size` bytes of the span, not copied
//     4. FlatBuffers verify  flatbuffers::Verifier on the body; FlatBuffers needs 8-aligned
//                            scalars and a 12-byte header puts every other body at 4 mod 8, so
//                            such a body is first copied to an aligned scratch buffer, as the
//                            chat server's body_as() does (counted: misaligned_bodies)
//     5. dispatch            message_dispatcher::find(header type) among 16 registered types
//     6. handler             counts the message, checks its kind, its sequence number, and the
//                            payload's size and first byte
//   FramePipeline_Naive/N  the same input and the same checks the way Apex Core's naive side
//                            works: each frame's body copied into a new vector (new + memcpy),
//                            verified, converted to a new heap_msg (new + memcpy of the
//                            payload), dispatched through std::unordered_map<type,
//                            std::function>, handled with the same checks.
//
// N is the payload size; bytes processed count whole frames. The four message types the frames
// cycle through each have a handler that counts what it got; the benchmark fails if any check
// fails or the counts do not add up to the frames processed. With STRIX_BENCH_FAULT=pipeline one
// type is routed to another's handler, which the counts must catch (fault_injection.hpp).
#include "bench_messages.hpp"
#include "fault_injection.hpp"
#include "message_dispatcher.hpp"

#include <strix/codec/frame_codec.hpp>
#include <strix/core/ring_buffer.hpp>
#include <strix/net/framer.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <functional>
#include <unordered_map>
#include <vector>

namespace {

using namespace strix_bench;

constexpr std::size_t read_bytes = 16 * 1024;  // one read's worth of frames
constexpr std::array<std::uint16_t, 4> handled_types{21, 22, 23, 24};
constexpr std::uint16_t other_types_from = 100;  // 12 more registered types nobody sends
constexpr std::size_t other_types = 12;

struct pipeline_input {
    std::vector<std::byte> batch;  // frames back to back
    std::size_t frames = 0;
    std::size_t frame_size = 0;    // all frames of a batch have the same size
    std::vector<std::uint8_t> payload;
};

// Frame i of a batch: type handled_types[i % 4], kind == type, seq == i.
pipeline_input make_input(std::size_t payload_size) {
    pipeline_input in;
    in.payload = make_payload(payload_size);
    flatbuffers::FlatBufferBuilder fbb(payload_size + 256);
    for (std::size_t i = 0;; ++i) {
        const std::uint16_t type = handled_types[i % handled_types.size()];
        const auto body = build_fb(fbb, {0x5e55, i, 1'700'000'000'000'000'000ull + i, type}, in.payload);
        const std::size_t size = strix::frame_header_size + body.size();
        if (i > 0 && in.batch.size() + size > read_bytes) break;
        const std::size_t at = in.batch.size();
        in.batch.resize(at + size);
        strix::encode_frame(std::span<std::byte>(in.batch.data() + at, size), type, body, false);
        in.frame_size = size;
        ++in.frames;
    }
    return in;
}

// What every handler checks and counts; shared by the handlers of one run.
struct pipeline_tally {
    std::uint64_t frames = 0;     // handled so far, over all refills
    std::uint64_t bad = 0;        // messages that failed a check
    std::size_t per_batch = 0;    // frames in one batch: seq restarts at 0 after each
    std::size_t payload_size = 0;
    std::uint8_t first_byte = 0;

    void check(std::uint16_t type, std::uint16_t kind, std::uint64_t seq, std::size_t size, std::uint8_t first) {
        const std::uint64_t want_seq = frames % per_batch;
        bad += (kind != type) | (seq != want_seq) | (size != payload_size) | (first != first_byte) |
               (type != handled_types[want_seq % handled_types.size()]);
        ++frames;
    }
};

class counting_handler final : public message_handler {
public:
    explicit counting_handler(pipeline_tally& t) : tally_(t) {}
    void on_message(std::uint16_t type, const fb::bench_msg& m) override {
        const auto* p = m.payload();
        tally_.check(type, m.kind(), m.seq(), p ? p->size() : 0, p && p->size() ? p->Get(0) : 0);
        ++count_;
    }
    std::uint64_t count() const noexcept { return count_; }

private:
    pipeline_tally& tally_;
    std::uint64_t count_ = 0;
};

class ignoring_handler final : public message_handler {
public:
    explicit ignoring_handler(pipeline_tally& t) : tally_(t) {}
    void on_message(std::uint16_t, const fb::bench_msg&) override { ++tally_.bad; }  // never sent

private:
    pipeline_tally& tally_;
};

// The counts must add up: every frame handled once, the four types evenly (the batch cycles
// through them), no failed check.
bool counts_add_up(const pipeline_tally& t, const std::array<std::uint64_t, 4>& per_type, std::uint64_t frames,
                   std::size_t per_batch) {
    if (t.bad != 0 || t.frames != frames) return false;
    std::uint64_t sum = 0;
    for (std::size_t k = 0; k < per_type.size(); ++k) {
        // Frames 0..frames-1 in batches of per_batch, frame i of a batch has type k = i % 4.
        const std::uint64_t full = frames / per_batch;
        const std::uint64_t rest = frames % per_batch;
        const auto of_batch = [&](std::uint64_t len) { return len > k ? (len - k + 3) / 4 : 0; };
        if (per_type[k] != full * of_batch(per_batch) + of_batch(rest)) return false;
        sum += per_type[k];
    }
    return sum == frames;
}

// FlatBuffers reads 64-bit scalars in place and the verifier insists on their alignment; a body
// at 4 mod 8 is copied to `scratch` first (chat's body_as does the same). scratch is a std::byte
// vector: operator new aligns it for any scalar, and bytes may hold objects of any type (memcpy
// into a std::uint64_t vector and reading 32-bit offsets from it would break strict aliasing).
const fb::bench_msg* verified_body(std::span<const std::byte> frame, std::vector<std::byte>& scratch,
                                   std::uint64_t& copies) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(frame.data() + strix::frame_header_size);
    const std::size_t n = frame.size() - strix::frame_header_size;
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(std::uint64_t) != 0) {
        if (scratch.size() < n) scratch.resize(n);
        std::memcpy(scratch.data(), p, n);
        p = reinterpret_cast<const std::uint8_t*>(scratch.data());
        ++copies;
    }
    flatbuffers::Verifier v(p, n);
    if (!fb::Verifybench_msgBuffer(v)) return nullptr;
    return fb::Getbench_msg(p);
}

void FramePipeline(benchmark::State& state) {
    const pipeline_input in = make_input(static_cast<std::size_t>(state.range(0)));
    pipeline_tally tally{0, 0, in.frames, in.payload.size(), in.payload[0]};
    std::vector<std::unique_ptr<counting_handler>> handlers;
    std::vector<std::unique_ptr<ignoring_handler>> others;
    message_dispatcher dispatch;
    for (const std::uint16_t t : handled_types) {
        handlers.push_back(std::make_unique<counting_handler>(tally));
        dispatch.add(t, *handlers.back());
    }
    for (std::size_t k = 0; k < other_types; ++k) {
        others.push_back(std::make_unique<ignoring_handler>(tally));
        dispatch.add(static_cast<std::uint16_t>(other_types_from + k), *others.back());
    }
    if (fault_injected("pipeline")) dispatch.add(handled_types[2], *handlers[1]);  // misrouted

    strix::ring_buffer ring(64 * 1024);
    const strix::framer& framing = strix::strix_header_framer();
    constexpr std::size_t max_frame = 64 * 1024;
    std::vector<std::byte> scratch(in.frame_size);
    std::uint64_t copies = 0;
    for (auto _ : state) {
        if (ring.empty() && ring.write(in.batch) != in.batch.size()) {
            state.SkipWithError("the batch does not fit the ring");
            break;
        }
        const auto bytes = ring.read_span();
        const strix::frame_cut cut = framing.cut(bytes, max_frame);
        if (cut.error || cut.size == 0 || cut.size > bytes.size()) {
            state.SkipWithError("the framer did not cut a whole frame");
            break;
        }
        const auto frame = bytes.first(cut.size);
        const std::uint16_t type = strix::parse_header(frame.data()).type;
        const fb::bench_msg* msg = verified_body(frame, scratch, copies);
        message_handler* h = msg ? dispatch.find(type) : nullptr;
        if (!h) {
            state.SkipWithError(msg ? "no handler for the frame's type" : "the body failed verification");
            break;
        }
        h->on_message(type, *msg);
        ring.consume(cut.size);
    }
    std::array<std::uint64_t, 4> per_type{};
    for (std::size_t k = 0; k < handlers.size(); ++k) per_type[k] = handlers[k]->count();
    if (!state.error_occurred() &&
        !counts_add_up(tally, per_type, static_cast<std::uint64_t>(state.iterations()), in.frames))
        state.SkipWithError("handlers' counts do not match the frames processed");
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(in.frame_size));
    state.counters["misaligned_bodies"] =
        benchmark::Counter(static_cast<double>(copies), benchmark::Counter::kAvgIterations);
}
BENCHMARK(FramePipeline)->Arg(64)->Arg(512)->Arg(4096);

void FramePipeline_Naive(benchmark::State& state) {
    const pipeline_input in = make_input(static_cast<std::size_t>(state.range(0)));
    pipeline_tally tally{0, 0, in.frames, in.payload.size(), in.payload[0]};
    std::array<std::uint64_t, 4> per_type{};
    std::unordered_map<std::uint16_t, std::function<void(std::uint16_t, const heap_msg&)>> dispatch;
    for (std::size_t k = 0; k < handled_types.size(); ++k) {
        dispatch.emplace(handled_types[k], [&tally, &per_type, k](std::uint16_t type, const heap_msg& m) {
            tally.check(type, m.fields.kind, m.fields.seq, m.payload.size(), m.payload.empty() ? 0 : m.payload[0]);
            ++per_type[k];
        });
    }
    for (std::size_t k = 0; k < other_types; ++k)
        dispatch.emplace(static_cast<std::uint16_t>(other_types_from + k),
                         [&tally](std::uint16_t, const heap_msg&) { ++tally.bad; });

    // The naive receive buffer: a vector the reads append to, consumed from an index.
    std::vector<std::byte> buffer;
    std::size_t at = 0;
    const strix::codec_limits limits{};
    for (auto _ : state) {
        if (at == buffer.size()) {
            buffer.assign(in.batch.begin(), in.batch.end());
            at = 0;
        }
        const strix::decode_result r =
            strix::decode_frame(std::span<const std::byte>(buffer.data() + at, buffer.size() - at), limits);
        if (r.error != strix::frame_errc::ok) {
            state.SkipWithError("decode_frame did not find a whole frame");
            break;
        }
        std::vector<std::byte> body(r.frame.body.begin(), r.frame.body.end());  // new + memcpy
        flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(body.data()), body.size());
        if (!fb::Verifybench_msgBuffer(v)) {
            state.SkipWithError("the body failed verification");
            break;
        }
        const auto msg = to_heap(*fb::Getbench_msg(body.data()));  // new + memcpy
        const auto h = dispatch.find(r.frame.header.type);
        if (h == dispatch.end()) {
            state.SkipWithError("no handler for the frame's type");
            break;
        }
        h->second(r.frame.header.type, *msg);
        at += r.consumed;
    }
    if (!state.error_occurred() &&
        !counts_add_up(tally, per_type, static_cast<std::uint64_t>(state.iterations()), in.frames))
        state.SkipWithError("handlers' counts do not match the frames processed");
    state.SetItemsProcessed(state.iterations());
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(in.frame_size));
}
BENCHMARK(FramePipeline_Naive)->Arg(64)->Arg(512)->Arg(4096);

}  // namespace
