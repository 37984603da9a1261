#pragma once
// Chat messages on the wire: a strix frame (docs/wire_format.md) whose header type is a
// proto::msg_type and whose body is one FlatBuffer. Shared by the server, client and load tool.

#include <strix/codec/frame_codec.hpp>
#include <strix/core/shared_buffer.hpp>
#include <strix/proto/chat_generated.h>

#include <flatbuffers/flatbuffers.h>

#include <cstring>
#include <span>
#include <vector>

namespace strix::chat {

/// Wraps the finished builder's bytes in a frame: one allocation, immutable once returned, so it
/// can be handed to many sessions (and shards) without copying. Any thread.
inline shared_buffer_ptr finish_frame(flatbuffers::FlatBufferBuilder& fbb, proto::msg_type type) {
    auto body = std::span<const std::byte>(reinterpret_cast<const std::byte*>(fbb.GetBufferPointer()), fbb.GetSize());
    auto buf = shared_buffer::create(frame_header_size + body.size());
    encode_header(buf->data(), make_header(static_cast<std::uint16_t>(type), body, false));
    std::memcpy(buf->data() + frame_header_size, body.data(), body.size());
    return buf;
}

/// The message type in a frame's header (the frame was validated by the session).
inline proto::msg_type type_of(std::span<const std::byte> frame) noexcept {
    return static_cast<proto::msg_type>(parse_header(frame.data()).type);
}

/// The frame's body verified as table T, or nullptr when it is not a well-formed T.
/// FlatBuffers reads scalars in place and needs them aligned, while a frame sits wherever the
/// receive ring put it; a misaligned body is first copied to a per-thread aligned scratch buffer.
/// The result is valid until the frame is released or the next body_as call on this thread.
template <class T>
const T* body_as(std::span<const std::byte> frame) {
    if (frame.size() < frame_header_size) return nullptr;
    auto* p = reinterpret_cast<const std::uint8_t*>(frame.data() + frame_header_size);
    auto n = frame.size() - frame_header_size;
    if (n < sizeof(flatbuffers::uoffset_t)) return nullptr;
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(std::uint64_t) != 0) {
        thread_local std::vector<std::uint64_t> scratch;
        scratch.resize((n + sizeof(std::uint64_t) - 1) / sizeof(std::uint64_t));
        std::memcpy(scratch.data(), p, n);
        p = reinterpret_cast<const std::uint8_t*>(scratch.data());
    }
    flatbuffers::Verifier v(p, n);
    if (!v.VerifyBuffer<T>(nullptr)) return nullptr;
    return flatbuffers::GetRoot<T>(p);
}

}  // namespace strix::chat
