#include "chat_ws.hpp"

#include <strix/net/framer.hpp>
#include <strix/net/net_errc.hpp>

namespace strix::chat {

void chat_ws::on_open(session& s) {
    svc_.on_open(s);
    if (player* p = s.state<player>()) p->ws = true;
    // Before login a message is as small as a TCP client's frame (the upgrade set the larger
    // limit a logged-in member gets); chat_service raises it at login.
    s.set_max_frame(chat_service::ws_frame_limit(chat_service::max_frame_anonymous));
}

void chat_ws::on_message(session& s, ws_opcode op, std::span<const std::byte> payload) {
    const player* p = s.state<player>();
    if (!p) return;
    if (op != ws_opcode::binary) {
        ws_close(s, 1003, "binary messages only: each one strix frame (docs/protocol.md)");
        return;
    }
    // A fragmented message is limited by its frames' sum, not by set_max_frame.
    const std::size_t limit = p->login == player::login_state::logged_in ? chat_service::max_frame_logged_in
                                                                         : chat_service::max_frame_anonymous;
    if (payload.size() > limit) {
        ws_close(s, 1009, "message larger than the frame size limit");
        return;
    }
    // The same checks as on TCP (length, flags, CRC), and the frame must fill the message.
    const frame_cut cut = strix_header_framer().cut(payload, limit);
    if (cut.error || cut.size != payload.size()) {
        ws_close(s, 1002, "a binary message must hold exactly one frame");
        return;
    }
    svc_.on_frame(s, payload);
}

void chat_ws::on_close(session& s, std::error_code reason) { svc_.on_close(s, reason); }

void chat_ws::on_protocol_error(session& s, std::error_code ec) {
    // The login and frame timeouts get the same error_res as on TCP; WebSocket protocol
    // violations get their close frame from ws_protocol, nothing more.
    if (ec == net_errc::handshake_timeout || ec == net_errc::frame_timeout) svc_.on_protocol_error(s, ec);
}

}  // namespace strix::chat
