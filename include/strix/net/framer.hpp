#pragma once
// framer: how a session cuts its byte stream into frames. The session owns the bytes (its
// receive ring) and the limits; a framer only reads a frame's header and says how long the frame
// is, so a new wire protocol is one new framer and no change to the session.
//
//   ring: [ hdr | body ........ ][ hdr | bo          (bytes received so far)
//          ^ cut(bytes) -> size   ^ cut(bytes) -> size > bytes: wait for more
//
// For every frame the session asks cut() about the unconsumed bytes at the front of the ring,
// then, independently of the framer:
//   error set             -> protocol error: counted, on_protocol_error, connection closed
//   size == 0             -> the header itself is incomplete: read more
//   size > max_frame      -> frame_too_large before anything is buffered (the ring is fixed)
//   size > bytes.size()   -> the frame is incomplete: read more
//   otherwise             -> on_frame(first `size` bytes), then the next frame
//
// A framer is stateless and shared by every session that uses it, on every shard, so cut() is
// const and must not keep per-connection state. A protocol whose framing changes over a
// connection's life (a handshake, then frames) uses one framer per phase and switches with
// session::set_framer() from its handler.

#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>
#include <type_traits>

namespace strix {

/// A framer's error: a std::error_code that costs nothing when there is none (a default
/// std::error_code calls system_category() on construction, once per frame on the hot path).
class frame_error {
public:
    constexpr frame_error() noexcept = default;
    frame_error(std::error_code ec) noexcept
        : value_(ec.value()), category_(ec ? &ec.category() : nullptr) {}  // NOLINT
    template <class E>
        requires std::is_error_code_enum_v<E>
    frame_error(E e) noexcept : frame_error(make_error_code(e)) {}  // NOLINT
    explicit operator bool() const noexcept { return category_ != nullptr; }
    operator std::error_code() const noexcept {  // NOLINT
        return category_ ? std::error_code(value_, *category_) : std::error_code();
    }
    friend bool operator==(const frame_error& a, const std::error_code& b) noexcept { return std::error_code(a) == b; }
    template <class E>
        requires std::is_error_code_enum_v<E>
    friend bool operator==(const frame_error& a, E b) noexcept {
        return std::error_code(a) == make_error_code(b);
    }

private:
    int value_ = 0;
    const std::error_category* category_ = nullptr;
};

/// What a framer found at the front of the received bytes.
struct frame_cut {
    /// The whole frame's size in bytes, header included, as its header announces it. 0 while the
    /// header is not complete. May exceed the bytes present (the session waits for the rest) and
    /// the session's max_frame (the session refuses the frame).
    std::size_t size = 0;
    /// Set when the header is malformed; the stream cannot be resynchronised.
    frame_error error;
};

class framer {
public:
    virtual ~framer() = default;

    /// Sizes the frame at the front of `bytes` (never empty; may hold a partial header, a
    /// partial frame, or several frames). `max_frame` is the session's current limit, for a
    /// framer that validates more than the length before the body arrives; the session enforces
    /// it either way. Must not read past `bytes`, allocate or throw. Any thread, concurrently.
    virtual frame_cut cut(std::span<const std::byte> bytes, std::size_t max_frame) const noexcept = 0;

    /// A short name for logs ("length-prefix").
    virtual const char* name() const noexcept = 0;
};

/// The Echo server shoot-out's framing: a 4-byte little-endian total length (the 4 bytes included),
/// then the body. A length below 4 is net_errc::frame_too_small.
const framer& length_prefix_framer() noexcept;

/// length_prefix_framer's header, inline (the session reads it directly for that framer,
/// skipping the virtual call on the echo path): the frame size announced, 0 while fewer than 4
/// bytes are there, or 1 for a length below 4 (malformed: no frame is that short).
inline std::size_t length_prefix_size(std::span<const std::byte> b) noexcept {
    if (b.size() < 4) return 0;
    const std::uint32_t n = static_cast<std::uint32_t>(b[0]) | static_cast<std::uint32_t>(b[1]) << 8 |
                            static_cast<std::uint32_t>(b[2]) << 16 | static_cast<std::uint32_t>(b[3]) << 24;
    return n < 4 ? 1 : n;
}

/// strix's 12-byte header with optional CRC32C (docs/wire_format.md, strix/codec). Header and
/// CRC failures are net_errc::frame_too_small or net_errc::bad_frame.
const framer& strix_header_framer() noexcept;

/// No framing: every read's bytes go to the handler as they arrive (at most max_frame at a time),
/// for protocols the handler parses itself. The handler must consume what it is given.
const framer& raw_framer() noexcept;

}  // namespace strix
