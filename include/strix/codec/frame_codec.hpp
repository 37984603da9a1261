#pragma once
// Frame codec: turns bodies into length-prefixed frames and byte streams back into frames.
// The byte layout, the checks and their order are specified in docs/wire_format.md.
//
// Two decoding paths share one set of checks:
//   decode_frame()  stateless, zero-copy, never allocates: looks at the front of a buffer the
//                   caller owns (the server runs it directly on a connection's ring buffer).
//   frame_decoder   stateful: accepts a stream cut at arbitrary points and keeps the incomplete
//                   tail in its own buffer. The reference path for tests and clients.
//
// Every header is validated as soon as its 12 bytes are present, before the body is waited for,
// so an oversize frame is refused from its header alone: no memory is committed to it.

#include <strix/codec/frame_errc.hpp>
#include <strix/codec/frame_header.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace strix {

struct codec_limits {
    /// Largest accepted frame, header included. A header declaring more fails length_too_large.
    std::uint32_t max_frame = 64 * 1024;
};

/// A decoded frame. `body` points into the buffer that was decoded; it is valid as long as
/// those bytes are (for frame_decoder: until on_frame returns).
struct frame_view {
    frame_header header;
    std::span<const std::byte> body;
};

struct decode_result {
    /// ok: `frame` is a whole valid frame. need_more: feed more bytes and call again. Any other
    /// value: the stream is corrupt or hostile and cannot be resynchronised; close it.
    frame_errc error = frame_errc::need_more;
    /// Bytes the frame occupies at the front of the input: header.length when ok, else 0.
    std::size_t consumed = 0;
    /// The frame when ok. On any result reached with 12 bytes present, frame.header holds the
    /// parsed header (useful for diagnostics) and frame.body is empty unless ok.
    frame_view frame{};
    /// Total bytes needed at the front of the input before a frame can be decoded: 12 while fewer
    /// than 12 are present, header.length once the header passed its checks (need_more, ok,
    /// crc_mismatch). 0 after a header check failed, since no amount of input can help.
    std::size_t needed = 0;
};

/// Decodes the frame at the front of `input`. Checks, in this order: fewer than 12 bytes ->
/// need_more; length < 12 -> length_too_small; length > limits.max_frame -> length_too_large;
/// flags outside frame_known_flags -> unknown_flags; crc != 0 without frame_flag_crc ->
/// crc_without_flag; fewer than length bytes -> need_more; CRC32C(body) != crc when flagged ->
/// crc_mismatch. Never allocates, never reads past input. Pure; any thread.
decode_result decode_frame(std::span<const std::byte> input, const codec_limits& limits) noexcept;

/// Writes one frame (header + body) at the front of `out` and returns its size, 12 + body.size().
/// Returns 0 and writes nothing when `out` is too small or the frame would not fit the 32-bit
/// length field. Pure; any thread.
std::size_t encode_frame(std::span<std::byte> out, std::uint16_t type, std::span<const std::byte> body,
                         bool with_crc) noexcept;

/// Streaming decoder: feed it a byte stream in pieces of any size (one byte at a time works) and
/// it calls back once per complete frame, in stream order.
///
/// Memory: frames lying wholly inside one fed piece are handed out in place, without a copy. Only
/// a frame cut by the end of a piece is copied into the decoder's buffer, which never reserves
/// more than 12 bytes before the header is validated, nor more than the header's length after,
/// and that length was already checked against max_frame.
///
/// Errors are sticky: after the first one, feed() returns it again without looking at the input.
/// Not thread-safe: one owner thread (a client or a test) uses it.
class frame_decoder {
public:
    /// A decoder with no buffered bytes that accepts frames up to limits.max_frame. No allocation.
    explicit frame_decoder(codec_limits limits = {}) noexcept : limits_(limits) {}

    /// Consumes all of `bytes`, calling on_frame(const frame_view&) for each frame it completes.
    /// The view is valid only during the call; on_frame must not call feed() on this decoder.
    /// Returns ok when the input ended on a frame boundary, need_more when a partial frame is
    /// buffered, or the first error (frames before it in the stream were still delivered).
    /// An exception thrown by on_frame propagates; the decoder must then be reset() before reuse.
    /// Owner thread only.
    template <class F>
    frame_errc feed(std::span<const std::byte> bytes, F&& on_frame);

    /// The sticky error, or ok while the stream is healthy. Owner thread only.
    frame_errc error() const noexcept { return error_; }

    /// Bytes of an incomplete frame held back for the next feed(). Owner thread only.
    std::size_t buffered() const noexcept { return pending_.size(); }

    /// Bytes the internal buffer has reserved (for tests and memory accounting): at most
    /// max(12, largest header length seen), whatever the input. Owner thread only.
    std::size_t buffer_capacity() const noexcept { return pending_.capacity(); }

    /// Forgets any partial frame and any error, as if newly constructed (the buffer's capacity is
    /// kept). Owner thread only.
    void reset() noexcept;

    /// The limits the decoder checks against. Owner thread only.
    const codec_limits& limits() const noexcept { return limits_; }

private:
    // Moves bytes from the front of `bytes` into pending_ until pending_ holds a whole frame
    // (returns ok), `bytes` runs dry (need_more), or the header fails a check (that error).
    frame_errc fill_pending(std::span<const std::byte>& bytes);
    // Copies an incomplete tail into pending_, reserving exactly `needed` bytes.
    void stash(std::span<const std::byte> tail, std::size_t needed);
    frame_errc fail(frame_errc e) noexcept;

    codec_limits limits_;
    std::vector<std::byte> pending_;
    frame_errc error_ = frame_errc::ok;
};

template <class F>
frame_errc frame_decoder::feed(std::span<const std::byte> bytes, F&& on_frame) {
    if (error_ != frame_errc::ok) return error_;

    if (!pending_.empty()) {
        const frame_errc filled = fill_pending(bytes);
        if (filled != frame_errc::ok) return filled;
        const decode_result r = decode_frame(pending_, limits_);
        if (r.error != frame_errc::ok) return fail(r.error);
        const frame_view& view = r.frame;
        on_frame(view);
        pending_.clear();
    }

    // The common case: whole frames straight out of the caller's bytes, no copy.
    for (;;) {
        const decode_result r = decode_frame(bytes, limits_);
        if (r.error == frame_errc::ok) {
            const frame_view& view = r.frame;
            on_frame(view);
            bytes = bytes.subspan(r.consumed);
        } else if (r.error == frame_errc::need_more) {
            if (bytes.empty()) return frame_errc::ok;
            stash(bytes, r.needed);
            return frame_errc::need_more;
        } else {
            return fail(r.error);
        }
    }
}

}  // namespace strix
