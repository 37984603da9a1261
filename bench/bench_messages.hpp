#pragma once
// The benchmark message (bench/schema/bench_msg.fbs) in the two forms the Apex Core report compares
// (§5):
//
//   FlatBuffers   built once into wire bytes by a reused FlatBufferBuilder; read in place.
//   heap_msg      a heap-allocated struct graph (the struct, and its payload in a vector): built
//                 with new + memcpy; a receiver gets it from the wire by unpacking into a new one.
//
// Both carry the same fields and payload, and read_fields() touches the same things in both, so
// the benchmarks built on them differ only in the representation.
#include <bench_msg_generated.h>

#include <flatbuffers/flatbuffers.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

namespace strix_bench {

namespace fb = strix::bench;

/// The scalar fields of one message.
struct msg_fields {
    std::uint64_t session_id = 0;
    std::uint64_t seq = 0;
    std::uint64_t timestamp_ns = 0;
    std::uint16_t kind = 0;
};

/// A payload of n bytes that differ from each other (so a copy that drops or shifts bytes shows).
inline std::vector<std::uint8_t> make_payload(std::size_t n) {
    std::vector<std::uint8_t> p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(i * 131 + 17);
    return p;
}

/// Clears fbb and builds one bench_msg into it; returns the finished bytes (valid until fbb
/// changes). The builder keeps its memory between calls, as a shard's reused builder does.
inline std::span<const std::byte> build_fb(flatbuffers::FlatBufferBuilder& fbb, const msg_fields& f,
                                           std::span<const std::uint8_t> payload) {
    fbb.Clear();
    const auto bytes = fbb.CreateVector(payload.data(), payload.size());
    const auto msg = fb::Createbench_msg(fbb, f.session_id, f.seq, f.timestamp_ns, f.kind, bytes);
    fbb.Finish(msg);
    return {reinterpret_cast<const std::byte*>(fbb.GetBufferPointer()), fbb.GetSize()};
}

/// The heap form: the struct and its payload are two allocations.
struct heap_msg {
    msg_fields fields;
    std::vector<std::uint8_t> payload;
};

/// What a reader of either form looks at: every scalar, the payload's size and its first and
/// last byte (not every byte: Apex Core's reads are constant-time in the payload size). The sum
/// is checked against the sender's, so a read that sees wrong data fails the benchmark.
inline std::uint64_t read_fields(const fb::bench_msg& m) noexcept {
    const auto* p = m.payload();
    const std::uint64_t n = p ? p->size() : 0;
    std::uint64_t s = m.session_id() + m.seq() + m.timestamp_ns() + m.kind() + n;
    if (n) s += p->Get(0) + p->Get(static_cast<flatbuffers::uoffset_t>(n - 1));
    return s;
}
inline std::uint64_t read_fields(const heap_msg& m) noexcept {
    const std::uint64_t n = m.payload.size();
    std::uint64_t s = m.fields.session_id + m.fields.seq + m.fields.timestamp_ns + m.fields.kind + n;
    if (n) s += m.payload.front() + m.payload.back();
    return s;
}
inline std::uint64_t expected_sum(const msg_fields& f, std::span<const std::uint8_t> payload) noexcept {
    std::uint64_t s = f.session_id + f.seq + f.timestamp_ns + f.kind + payload.size();
    if (!payload.empty()) s += payload.front() + payload.back();
    return s;
}

// The heap form on the wire: the fields little-endian and packed, then a 32-bit payload length
// and the payload (x86 and the other targets strix builds for are little-endian).
//
//   0        8        16       24   26     30
//   | sess   | seq    | ts     |kind| len  | payload ...
inline constexpr std::size_t packed_header = 30;

/// Appends m's packed form to out.
inline void pack(const heap_msg& m, std::vector<std::byte>& out) {
    const std::size_t at = out.size();
    out.resize(at + packed_header + m.payload.size());
    std::byte* p = out.data() + at;
    const auto len = static_cast<std::uint32_t>(m.payload.size());
    std::memcpy(p, &m.fields.session_id, 8);
    std::memcpy(p + 8, &m.fields.seq, 8);
    std::memcpy(p + 16, &m.fields.timestamp_ns, 8);
    std::memcpy(p + 24, &m.fields.kind, 2);
    std::memcpy(p + 26, &len, 4);
    std::memcpy(p + packed_header, m.payload.data(), m.payload.size());
}

/// Deserialises a packed message into a new heap_msg (new + memcpy), or nullptr when the bytes
/// are too short for the length they announce.
inline std::unique_ptr<heap_msg> unpack(std::span<const std::byte> in) {
    if (in.size() < packed_header) return nullptr;
    std::uint32_t len = 0;
    std::memcpy(&len, in.data() + 26, 4);
    if (in.size() - packed_header < len) return nullptr;
    auto m = std::make_unique<heap_msg>();
    std::memcpy(&m->fields.session_id, in.data(), 8);
    std::memcpy(&m->fields.seq, in.data() + 8, 8);
    std::memcpy(&m->fields.timestamp_ns, in.data() + 16, 8);
    std::memcpy(&m->fields.kind, in.data() + 24, 2);
    const auto* body = reinterpret_cast<const std::uint8_t*>(in.data() + packed_header);
    m->payload.assign(body, body + len);
    return m;
}

/// Converts a verified FlatBuffers message into a new heap_msg (what a receiver that wants its
/// own objects does with every message: new + memcpy of the payload).
inline std::unique_ptr<heap_msg> to_heap(const fb::bench_msg& in) {
    auto m = std::make_unique<heap_msg>();
    m->fields = {in.session_id(), in.seq(), in.timestamp_ns(), in.kind()};
    if (const auto* p = in.payload()) m->payload.assign(p->begin(), p->end());
    return m;
}

}  // namespace strix_bench
