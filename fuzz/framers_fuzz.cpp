// Fuzz target: the framers a session cuts its byte stream with (include/strix/net/framer.hpp):
// length_prefix_framer, strix_header_framer, raw_framer, and strix::link's ZMTP greeting_framer
// and frame_framer (include/strix/link/zmtp.hpp).
//
// Input: [max_frame u16][stream...]   (max_frame 0 = 64 KiB)
//
// For every framer, cut() is asked about prefixes of the stream, each an exact heap copy so that
// AddressSanitizer catches a read one byte past the span (the session's receive ring ends where
// its bytes end). Checked:
//   - a framer's verdict depends only on the bytes it needs: once a prefix has an error, every
//     longer prefix has the same error; once a size is known it stays the same (raw excepted:
//     it takes what is there, up to max_frame);
//   - size 0 (header incomplete) only while the header is shorter than the framer's header,
//     an error comes with size 0, a size is at least the framer's header;
//   - strix_header_framer agrees with decode_frame on the same bytes;
//   - the session's loop over the stream (cut, refuse above max_frame, hand over, repeat)
//     always makes progress.
#include "fuzz_support.hpp"

#include <strix/codec/frame_codec.hpp>
#include <strix/link/zmtp.hpp>
#include <strix/net/framer.hpp>
#include <strix/net/net_errc.hpp>

#include <vector>

using namespace strix;
using strix::fuzz::bytes;
using strix::fuzz::exact_copy;

namespace {

enum class kind { length_prefix, strix_header, raw, zmtp_greeting, zmtp_frame };

struct probe {
    std::size_t k = 0;  // prefix length
    frame_cut cut;
};

// Bytes a framer needs before it can size the frame at the front of `b` (b non-empty).
std::size_t header_bytes(kind k, bytes b) {
    switch (k) {
        case kind::length_prefix: return 4;
        case kind::strix_header: return frame_header_size;
        case kind::raw: return 1;
        case kind::zmtp_greeting: return 1;
        case kind::zmtp_frame: return (static_cast<std::uint8_t>(b[0]) & link::zmtp::flag_long) ? 9 : 2;
    }
    return 0;
}

frame_cut cut_exact(const framer& f, bytes prefix, std::size_t max_frame) {
    const exact_copy copy(prefix);
    return f.cut(copy.view(), max_frame);
}

void check_framer(kind which, const framer& f, bytes stream, std::size_t max_frame) {
    if (stream.empty()) return;  // cut() is never asked about no bytes
    std::vector<std::size_t> ks;
    for (std::size_t k = 1; k <= std::min<std::size_t>(stream.size(), 80); ++k) ks.push_back(k);
    const frame_cut full = cut_exact(f, stream, max_frame);
    for (std::size_t extra : {full.size - 1, full.size, full.size + 1, stream.size()})
        if (extra > 80 && extra <= stream.size()) ks.push_back(extra);
    std::sort(ks.begin(), ks.end());
    ks.erase(std::unique(ks.begin(), ks.end()), ks.end());

    std::vector<probe> probes;
    for (std::size_t k : ks) probes.push_back({k, cut_exact(f, stream.first(k), max_frame)});

    const std::size_t hdr = header_bytes(which, stream);
    std::error_code first_error;
    std::size_t known_size = 0;
    for (const probe& p : probes) {
        const frame_cut& c = p.cut;
        if (first_error) {
            STRIX_FUZZ_CHECK(c.error == first_error);  // an error does not go away with more bytes
            continue;
        }
        if (c.error) {
            STRIX_FUZZ_CHECK(c.size == 0);
            first_error = c.error;
            continue;
        }
        if (which == kind::raw) {
            STRIX_FUZZ_CHECK(c.size == std::min(p.k, max_frame));
            continue;
        }
        if (c.size == 0) {
            STRIX_FUZZ_CHECK(p.k < hdr);  // only a short header leaves the size unknown
            STRIX_FUZZ_CHECK(known_size == 0);
            continue;
        }
        STRIX_FUZZ_CHECK(c.size >= hdr);
        if (which == kind::zmtp_greeting) STRIX_FUZZ_CHECK(c.size == link::zmtp::greeting_size);
        if (known_size == 0) known_size = c.size;
        STRIX_FUZZ_CHECK(c.size == known_size);  // the size comes from the header alone
    }

    if (which == kind::strix_header) {
        // The framer is decode_frame seen through the session's eyes.
        const codec_limits lim{static_cast<std::uint32_t>(std::min<std::size_t>(max_frame, UINT32_MAX))};
        for (const probe& p : probes) {
            const exact_copy copy(stream.first(p.k));
            const decode_result r = decode_frame(copy.view(), lim);
            switch (r.error) {
                case frame_errc::ok: STRIX_FUZZ_CHECK(!p.cut.error && p.cut.size == r.consumed); break;
                case frame_errc::need_more:
                    STRIX_FUZZ_CHECK(!p.cut.error && p.cut.size == (p.k < frame_header_size ? 0 : r.needed));
                    break;
                case frame_errc::length_too_large:
                    STRIX_FUZZ_CHECK(!p.cut.error && p.cut.size == r.frame.header.length && p.cut.size > max_frame);
                    break;
                case frame_errc::length_too_small: STRIX_FUZZ_CHECK(p.cut.error == net_errc::frame_too_small); break;
                default: STRIX_FUZZ_CHECK(p.cut.error == net_errc::bad_frame); break;
            }
        }
    }
    if (which == kind::length_prefix) {
        // The session reads this header inline (length_prefix_size) instead of calling cut().
        for (const probe& p : probes) {
            const exact_copy copy(stream.first(p.k));
            const std::size_t n = length_prefix_size(copy.view());
            if (p.cut.error)
                STRIX_FUZZ_CHECK(n == 1 && p.cut.error == net_errc::frame_too_small);
            else
                STRIX_FUZZ_CHECK(n == p.cut.size && n != 1);
        }
    }
    if (which == kind::zmtp_frame && !full.error && full.size != 0 && full.size <= stream.size()) {
        const exact_copy whole(stream.first(full.size));
        const link::zmtp::frame fr = link::zmtp::split(whole.view());
        STRIX_FUZZ_CHECK(fr.flags == static_cast<std::uint8_t>(stream[0]));
        STRIX_FUZZ_CHECK(fr.body.size() == full.size - hdr);
        STRIX_FUZZ_CHECK(fr.body.data() + fr.body.size() == whole.view().data() + whole.view().size());
    }
}

// The session's receive loop (src/net/session.cpp) over a stream that arrived in one read.
std::size_t session_loop(const framer& f, bytes stream, std::size_t max_frame) {
    std::size_t frames = 0;
    while (!stream.empty()) {
        const frame_cut c = f.cut(stream, max_frame);
        if (c.error || c.size == 0 || c.size > max_frame || c.size > stream.size()) break;
        stream = stream.subspan(c.size);  // size > 0: progress
        ++frames;
    }
    return frames;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    strix::fuzz::reader in(strix::fuzz::as_bytes(data, size));
    const std::uint16_t m = in.u16();
    const std::size_t max_frame = m == 0 ? 64 * 1024 : m;
    const bytes stream = in.rest();

    const struct {
        kind k;
        const framer& f;
    } framers[] = {
        {kind::length_prefix, length_prefix_framer()},
        {kind::strix_header, strix_header_framer()},
        {kind::raw, raw_framer()},
        {kind::zmtp_greeting, link::zmtp::greeting_framer()},
        {kind::zmtp_frame, link::zmtp::frame_framer()},
    };
    for (const auto& fr : framers) {
        STRIX_FUZZ_CHECK(fr.f.name() != nullptr && *fr.f.name() != '\0');
        check_framer(fr.k, fr.f, stream, max_frame);
        const std::size_t n = session_loop(fr.f, stream, max_frame);
        if (fr.k == kind::raw && !stream.empty()) STRIX_FUZZ_CHECK(n == (stream.size() + max_frame - 1) / max_frame);
    }
    return 0;
}
