#include <strix/codec/crc32c.hpp>
#include <strix/codec/frame_codec.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace strix {
namespace {

// Explicit little-endian stores and loads: the wire order does not depend on the host's.
void store_le16(std::byte* p, std::uint16_t v) noexcept {
    p[0] = static_cast<std::byte>(v & 0xFFu);
    p[1] = static_cast<std::byte>(v >> 8);
}

void store_le32(std::byte* p, std::uint32_t v) noexcept {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFFu);
}

std::uint16_t load_le16(const std::byte* p) noexcept {
    return static_cast<std::uint16_t>(std::to_integer<unsigned>(p[0]) | (std::to_integer<unsigned>(p[1]) << 8));
}

std::uint32_t load_le32(const std::byte* p) noexcept {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::to_integer<std::uint32_t>(p[i]) << (8 * i);
    return v;
}

// The largest body whose frame length still fits the u32 length field.
constexpr std::size_t max_body = std::numeric_limits<std::uint32_t>::max() - frame_header_size;

}  // namespace

void encode_header(std::byte* out12, const frame_header& h) noexcept {
    store_le32(out12 + 0, h.length);
    store_le16(out12 + 4, h.type);
    store_le16(out12 + 6, h.flags);
    store_le32(out12 + 8, h.crc);
}

frame_header parse_header(const std::byte* in12) noexcept {
    frame_header h;
    h.length = load_le32(in12 + 0);
    h.type = load_le16(in12 + 4);
    h.flags = load_le16(in12 + 6);
    h.crc = load_le32(in12 + 8);
    return h;
}

frame_header make_header(std::uint16_t type, std::span<const std::byte> body, bool with_crc) noexcept {
    if (body.size() > max_body) {
        std::fputs("strix: make_header(): body too large for the 32-bit frame length\n", stderr);
        std::abort();
    }
    frame_header h;
    h.length = static_cast<std::uint32_t>(frame_header_size + body.size());
    h.type = type;
    h.flags = with_crc ? frame_flag_crc : std::uint16_t{0};
    h.crc = with_crc ? crc32c(body) : 0u;
    return h;
}

std::size_t encode_frame(std::span<std::byte> out, std::uint16_t type, std::span<const std::byte> body,
                         bool with_crc) noexcept {
    if (body.size() > max_body || out.size() < frame_header_size + body.size()) return 0;
    encode_header(out.data(), make_header(type, body, with_crc));
    if (!body.empty()) std::memcpy(out.data() + frame_header_size, body.data(), body.size());
    return frame_header_size + body.size();
}

decode_result decode_frame(std::span<const std::byte> input, const codec_limits& limits) noexcept {
    decode_result r;
    if (input.size() < frame_header_size) {
        r.error = frame_errc::need_more;
        r.needed = frame_header_size;
        return r;
    }
    const frame_header h = parse_header(input.data());
    r.frame.header = h;

    // Header checks first, so a hostile header is refused before its body is waited for.
    if (h.length < frame_header_size) {
        r.error = frame_errc::length_too_small;
        return r;
    }
    if (h.length > limits.max_frame) {
        r.error = frame_errc::length_too_large;
        return r;
    }
    if ((h.flags & ~frame_known_flags) != 0) {
        r.error = frame_errc::unknown_flags;
        return r;
    }
    if ((h.flags & frame_flag_crc) == 0 && h.crc != 0) {
        r.error = frame_errc::crc_without_flag;
        return r;
    }

    r.needed = h.length;
    if (input.size() < h.length) {
        r.error = frame_errc::need_more;
        return r;
    }
    const std::span<const std::byte> body = input.subspan(frame_header_size, h.length - frame_header_size);
    if ((h.flags & frame_flag_crc) != 0 && crc32c(body) != h.crc) {
        r.error = frame_errc::crc_mismatch;
        return r;
    }
    r.error = frame_errc::ok;
    r.consumed = h.length;
    r.frame.body = body;
    return r;
}

// ---- frame_decoder -------------------------------------------------------------------------

frame_errc frame_decoder::fill_pending(std::span<const std::byte>& bytes) {
    auto take = [&](std::size_t want) {
        const std::size_t n = std::min(want, bytes.size());
        pending_.insert(pending_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
        bytes = bytes.subspan(n);
    };

    if (pending_.size() < frame_header_size) {
        take(frame_header_size - pending_.size());
        if (pending_.size() < frame_header_size) return frame_errc::need_more;
    }
    // With the header complete, decode_frame runs the header checks and tells the full length.
    const decode_result r = decode_frame(pending_, limits_);
    if (r.error == frame_errc::ok) return frame_errc::ok;  // a header-only frame
    if (r.error != frame_errc::need_more) return fail(r.error);

    pending_.reserve(r.needed);  // validated: r.needed <= limits_.max_frame
    take(r.needed - pending_.size());
    return pending_.size() == r.needed ? frame_errc::ok : frame_errc::need_more;
}

void frame_decoder::stash(std::span<const std::byte> tail, std::size_t needed) {
    pending_.reserve(needed);  // 12 before the header is known, else its validated length
    pending_.assign(tail.begin(), tail.end());
}

frame_errc frame_decoder::fail(frame_errc e) noexcept {
    error_ = e;
    pending_.clear();
    return e;
}

void frame_decoder::reset() noexcept {
    pending_.clear();
    error_ = frame_errc::ok;
}

}  // namespace strix
