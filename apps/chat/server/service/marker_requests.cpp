// read_req and typing_req (docs/protocol.md, "Read markers and typing"): both go to the room's
// owner shard, which checks membership; read markers are stored there, typing never is.
#include "chat_service.hpp"

#include "apps/chat/server/net/frames.hpp"

namespace strix::chat {

using proto::error_code;
using proto::msg_type;

namespace {

// The room a marker request names, if the session is in it (not merely joining).
const player::room_slot* member_slot(player& p, std::uint64_t id) {
    const player::room_slot* slot = id != 0 ? p.slot(room_id(id)) : nullptr;
    return slot && slot->state == player::room_state::member ? slot : nullptr;
}

}  // namespace

void chat_service::handle_read(player& p, std::span<const std::byte> frame) {
    auto* req = decode<proto::read_req>(p, frame, msg_type::read_req, "malformed read_req");
    if (!req) return;
    const player::room_slot* slot = member_slot(p, req->room_id());
    if (!slot) {
        send_error(*p.sess, msg_type::read_req, error_code::not_in_room, "read markers are for a room you are in");
        return;
    }
    // Each marker that moves is a database write: it spends chat tokens like a message.
    if (!p.take_chat()) {
        bump(counters_.rate_limited);
        send_error(*p.sess, msg_type::read_req, error_code::rate_limited, "too many requests; slow down");
        return;
    }
    const room_id room = slot->id;
    const std::uint64_t seq = req->seq();
    on_owner(room, [room, m = as_member(p), seq](chat_service& owner) { owner.host().mark_read(room, m, seq); });
}

void chat_service::handle_typing(player& p, std::span<const std::byte> frame) {
    auto* req = decode<proto::typing_req>(p, frame, msg_type::typing_req, "malformed typing_req");
    if (!req) return;
    const player::room_slot* slot = member_slot(p, req->room_id());
    if (!slot) {
        send_error(*p.sess, msg_type::typing_req, error_code::not_in_room, "typing is for a room you are in");
        return;
    }
    if (!p.take_typing()) {
        bump(counters_.typing_limited);
        send_error(*p.sess, msg_type::typing_req, error_code::rate_limited, "typing notices at most one a second");
        return;
    }
    const room_id room = slot->id;
    on_owner(room, [room, m = as_member(p)](chat_service& owner) { owner.host().typing(room, m); });
}

}  // namespace strix::chat
