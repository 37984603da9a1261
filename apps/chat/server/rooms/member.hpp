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
};

/// A room as list_rooms reports it.
struct room_summary {
    std::uint64_t id = 0;
    std::string name;
    std::uint32_t members = 0;
};

}  // namespace strix::chat
