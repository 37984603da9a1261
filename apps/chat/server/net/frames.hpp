#pragma once
// frames: encoders for every message the server sends. Each returns one finished frame
// (apps/chat/common/chat_frame.hpp), immutable, so a broadcast encodes once and shares it.
// Any thread.

#include "apps/chat/server/rooms/member.hpp"

#include "apps/chat/common/chat_frame.hpp"
#include "apps/chat/storage/device_token.hpp"

#include <span>
#include <string_view>
#include <vector>

namespace strix::chat::frames {

shared_buffer_ptr error(proto::msg_type request, proto::error_code code, std::string_view reason);
/// `token`: the device token to hand the client (null: none; the field is left out).
shared_buffer_ptr login_res(std::uint64_t player_id, std::string_view name, bool created,
                            const device_token* token = nullptr);
shared_buffer_ptr create_room_res(const room_summary& room);
shared_buffer_ptr join_room_res(const room_summary& room, std::span<const member> members);
shared_buffer_ptr leave_room_res(std::uint64_t room_id);
shared_buffer_ptr list_rooms_res(std::span<const room_summary> rooms);
shared_buffer_ptr pong(std::uint64_t ts);
shared_buffer_ptr member_joined(std::uint64_t room_id, std::uint64_t player_id, std::string_view name);
shared_buffer_ptr member_left(std::uint64_t room_id, std::uint64_t player_id, std::string_view name);

struct chat_fields {
    std::uint64_t room_id = 0;
    std::uint64_t seq = 0;
    std::uint64_t sender_id = 0;
    std::string_view sender_name;
    std::uint64_t server_ts_us = 0;
    std::string_view text;
    std::uint64_t client_ts = 0;
    std::uint64_t client_seq = 0;
};
shared_buffer_ptr chat_msg(const chat_fields& f);

/// `frame` as one binary WebSocket message (an unmasked header, then the frame's bytes
/// unchanged) for WebSocket sessions; like the frame, built once and shared by every recipient.
shared_buffer_ptr ws_message(const shared_buffer_ptr& frame);

}  // namespace strix::chat::frames
