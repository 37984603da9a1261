// WebSocket wire pieces (strix/net/websocket.hpp): the error category, frame headers, encoding,
// masking, and sending on a session.
#include <strix/net/session.hpp>
#include <strix/net/websocket.hpp>

#include "net/ws/ws_random.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace strix {
namespace {

class ws_category_impl final : public std::error_category {
public:
    const char* name() const noexcept override { return "strix.ws"; }
    std::string message(int ev) const override {
        switch (static_cast<ws_errc>(ev)) {
            case ws_errc::normal: return "WebSocket closed normally (1000)";
            case ws_errc::going_away: return "WebSocket peer going away (1001)";
            case ws_errc::protocol_error: return "WebSocket protocol error (1002)";
            case ws_errc::unsupported_data: return "WebSocket unsupported data (1003)";
            case ws_errc::no_status: return "WebSocket close without a status code (1005)";
            case ws_errc::abnormal: return "WebSocket connection lost without a close frame (1006)";
            case ws_errc::invalid_payload: return "WebSocket text not UTF-8 (1007)";
            case ws_errc::policy_violation: return "WebSocket policy violation (1008)";
            case ws_errc::message_too_big: return "WebSocket message too big (1009)";
            case ws_errc::internal_error: return "WebSocket internal error (1011)";
            case ws_errc::bad_request: return "WebSocket upgrade refused: bad request (400)";
            case ws_errc::forbidden_origin: return "WebSocket upgrade refused: origin not allowed (403)";
            case ws_errc::not_found: return "WebSocket upgrade refused: no WebSocket at this path (404)";
            case ws_errc::upgrade_required: return "WebSocket upgrade refused: version not 13 (426)";
            case ws_errc::request_too_large: return "WebSocket upgrade refused: request head too large (431)";
            case ws_errc::handshake_refused: return "WebSocket upgrade refused by the server";
            case ws_errc::bad_accept: return "WebSocket upgrade: Sec-WebSocket-Accept does not match the key";
        }
        if (ev >= 1000 && ev < 5000) return "WebSocket closed with code " + std::to_string(ev);
        return "unknown strix.ws error";
    }
};

// Frames up to this size are built on the stack and copied once into the session's chain;
// larger ones go into one shared buffer (no second copy).
constexpr std::size_t stack_frame = 4096;

}  // namespace

const std::error_category& ws_category() noexcept {
    static const ws_category_impl cat;
    return cat;
}

bool ws_close_code_valid(std::uint16_t code) noexcept {
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) || (code >= 3000 && code <= 4999);
}

std::size_t ws_write_header(std::byte* out, ws_opcode op, std::size_t n) noexcept {
    out[0] = static_cast<std::byte>(0x80 | static_cast<std::uint8_t>(op));
    if (n < 126) {
        out[1] = static_cast<std::byte>(n);
        return 2;
    }
    if (n <= 0xFFFF) {
        out[1] = std::byte{126};
        out[2] = static_cast<std::byte>(n >> 8);
        out[3] = static_cast<std::byte>(n);
        return 4;
    }
    out[1] = std::byte{127};
    for (int i = 0; i < 8; ++i) out[2 + i] = static_cast<std::byte>(static_cast<std::uint64_t>(n) >> (56 - 8 * i));
    return 10;
}

shared_buffer_ptr ws_encode(ws_opcode op, std::span<const std::byte> payload) {
    auto buf = shared_buffer::create(ws_header_size(payload.size()) + payload.size());
    const std::size_t h = ws_write_header(buf->data(), op, payload.size());
    if (!payload.empty()) std::memcpy(buf->data() + h, payload.data(), payload.size());
    return buf;
}

shared_buffer_ptr ws_encode(ws_opcode op, std::string_view payload) {
    return ws_encode(op, std::as_bytes(std::span(payload.data(), payload.size())));
}

void ws_unmask(std::byte* p, std::size_t n, const std::byte (&mask)[4], std::size_t phase) noexcept {
    std::uint8_t m[8];
    for (std::size_t i = 0; i < 8; ++i) m[i] = static_cast<std::uint8_t>(mask[(i + phase) & 3]);
    std::uint64_t m64;
    std::memcpy(&m64, m, 8);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, p + i, 8);
        w ^= m64;
        std::memcpy(p + i, &w, 8);
    }
    for (; i < n; ++i) p[i] ^= static_cast<std::byte>(m[i & 7]);
}

void ws_send(session& s, ws_opcode op, std::span<const std::byte> payload) {
    if (!s.is_open()) return;
    const bool client = s.origin() != nullptr;
    const std::size_t h = ws_header_size(payload.size(), client);
    const std::size_t total = h + payload.size();
    std::byte stack[stack_frame];
    shared_buffer_ptr big;
    std::byte* out = stack;
    if (total > stack_frame) {
        big = shared_buffer::create(total);
        out = big->data();
    }
    ws_write_header(out, op, payload.size());
    if (!payload.empty()) std::memcpy(out + h, payload.data(), payload.size());
    if (client) {
        // Client frames are masked with a fresh key each (RFC 6455 section 5.3).
        out[1] |= std::byte{0x80};
        std::byte key[4];
        detail::ws_mask_key(key);
        std::memcpy(out + h - 4, key, 4);
        ws_unmask(out + h, payload.size(), key);
    }
    if (big) {
        s.send(std::move(big));
    } else {
        s.send(std::span<const std::byte>(stack, total));
    }
}

void ws_close(session& s, std::uint16_t code, std::string_view reason) {
    if (!s.is_open()) return;
    std::byte body[125];
    body[0] = static_cast<std::byte>(code >> 8);
    body[1] = static_cast<std::byte>(code);
    const std::size_t n = std::min<std::size_t>(reason.size(), 123);
    if (n) std::memcpy(body + 2, reason.data(), n);
    ws_send(s, ws_opcode::close, std::span<const std::byte>(body, 2 + n));
    s.close(ws_close_reason(code));
}

}  // namespace strix
