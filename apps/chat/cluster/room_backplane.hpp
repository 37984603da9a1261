#pragma once
// room_backplane: what the chat cluster keeps in Redis per room, and the Redis 7 functions that
// change it atomically (one FCALL per message, Centrifugo's offset + epoch design).
//
//   chat:{R}:m   hash     s = the room's last seq, e = the room's epoch
//   chat:{R}:x   stream   one entry per message, id "<seq>-0", field d = the message; trimmed
//                         to about `stream_max` entries (XADD MAXLEN ~)
//   chat:{R}     channel  "<seq>:<epoch>:<message>" for every message, to the nodes subscribed
//   chat:{R}:k:<key>  string  the seq of a server API post with idempotency key <key> (a day)
//
// (R is the room's id; the braces are a Redis Cluster hash tag, so a room's keys share a slot.)
//
// chat_publish: HINCRBY s, XADD, PUBLISH in one function call, so every node sees one order per
// room, seqs without holes, and the stream holding exactly what was published. The epoch is set
// (from the caller's random candidate) when the room's hash does not exist: a Redis that lost
// its data (restarted without persistence, flushed, the keys expired) gives the room a new epoch,
// with seqs continuing from the caller's floor (the database's last seq; 0 = from 1 again), and
// a node holding the old epoch sees the change: what the lost stream held must come from the
// database, never be assumed delivered.
//
// chat_since (read-only): the room's last seq and epoch and, when asked, the stream entries
// after a seq: what a node reads after (re)subscribing to catch up. chat_positions (read-only):
// the seq and epoch of many rooms in one call, the periodic position check. The caller compares the epoch; entries that
// do not start right after its seq (trimmed or lost) are a gap to fill from the database.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strix::chat {

struct resp_reply;

/// The Lua library (FUNCTION LOAD REPLACE loads it; redis_client's on_connect does that on every
/// connection, so a restarted Redis gets it back).
std::string_view backplane_library();
/// ["FUNCTION", "LOAD", "REPLACE", backplane_library()].
std::vector<std::string> backplane_load_command();

struct room_keys {
    std::string meta, stream, channel;
};
room_keys keys_for_room(std::string_view room);

/// FCALL chat_publish for one message: assigns the next seq, appends, publishes.
/// ttl_s 0 keeps the room's keys; otherwise they expire ttl_s after the last message.
/// seq_floor: where the seqs of a room without state in Redis continue from (the room's last
/// seq the database knows), so a Redis that lost its data starts a new epoch without reusing
/// seqs clients have seen; a floor above the counter of an existing epoch moves the counter up
/// to it (that epoch was started from a floor that missed seqs). may_create false: a room
/// without state is not started; the reply says so (seq 0) and nothing changes.
/// idem_key (a server API post's idempotency key, "" for none): a key published before (in the
/// last idem_ttl_s seconds, by any node) gets that message's seq back, marked repeated, and
/// nothing is published; otherwise the key is kept, chat:{R}:k:<key> -> seq, for idem_ttl_s.
std::vector<std::string> publish_command(std::string_view room, std::string_view message, std::uint32_t stream_max,
                                         std::string_view epoch_candidate, std::uint32_t ttl_s = 0,
                                         std::uint64_t seq_floor = 0, bool may_create = true,
                                         std::string_view idem_key = {}, std::uint32_t idem_ttl_s = 86400);

struct room_position {
    std::uint64_t seq = 0;  // last seq given out (0: the room has no state in Redis)
    std::string epoch;  // empty when seq is 0
    bool repeated = false;  // chat_publish: the idempotency key was published before (seq: its message's)
};
/// chat_publish's reply: the seq given to the message and the room's epoch; seq 0 and no epoch
/// when the room had no state and may_create was false (nothing was published); `repeated` with
/// the first message's seq when its idempotency key was known.
std::optional<room_position> parse_publish_reply(const resp_reply& r);

struct room_message {
    std::uint64_t seq = 0;
    std::string epoch;  // set for a channel message; empty for a stream entry (the reply has it)
    std::string body;
};
/// A "<seq>:<epoch>:<message>" channel payload.
std::optional<room_message> parse_channel_message(std::string_view payload);

/// FCALL_RO chat_since: position, and up to `limit` entries with seq > after (0: position only).
std::vector<std::string> since_command(std::string_view room, std::uint64_t after, std::uint32_t limit);

struct room_since {
    room_position at;  // the room's current position
    std::vector<room_message> entries;  // in seq order
    /// True when the entries start right after `after` and run without holes (to at.seq or to
    /// the limit): nothing between `after` and them was lost or trimmed.
    bool contiguous_after(std::uint64_t after) const noexcept;
};
std::optional<room_since> parse_since_reply(const resp_reply& r);

/// FCALL_RO chat_positions: the position of every room in `rooms` in one call (the periodic
/// check; a single Redis, or rooms of one slot in Redis Cluster).
std::vector<std::string> positions_command(std::span<const std::string> rooms);
/// Its reply, one position per room in order (seq 0 and no epoch for a room Redis has no state of).
std::optional<std::vector<room_position>> parse_positions_reply(const resp_reply& r, std::size_t rooms);

/// A random epoch candidate (16 hex digits). Any thread.
std::string new_epoch();

}  // namespace strix::chat
