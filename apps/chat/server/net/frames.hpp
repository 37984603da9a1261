#pragma once
// frames: encoders for every message the server sends. Each returns one finished frame
// (apps/chat/common/chat_frame.hpp), immutable, so a broadcast encodes once and shares it.
// Any thread.

#include "apps/chat/server/rooms/member.hpp"

#include "apps/chat/common/chat_frame.hpp"
#include "apps/chat/storage/chat_store.hpp"
#include "apps/chat/storage/device_token.hpp"

#include <span>
#include <string_view>
#include <vector>

namespace strix::chat::frames {

shared_buffer_ptr error(proto::msg_type request, proto::error_code code, std::string_view reason);
/// `token`: the device token to hand the client, `resume`: the resume token (null: none; the
/// field is left out); `rooms`: the account's rooms for a protocol version 2 login (null: the
/// field is left out); `display_name` and `expires_at`: a JWT login's `name` and `exp` (empty and 0:
/// left out).
shared_buffer_ptr login_res(std::uint64_t player_id, std::string_view name, bool created,
                            const device_token* token = nullptr, const device_token* resume = nullptr,
                            std::span<const account_room> const* rooms = nullptr, std::string_view display_name = {},
                            std::uint64_t expires_at = 0);
/// refresh_res: the session's JWT now expires at `expires_at` (Unix seconds).
shared_buffer_ptr refresh_res(std::uint64_t expires_at);
/// token_expired: the session's JWT expired; refresh_req within `grace_seconds` or be closed.
shared_buffer_ptr token_expired(std::uint64_t expires_at, std::uint32_t grace_seconds);
shared_buffer_ptr create_room_res(const room_summary& room);
/// `members`: every member account, in join order, with its online state; `last_seq`: the
/// room's last message seq at the join.
shared_buffer_ptr join_room_res(const room_summary& room, std::span<const room_member> members, std::uint64_t last_seq);
shared_buffer_ptr leave_room_res(std::uint64_t room_id);
/// read_res / read_marker: the account's read marker `seq` in the room.
shared_buffer_ptr read_res(std::uint64_t room_id, std::uint64_t seq);
shared_buffer_ptr read_marker(std::uint64_t room_id, std::uint64_t seq);
shared_buffer_ptr typing(std::uint64_t room_id, std::uint64_t player_id, std::string_view name);
shared_buffer_ptr list_rooms_res(std::span<const room_summary> rooms);
shared_buffer_ptr pong(std::uint64_t ts);
shared_buffer_ptr member_joined(std::uint64_t room_id, std::uint64_t player_id, std::string_view name);
shared_buffer_ptr member_left(std::uint64_t room_id, std::uint64_t player_id, std::string_view name);
shared_buffer_ptr member_presence(std::uint64_t room_id, std::uint64_t player_id, std::string_view name, bool online);

struct chat_fields {
    std::uint64_t room_id = 0;
    std::uint64_t seq = 0;
    std::uint64_t sender_id = 0;
    std::string_view sender_name;
    std::uint64_t server_ts_us = 0;
    std::string_view text;
    std::uint64_t client_ts = 0;
    std::uint64_t client_seq = 0;
    std::uint8_t kind = 0;  // proto::msg_kind; a notice's text is its encoded action (notice.hpp)
};
shared_buffer_ptr chat_msg(const chat_fields& f);
/// block_res: the account's block of `player` is now `blocked`.
shared_buffer_ptr block_res(std::uint64_t player_id, std::string_view name, bool blocked);

/// Stored messages in a history_res / resume_res: a frame holds at most this many body bytes of
/// messages (the largest chat_msg, 60000 bytes of text, still fits one alone).
inline constexpr std::size_t max_messages_bytes = 60 * 1024;

/// A stored message's share of that budget (its text, its sender's name and the fixed fields).
inline std::size_t message_size(const chat_log_entry& e) { return e.text.size() + e.sender_name.size() + 96; }
/// How many of `logs` (from the front) fit one frame's message budget; at least one.
std::size_t messages_that_fit(std::span<const chat_log_entry> logs);
/// history_res with logs (ascending; all of them: the caller cut them with messages_that_fit).
shared_buffer_ptr history_res(std::uint64_t room_id, std::span<const chat_log_entry> logs, bool more,
                              std::uint64_t oldest_seq, std::uint64_t last_seq);
/// resume_res: complete with logs (more: another resume_res follows), or gap without.
shared_buffer_ptr resume_res(std::uint64_t room_id, bool gap, std::span<const chat_log_entry> logs,
                             std::uint64_t to_seq, std::uint64_t oldest_seq, bool more);
/// `frame` as one binary WebSocket message (an unmasked header, then the frame's bytes
/// unchanged) for WebSocket sessions; like the frame, built once and shared by every recipient.
shared_buffer_ptr ws_message(const shared_buffer_ptr& frame);

}  // namespace strix::chat::frames
