// Fuzz target: the WebSocket parsers (include/strix/net/ws_protocol.hpp, src/net/ws/): the frame
// framers of both roles, the HTTP-head framer and head parser of the upgrade, the incremental
// UTF-8 validator and unmasking.
//
// Input: [max_frame u16][cut seed u8][bytes...]   (max_frame 0 = 64 KiB)
//
// Checked, for prefixes of the bytes (exact heap copies: ASan sees a read past them):
//   - a frame framer's verdict depends only on the bytes it needs: an error stays the same error
//     as more bytes arrive, a size stays the same size; a size is the header plus the announced
//     length, never above max_frame, and only for a frame whose header the RFC allows (no RSV,
//     known opcode, short unfragmented control frames, masked by clients only, no 2^63 length);
//   - the session's loop over the stream (cut, hand over, repeat) always makes progress;
//   - the HTTP framer ends the head at the first "\r\n\r\n" (a byte-by-byte reference scan), and
//     gives 0 below the limit, more than the limit at it; the head parser never reads past it;
//   - UTF-8: fed in random pieces the validator agrees with itself fed whole, and with a
//     reference decoder (code point by code point, RFC 3629's ranges);
//   - unmasking equals the byte-by-byte definition (b[i] ^ mask[i % 4]); unmasking twice restores
//     the bytes; unmasking in two pieces (the second with its phase) equals unmasking at once.
#include "fuzz_support.hpp"

#include <strix/net/framer.hpp>
#include <strix/net/ws_protocol.hpp>

#include "net/ws/ws_frame.hpp"
#include "net/ws/ws_http.hpp"
#include "net/ws/ws_utf8.hpp"

#include <cstring>
#include <optional>
#include <vector>

using namespace strix;
using strix::fuzz::bytes;
using strix::fuzz::exact_copy;

namespace {

void check_frame_framer(const framer& f, bool from_client, bytes stream, std::size_t max_frame) {
    std::optional<frame_cut> settled;
    for (std::size_t k = 1; k <= std::min<std::size_t>(stream.size(), 96); ++k) {
        const exact_copy copy(stream.first(k));
        const frame_cut c = f.cut(copy.view(), max_frame);
        if (settled) {
            STRIX_FUZZ_CHECK(std::error_code(c.error) == std::error_code(settled->error));
            STRIX_FUZZ_CHECK(c.size == settled->size);
            continue;
        }
        if (c.error) {
            STRIX_FUZZ_CHECK(c.size == 0);
            settled = c;
            continue;
        }
        if (c.size == 0) continue;
        settled = c;
        const detail::ws_header h = detail::ws_read_header(copy.view());
        STRIX_FUZZ_CHECK(h.header_size >= 2 && h.header_size <= 14);
        STRIX_FUZZ_CHECK(c.size == h.header_size + h.length);
        STRIX_FUZZ_CHECK(c.size <= max_frame);
        STRIX_FUZZ_CHECK(h.rsv == 0 && detail::ws_known_opcode(h.opcode));
        STRIX_FUZZ_CHECK(!detail::ws_is_control(h.opcode) || (h.fin && h.length <= 125));
        STRIX_FUZZ_CHECK(h.masked == from_client);
    }
    // The session's loop: every verdict moves on or stops.
    std::size_t off = 0;
    for (int guard = 0; off < stream.size() && guard < 10000; ++guard) {
        const exact_copy copy(stream.subspan(off));
        const frame_cut c = f.cut(copy.view(), max_frame);
        if (c.error || c.size == 0 || c.size > copy.view().size()) break;
        STRIX_FUZZ_CHECK(c.size >= 2);
        off += c.size;
    }
}

std::size_t reference_head_end(std::string_view t) {
    for (std::size_t e = 4; e <= t.size(); ++e)
        if (t.substr(e - 4, 4) == "\r\n\r\n") return e;
    return 0;
}

void check_http(bytes stream, std::size_t max_head) {
    const framer& f = ws_http_framer();
    for (std::size_t k = 1; k <= std::min<std::size_t>(stream.size(), 600); k += 1 + k / 16) {
        const exact_copy copy(stream.first(k));
        const frame_cut c = f.cut(copy.view(), max_head);
        STRIX_FUZZ_CHECK(!c.error);
        const std::string_view text = fuzz::as_text(copy.view());
        const std::size_t end = reference_head_end(text.substr(0, std::min(text.size(), max_head + 1)));
        if (end) {
            STRIX_FUZZ_CHECK(c.size == end);
            detail::http_head h;
            if (detail::parse_http_head(text.substr(0, end), h)) {
                STRIX_FUZZ_CHECK(!h.a.empty() && !h.b.empty());
                for (auto& [name, value] : h.headers) {
                    STRIX_FUZZ_CHECK(!name.empty() && name.find(':') == std::string_view::npos);
                    STRIX_FUZZ_CHECK(value.find("\r\n") == std::string_view::npos);
                }
                const std::string_view key = h.header("Sec-WebSocket-Key");
                if (detail::ws_key_valid(key)) STRIX_FUZZ_CHECK(detail::ws_accept_key(key).size() == 28);
                (void)detail::header_has_token(h.header("Connection"), "upgrade");
            }
        } else {
            STRIX_FUZZ_CHECK(c.size == 0 ? k <= max_head : c.size > max_head);
        }
    }
}

// RFC 3629, one code point at a time.
bool reference_utf8(bytes b) {
    std::size_t i = 0;
    while (i < b.size()) {
        const auto c = static_cast<std::uint8_t>(b[i]);
        std::size_t n;
        std::uint32_t cp;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1;
            cp = c & 0x1Fu;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2;
            cp = c & 0x0Fu;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3;
            cp = c & 0x07u;
        } else {
            return false;
        }
        if (i + n >= b.size()) return false;  // truncated
        for (std::size_t j = 1; j <= n; ++j) {
            const auto cc = static_cast<std::uint8_t>(b[i + j]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = cp << 6 | (cc & 0x3Fu);
        }
        const std::uint32_t min = n == 1 ? 0x80 : n == 2 ? 0x800 : 0x10000;
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += n + 1;
    }
    return true;
}

void check_utf8(bytes b, fuzz::cuts& rng) {
    const bool whole = detail::utf8_valid(b.data(), b.size());
    STRIX_FUZZ_CHECK(whole == reference_utf8(b));
    detail::utf8_validator v;
    std::size_t off = 0;
    bool ok = true;
    while (off < b.size() && ok) {
        const std::size_t n = std::min<std::size_t>(b.size() - off, 1 + rng.next() % 13);
        const exact_copy piece(b.subspan(off, n));
        ok = v.feed(piece.view().data(), n);
        off += n;
    }
    STRIX_FUZZ_CHECK(whole == (ok && v.complete()));
}

void check_unmask(bytes b, fuzz::cuts& rng) {
    const std::byte mask[4] = {std::byte{0x12}, std::byte(rng.next()), std::byte{0xA5}, std::byte(rng.next())};
    std::vector<std::byte> once(b.begin(), b.end()), split(b.begin(), b.end());
    ws_unmask(once.data(), once.size(), mask);
    // Against the definition (RFC 6455 section 5.3): byte i is XORed with mask[i mod 4]. The
    // word-wide paths must agree with it byte for byte, whatever the length and alignment.
    for (std::size_t i = 0; i < b.size(); ++i) STRIX_FUZZ_CHECK(once[i] == (b[i] ^ mask[i % 4]));
    const std::size_t k = b.empty() ? 0 : rng.next() % (b.size() + 1);
    ws_unmask(split.data(), k, mask);
    ws_unmask(split.data() + k, split.size() - k, mask, k % 4);
    STRIX_FUZZ_CHECK(once == split);
    ws_unmask(once.data(), once.size(), mask);
    STRIX_FUZZ_CHECK(b.empty() || std::memcmp(once.data(), b.data(), b.size()) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::reader in(fuzz::as_bytes(data, size));
    std::size_t max_frame = in.u16();
    if (max_frame == 0) max_frame = 64 * 1024;
    fuzz::cuts rng(in.u8());
    const bytes stream = in.rest();
    if (stream.empty()) return 0;
    check_frame_framer(ws_server_framer(), true, stream, max_frame);
    check_frame_framer(ws_client_framer(), false, stream, max_frame);
    check_http(stream, max_frame);
    check_utf8(stream, rng);
    check_unmask(stream, rng);
    return 0;
}
