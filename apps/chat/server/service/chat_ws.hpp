#pragma once
// chat_ws: the chat service's face towards WebSocket sessions (--ws-port), one per shard next to
// that shard's chat_service. strix::ws_protocol does the upgrade and the frames and hands over
// whole messages; this turns each binary message into one protocol frame for chat_service, which
// from then on treats the session as any member (player::ws marks it so that its frames go out
// wrapped in a WebSocket message).
//
//   browser --ws frame--> session --ws_protocol: unmask, reassemble--> chat_ws::on_message
//           --one strix frame, unchanged--> chat_service::on_frame (the TCP path from here on)
//
// Refused with a close code (docs/protocol.md, "WebSocket"): text messages (1003), a binary
// message that is not exactly one well-formed frame (1002), a message over the frame size limit
// (1009: 4096 bytes before login, 65536 after).

#include "chat_service.hpp"

#include <strix/net/ws_protocol.hpp>

namespace strix::chat {

class chat_ws final : public ws_handler {
public:
    /// Built on the main thread by the WebSocket server's factory; used on svc's shard.
    explicit chat_ws(chat_service& svc) noexcept : svc_(svc) {}

    void on_open(session& s) override;
    void on_message(session& s, ws_opcode op, std::span<const std::byte> payload) override;
    void on_close(session& s, std::error_code reason) override;
    void on_protocol_error(session& s, std::error_code ec) override;

private:
    chat_service& svc_;
};

}  // namespace strix::chat
