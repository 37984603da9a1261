#pragma once
// member: a session in a room, as the room's owner shard knows it.

#include <cstdint>
#include <string>

namespace strix::chat {

struct member {
    std::uint64_t session_id = 0;  // the session (unique across shards)
    unsigned shard = 0;            // the shard the session lives on
    std::uint64_t player_id = 0;
    std::string name;
    bool ws = false;  // a WebSocket session: it takes frames wrapped in a WebSocket message
    std::uint64_t last_read = 0;  // the account's read marker in the room as its login read it
    std::int64_t joined_us = 0;   // when the owner shard added it (wall clock, µs)
};

/// A session in a room as the owner shard keeps it (room::members): what a broadcast, a kick or
/// a leave needs. Its name and read marker are its account's (room_member), so a room of a
/// million sessions keeps 32 bytes a session here, not member's 80.
struct room_seat {
    std::uint64_t session_id = 0;
    std::uint64_t player_id = 0;
    std::int64_t joined_us = 0;  // when the owner shard added it (wall clock, µs)
    unsigned shard = 0;
    bool ws = false;
};
static_assert(sizeof(room_seat) == 32, "a seat is what a session in a room costs its owner shard");

/// An account that belongs to a room, as the room's owner shard knows it: a member until it
/// leaves; online while at least one of its sessions is in the room.
struct room_member {
    std::uint64_t player_id = 0;
    std::string name;
    unsigned sessions = 0;  // its sessions in the room now
    std::uint64_t last_read = 0;  // its read marker, as far as this shard has seen it
    std::uint8_t role = 0;        // proto::member_role: 0 member, 1 admin, 2 owner
    unsigned remote = 0;          // cluster mode: the other nodes it is online on
    bool online() const noexcept { return sessions != 0; }
    bool online_anywhere() const noexcept { return sessions != 0 || remote != 0; }
};

/// A room as list_rooms reports it.
struct room_summary {
    std::uint64_t id = 0;
    std::string name;
    std::uint32_t members = 0;  // member accounts, online or not
    std::uint32_t online = 0;   // of those, the ones with a session in the room
    std::uint8_t kind = 0;      // proto::room_kind: 0 group, 1 direct
};

}  // namespace strix::chat
