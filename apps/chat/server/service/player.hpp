#pragma once
// player: the chat state of one session, owned by the session's shard and held by the session as
// its typed state (session::emplace_state<player>, read back with session::state<player>()).
// Created when the connection opens; "logged in" once the database said so.

#include "token_bucket.hpp"
#include "apps/chat/server/rooms/room_id.hpp"

#include <strix/net/session.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace strix::chat {

struct player {
    enum class login_state : std::uint8_t { anonymous, pending, logged_in };
    enum class room_state : std::uint8_t { none, joining, member };

    player(session_ptr s, double chat_rate, double chat_burst, double room_rate, double room_burst)
        : sess(std::move(s)), chat_bucket(chat_rate, chat_burst), room_bucket(room_rate, room_burst) {}

    session_ptr sess;
    login_state login = login_state::anonymous;
    std::uint64_t player_id = 0;
    std::string name;
    // The room this session is in or joining (none: no room); requests about it go to its owner
    // shard (room_id::owner), which is the authority on membership.
    room_id room;
    room_state in_room = room_state::none;
    // The room's last seq when this session was added (join_room_res.last_seq): every message
    // above it reaches the session live, so a resume_req covers up to it.
    std::uint64_t joined_seq = 0;
    token_bucket chat_bucket;
    token_bucket room_bucket;  // create_room_req and join_room_req (a leave always follows one)

    // Requests that arrived while an earlier one is decided elsewhere (a login on the database
    // pool, a join or leave at the room's owner shard, a room list gathered from every shard)
    // wait here and run in order once it completes: a session's requests take effect, and are
    // answered, in the order sent, whatever shard owns what.
    enum class pending_op : std::uint8_t { none, login, join, leave, list, history };
    pending_op pending = pending_op::none;
    std::deque<std::vector<std::byte>> queued;
    std::size_t queued_bytes = 0;
    bool draining = false;
    bool reading_held = false;  // the session stopped reading while too much waits here
};

}  // namespace strix::chat
