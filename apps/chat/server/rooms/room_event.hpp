#pragma once
// room_event: what a room's owner shard tells a shard that has members of the room. The owner
// posts events to each such shard in the order it decides them, and the mesh keeps FIFO per pair
// of shards, so every shard applies a room's joins, leaves and messages in the same order.
//
//   owner shard: decide (seq, membership)  --one event per shard with members-->  member shards:
//                                                                                 update the local
//                                                                                 member list, send
//                                                                                 the shared frame

#include "room_id.hpp"

#include <strix/core/shared_buffer.hpp>

#include <cstdint>

namespace strix::chat {

struct room_event {
    enum class kind : std::uint8_t {
        message,  // to_members to everyone (the sender included)
        joined,   // subject joins: add it to the local list, to_subject to it, to_members to the rest
        left,     // subject leaves: remove it from the local list, to_subject to it, to_members to the rest
        notice,   // membership unchanged: to_members (a delayed member_joined/left, typing) to all but the subject
        read,     // to_subject to the subject, to_members to the other sessions of account `account`
        removed,  // as left, for a session a moderator put out (no request of its own ends)
        moderation,  // as message, for a moderator's notice: protocol version 1 sessions skip it
    };

    room_id room;
    std::uint64_t subject = 0;      // the joining or leaving session; 0 for messages
    shared_buffer_ptr to_subject;   // join_room_res / leave_room_res; null when the subject gets nothing
    shared_buffer_ptr to_members;   // chat_msg / member_joined / member_left; null for nothing
    // to_members as one WebSocket message (header and frame), built once by the owner for every
    // shard when the room has WebSocket members; null otherwise (a shard that finds a WebSocket
    // member anyway builds it there, once for the event).
    shared_buffer_ptr to_members_ws;
    kind what = kind::message;
    std::uint64_t seq = 0;          // joined: the room's last seq at the join (the subject's resume bound)
    std::uint64_t account = 0;      // read: the account whose sessions get to_members
};

}  // namespace strix::chat
