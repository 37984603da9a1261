// Fuzz target: strix's frame codec (include/strix/codec/frame_codec.hpp, docs/wire_format.md).
//
// Input: [mode u8][max_frame u16][cut seed u32][stream...]
//   mode bit 0   rewrite the CRC of every flagged frame to the body's CRC32C first, so whole
//                CRC-carrying frames get decoded too (a mutator does not compute checksums)
//   mode bit 1-2 how the stream is cut for frame_decoder::feed: random pieces up to 64 bytes,
//                up to 4 KiB, single bytes, or random pieces with empty feeds in between
//   max_frame    codec_limits::max_frame (0 = the default, 64 KiB)
//
// Checked on every input:
//   - decode_frame: consumed <= input, consumed == header.length only when ok, body inside the
//     input right after the header; `needed` as documented (12 while the header is short,
//     header.length once it passed, 0 after a header error); a header is judged from its 12
//     bytes alone (every prefix of a frame gives need_more or the same header error); no read
//     past the input (prefixes are exact heap copies).
//   - frame_decoder::feed: the whole stream at once and the stream cut at random points deliver
//     the same frames (headers and bodies) as a decode_frame walk, in order, and end in the same
//     state (ok, need_more with the tail buffered, or the same sticky error); frames that lie
//     inside one piece are handed out in place; the buffer never reserves more than
//     max(12, the largest header length that passed its checks); reset() starts over cleanly.
//   - encode_frame: a body encoded (with or without CRC) decodes back to itself.
#include "fuzz_support.hpp"

#include <strix/codec/crc32c.hpp>
#include <strix/codec/frame_codec.hpp>

#include <vector>

using namespace strix;
using strix::fuzz::bytes;
using strix::fuzz::exact_copy;

namespace {

struct ref_frame {
    std::size_t offset = 0;  // where the frame starts in the stream
    frame_header header;
};

struct reference {
    std::vector<ref_frame> frames;
    frame_errc end = frame_errc::ok;  // ok (ended on a boundary), need_more, or the error
    std::size_t tail = 0;             // bytes after the last whole frame (need_more)
    std::size_t max_len = frame_header_size;  // largest length that passed the header checks
};

bool header_error(frame_errc e) {
    return e == frame_errc::length_too_small || e == frame_errc::length_too_large || e == frame_errc::unknown_flags ||
           e == frame_errc::crc_without_flag;
}

// The documented contract of one decode_frame result on `in`.
void check_result(bytes in, const decode_result& r, const codec_limits& lim) {
    STRIX_FUZZ_CHECK(r.consumed <= in.size());
    if (in.size() < frame_header_size) {
        STRIX_FUZZ_CHECK(r.error == frame_errc::need_more);
        STRIX_FUZZ_CHECK(r.needed == frame_header_size);
        STRIX_FUZZ_CHECK(r.consumed == 0);
        STRIX_FUZZ_CHECK(r.frame.body.empty());
        return;
    }
    const frame_header h = parse_header(in.data());
    STRIX_FUZZ_CHECK(r.frame.header == h);
    switch (r.error) {
        case frame_errc::ok:
            STRIX_FUZZ_CHECK(h.length >= frame_header_size && h.length <= lim.max_frame);
            STRIX_FUZZ_CHECK(r.consumed == h.length && r.needed == h.length);
            STRIX_FUZZ_CHECK(r.frame.body.data() == in.data() + frame_header_size);
            STRIX_FUZZ_CHECK(r.frame.body.size() == h.length - frame_header_size);
            STRIX_FUZZ_CHECK(!(h.flags & frame_flag_crc) || crc32c(r.frame.body) == h.crc);
            STRIX_FUZZ_CHECK((h.flags & frame_flag_crc) || h.crc == 0);
            break;
        case frame_errc::need_more:
            STRIX_FUZZ_CHECK(r.consumed == 0 && r.frame.body.empty());
            STRIX_FUZZ_CHECK(r.needed == h.length && r.needed > in.size() && r.needed <= lim.max_frame);
            break;
        case frame_errc::crc_mismatch:
            STRIX_FUZZ_CHECK(r.consumed == 0 && r.frame.body.empty());
            STRIX_FUZZ_CHECK(r.needed == h.length && r.needed <= in.size());
            STRIX_FUZZ_CHECK((h.flags & frame_flag_crc) != 0);
            break;
        case frame_errc::length_too_small: STRIX_FUZZ_CHECK(h.length < frame_header_size); break;
        case frame_errc::length_too_large:
            STRIX_FUZZ_CHECK(h.length >= frame_header_size && h.length > lim.max_frame);
            break;
        case frame_errc::unknown_flags: STRIX_FUZZ_CHECK((h.flags & ~frame_known_flags) != 0); break;
        case frame_errc::crc_without_flag: STRIX_FUZZ_CHECK(!(h.flags & frame_flag_crc) && h.crc != 0); break;
        default: strix::fuzz::fail("decode_frame returned an error it never reports", __FILE__, __LINE__);
    }
    if (header_error(r.error)) STRIX_FUZZ_CHECK(r.needed == 0 && r.consumed == 0 && r.frame.body.empty());
}

// A frame is judged from its header alone: every shorter prefix of `in` is need_more, or the
// same header error once the 12 header bytes are there. Prefixes are exact copies.
void check_prefixes(bytes in, const decode_result& whole, const codec_limits& lim) {
    const std::size_t stop =
        whole.error == frame_errc::ok || whole.error == frame_errc::crc_mismatch ? whole.needed : in.size();
    const std::size_t probes[] = {0,        1,       frame_header_size - 1, frame_header_size, frame_header_size + 1,
                                  stop / 2, stop - 1};
    for (std::size_t k : probes) {
        if (k >= stop || k > in.size()) continue;
        const exact_copy prefix(in.first(k));
        const decode_result r = decode_frame(prefix.view(), lim);
        check_result(prefix.view(), r, lim);
        if (k < frame_header_size || !header_error(whole.error))
            STRIX_FUZZ_CHECK(r.error == frame_errc::need_more);
        else
            STRIX_FUZZ_CHECK(r.error == whole.error);
    }
}

reference walk(bytes stream, const codec_limits& lim) {
    reference ref;
    std::size_t pos = 0;
    for (;;) {
        const bytes rest = stream.subspan(pos);
        const decode_result r = decode_frame(rest, lim);
        check_result(rest, r, lim);
        check_prefixes(rest, r, lim);
        if (r.needed > ref.max_len) ref.max_len = r.needed;  // 0 after a header error
        if (r.error == frame_errc::ok) {
            ref.frames.push_back({pos, r.frame.header});
            pos += r.consumed;
            continue;
        }
        if (r.error == frame_errc::need_more) {
            ref.end = rest.empty() ? frame_errc::ok : frame_errc::need_more;
            ref.tail = rest.size();
        } else {
            ref.end = r.error;
        }
        return ref;
    }
}

// Feeds `pieces` (consecutive spans of `stream`) and checks the frames against the reference.
void check_feed(frame_decoder& d, bytes stream, const std::vector<bytes>& pieces, const reference& ref) {
    std::size_t next = 0;  // the reference frame expected next
    frame_errc last = frame_errc::ok;
    for (bytes piece : pieces) {
        const bool errored_before = d.error() != frame_errc::ok;
        const std::size_t piece_at = static_cast<std::size_t>(piece.data() - stream.data());
        const std::size_t delivered_before = next;
        last = d.feed(piece, [&](const frame_view& f) {
            STRIX_FUZZ_CHECK(next < ref.frames.size());
            const ref_frame& want = ref.frames[next];
            STRIX_FUZZ_CHECK(f.header == want.header);
            STRIX_FUZZ_CHECK(f.body.size() == want.header.length - frame_header_size);
            const std::byte* body_at = stream.data() + want.offset + frame_header_size;
            STRIX_FUZZ_CHECK(f.body.empty() || std::memcmp(f.body.data(), body_at, f.body.size()) == 0);
            // Wholly inside this piece: handed out in place, no copy.
            if (want.offset >= piece_at && want.offset + want.header.length <= piece_at + piece.size())
                STRIX_FUZZ_CHECK(f.body.empty() || f.body.data() == body_at);
            ++next;
        });
        if (errored_before) {
            STRIX_FUZZ_CHECK(last == d.error());  // sticky, and nothing more delivered
            STRIX_FUZZ_CHECK(next == delivered_before);
        }
        STRIX_FUZZ_CHECK(d.buffer_capacity() <= ref.max_len);
        STRIX_FUZZ_CHECK(last == frame_errc::ok || last == frame_errc::need_more || last == d.error());
    }
    STRIX_FUZZ_CHECK(next == ref.frames.size());
    STRIX_FUZZ_CHECK(last == ref.end);
    if (ref.end == frame_errc::ok || ref.end == frame_errc::need_more) {
        STRIX_FUZZ_CHECK(d.error() == frame_errc::ok);
        STRIX_FUZZ_CHECK(d.buffered() == (ref.end == frame_errc::ok ? 0 : ref.tail));
    } else {
        STRIX_FUZZ_CHECK(d.error() == ref.end);
        STRIX_FUZZ_CHECK(d.buffered() == 0);
    }
}

std::vector<bytes> cut_stream(bytes stream, unsigned style, std::uint32_t seed) {
    strix::fuzz::cuts rng(seed);
    std::vector<bytes> pieces;
    std::size_t pos = 0;
    while (pos < stream.size()) {
        std::size_t n = 1;
        switch (style) {
            case 0: n = rng.next() % 65; break;
            case 1: n = rng.next() % 4097; break;
            case 2: n = 1; break;
            default: n = rng.next() % 4 == 0 ? 0 : rng.next() % 40; break;
        }
        n = std::min(n, stream.size() - pos);
        pieces.push_back(stream.subspan(pos, n));
        pos += n;
        if (pieces.size() > 100000) break;  // style 3 may cut empty pieces; the rest in one
    }
    if (pos < stream.size()) pieces.push_back(stream.subspan(pos));
    if (style == 3) pieces.push_back(stream.subspan(stream.size()));  // a trailing empty feed
    return pieces;
}

// Walks the headers and writes each flagged frame's true CRC32C (up to the first bad length).
void fix_crcs(std::vector<std::byte>& s) {
    std::size_t pos = 0;
    while (s.size() - pos >= frame_header_size) {
        frame_header h = parse_header(s.data() + pos);
        if (h.length < frame_header_size || h.length > s.size() - pos) return;
        if (h.flags & frame_flag_crc) {
            h.crc =
                crc32c(std::span<const std::byte>(s).subspan(pos + frame_header_size, h.length - frame_header_size));
            encode_header(s.data() + pos, h);
        }
        pos += h.length;
    }
}

void check_encode(bytes body, std::uint16_t type, bool with_crc) {
    std::vector<std::byte> out(frame_header_size + body.size());
    STRIX_FUZZ_CHECK(encode_frame(std::span(out).first(out.size() - 1), type, body, with_crc) == 0);
    STRIX_FUZZ_CHECK(encode_frame(out, type, body, with_crc) == out.size());
    const exact_copy frame{std::span<const std::byte>(out)};
    const codec_limits lim{static_cast<std::uint32_t>(out.size())};
    const decode_result r = decode_frame(frame.view(), lim);
    STRIX_FUZZ_CHECK(r.error == frame_errc::ok && r.consumed == out.size());
    STRIX_FUZZ_CHECK(r.frame.header.type == type);
    STRIX_FUZZ_CHECK(r.frame.header.flags == (with_crc ? frame_flag_crc : 0));
    STRIX_FUZZ_CHECK(r.frame.body.size() == body.size());
    STRIX_FUZZ_CHECK(body.empty() || std::memcmp(r.frame.body.data(), body.data(), body.size()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    strix::fuzz::reader in(strix::fuzz::as_bytes(data, size));
    const std::uint8_t mode = in.u8();
    const std::uint16_t max = in.u16();
    const std::uint32_t seed = in.u32();
    const codec_limits lim{max == 0 ? codec_limits{}.max_frame : max};

    bytes stream = in.rest();
    std::vector<std::byte> fixed;
    if (mode & 1) {
        fixed.assign(stream.begin(), stream.end());
        fix_crcs(fixed);
        stream = fixed;
    }

    const reference ref = walk(stream, lim);

    frame_decoder whole(lim);
    check_feed(whole, stream, {stream}, ref);

    frame_decoder pieces(lim);
    check_feed(pieces, stream, cut_stream(stream, (mode >> 1) & 3u, seed), ref);

    // After reset() the decoder is as new, whatever state it was left in.
    pieces.reset();
    STRIX_FUZZ_CHECK(pieces.error() == frame_errc::ok && pieces.buffered() == 0);
    check_feed(pieces, stream, {stream}, ref);

    check_encode(stream.first(std::min<std::size_t>(stream.size(), 70000)), static_cast<std::uint16_t>(seed),
                 (mode & 8) != 0);
    return 0;
}
