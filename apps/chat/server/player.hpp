#pragma once
// player: the chat state of one session, owned by the session's shard (session::user_data points
// at it). Created when the connection opens; "logged in" once the database said so.

#include "token_bucket.hpp"

#include <strix/net/session.hpp>

#include <cstdint>
#include <string>

namespace strix::chat {

struct player {
    enum class login_state : std::uint8_t { anonymous, pending, logged_in };
    enum class room_state : std::uint8_t { none, joining, member };

    player(session_ptr s, double chat_rate, double chat_burst) : sess(std::move(s)), chat_bucket(chat_rate, chat_burst) {}

    session_ptr sess;
    login_state login = login_state::anonymous;
    std::uint64_t player_id = 0;
    std::string name;
    // The room this session is in or joining; requests about it go to the owner shard
    // (room_id & 0xff), which is the authority on membership.
    std::uint64_t room_id = 0;
    room_state in_room = room_state::none;
    token_bucket chat_bucket;
};

}  // namespace strix::chat
