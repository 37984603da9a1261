#pragma once
// presence_backplane: who is online on which node, per room, in Redis (the functions are in
// room_backplane's library, so one FUNCTION LOAD brings them back after a Redis restart).
//
//   chat:{R}:o   hash     "<account>:<node>" -> "<incarnation> <name>": the account has a session
//                         in room R on that node (that run of it: its node_registry incarnation);
//                         "<account>:left" -> a version: the account left the room (a reader
//                         tells a leave from going offline); "#" -> the hash's version,
//                         incremented by every change
//   chat:{R}:p   channel  "<version> <node> <change> <account> <incarnation> <name>", change one
//                         of j (joined), l (left), n (online), f (offline), d (room deleted)
//
// The version orders a read of the hash against the channel's messages, which come on another
// connection: a reader drops a message or a read older than the newest version it applied.
//
// chat_presence changes the hash and publishes the change in one call: a node that subscribes
// (or resubscribes after an outage) and then reads the hash has the whole state; what it hears
// on the channel meanwhile is applied again, idempotently. chat_presence_clear drops the entries
// of a node that is down (any node noticing it may call it, twice is harmless);
// chat_online_counts counts a room's accounts online on live nodes, for list_rooms.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strix::chat {

struct resp_reply;

/// "chat:{R}:o" and "chat:{R}:p".
std::string online_key(std::string_view room);
std::string presence_channel(std::string_view room);
/// "chat:{R}:e": signals about room R that are never stored (typing, read markers); and the one
/// channel of signals about accounts and direct rooms (cluster_presence.hpp says what they say).
std::string signal_channel(std::string_view room);
inline constexpr std::string_view control_channel = "chat:ctl";
/// Whether a channel is one of those two kinds.
bool is_signal_channel(std::string_view channel);

/// What a presence message says; the chars are the wire form.
enum class presence_change : char { joined = 'j', left = 'l', online = 'n', offline = 'f', deleted = 'd' };

struct presence_message {
    std::uint64_t version = 0;  // set by chat_presence (not encoded by encode_presence)
    std::uint32_t node = 0;
    presence_change change = presence_change::online;
    std::uint64_t account = 0;
    std::string_view incarnation;
    std::string_view name;
};
/// The payload without the version (chat_presence puts it in front).
std::string encode_presence(const presence_message& m);
/// A channel payload, version first; views into `payload`. Nothing when malformed.
std::optional<presence_message> parse_presence(std::string_view payload);

/// FCALL chat_presence: the hash change for `m` in room `room`, and its PUBLISH.
std::vector<std::string> presence_command(std::string_view room, const presence_message& m);
/// FCALL chat_presence_clear: in `rooms`, the entries of `node` whose incarnation is not `keep`
/// (empty: all of them), except those of the incarnation heartbeating under chat:node:<node>
/// now (node_registry's key: a node seen down while late, and alive again, keeps them).
std::vector<std::string> presence_clear_command(std::span<const std::string> rooms, std::uint32_t node,
                                                std::string_view keep);
/// FCALL_RO chat_online_counts over `rooms`, counting entries of the nodes in `alive` only.
std::vector<std::string> online_counts_command(std::span<const std::string> rooms,
                                               const std::map<std::uint32_t, std::string>& alive);
/// Its reply: one count per room, in order.
std::optional<std::vector<std::uint32_t>> parse_online_counts(const resp_reply& r, std::size_t rooms);

/// One entry of a room's online hash.
struct online_entry {
    std::uint64_t account = 0;
    std::uint32_t node = 0;
    std::string incarnation;
    std::string name;
};
/// An HGETALL reply of the hash; malformed entries are skipped. `version`: the hash's version
/// (0 when it has none); `left`: the accounts marked as having left.
std::vector<online_entry> parse_online_hash(const resp_reply& r, std::uint64_t* version = nullptr,
                                            std::vector<std::uint64_t>* left = nullptr);

}  // namespace strix::chat
