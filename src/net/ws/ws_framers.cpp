// The WebSocket framers (strix/net/ws_protocol.hpp): the HTTP head, and frames from either side.
// Everything that can be refused from a frame's header is refused here, before its payload is
// buffered: the session calls cut() on the first bytes of every frame.
#include <strix/net/framer.hpp>
#include <strix/net/net_errc.hpp>
#include <strix/net/ws_protocol.hpp>

#include "net/ws/ws_frame.hpp"

#include <cstring>
#include <string_view>

namespace strix {
namespace {

class http_head_framer final : public framer {
public:
    frame_cut cut(std::span<const std::byte> b, std::size_t max_frame) const noexcept override {
        // The head ends at the first empty line. Only the first max_frame bytes are looked at:
        // a longer head is refused (the session says frame_too_large, answered with 431).
        const std::size_t n = b.size() < max_frame + 1 ? b.size() : max_frame + 1;
        const std::string_view text(reinterpret_cast<const char*>(b.data()), n);
        const auto end = text.find("\r\n\r\n");
        if (end == std::string_view::npos) return {n > max_frame ? n : 0, {}};
        return {end + 4, {}};
    }
    const char* name() const noexcept override { return "http-head"; }
};

class ws_frame_framer final : public framer {
public:
    explicit ws_frame_framer(bool from_client) noexcept : from_client_(from_client) {}

    frame_cut cut(std::span<const std::byte> b, std::size_t max_frame) const noexcept override {
        const detail::ws_header h = detail::ws_read_header(b);
        // The first two bytes decide everything but the length: refuse early.
        if (b.size() >= 2) {
            const auto b0 = static_cast<std::uint8_t>(b[0]);
            const auto b1 = static_cast<std::uint8_t>(b[1]);
            const std::uint8_t op = b0 & 0x0F;
            if ((b0 & 0x70) != 0) return {0, ws_errc::protocol_error};  // no extension negotiated
            if (!detail::ws_known_opcode(op)) return {0, ws_errc::protocol_error};
            if (detail::ws_is_control(op) && ((b0 & 0x80) == 0 || (b1 & 0x7F) > 125))
                return {0, ws_errc::protocol_error};  // control frames: short and never fragmented
            if (((b1 & 0x80) != 0) != from_client_) return {0, ws_errc::protocol_error};  // masking by role
        }
        if (!h.length_known) return {0, {}};
        // The length is judged as soon as its bytes are in, without waiting for the mask key.
        if (h.length >> 63) return {0, ws_errc::protocol_error};  // the RFC forbids the top bit
        if (h.length > max_frame) return {0, ws_errc::message_too_big};
        if (h.header_size == 0) return {0, {}};
        if (h.header_size + h.length > max_frame) return {0, ws_errc::message_too_big};
        return {h.header_size + static_cast<std::size_t>(h.length), {}};
    }
    const char* name() const noexcept override { return from_client_ ? "ws-client-frames" : "ws-server-frames"; }

private:
    bool from_client_;
};

const http_head_framer http_instance;
const ws_frame_framer from_client_instance{true};
const ws_frame_framer from_server_instance{false};

}  // namespace

const framer& ws_http_framer() noexcept { return http_instance; }
const framer& ws_server_framer() noexcept { return from_client_instance; }
const framer& ws_client_framer() noexcept { return from_server_instance; }

}  // namespace strix
