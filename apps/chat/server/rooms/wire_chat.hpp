#pragma once
// wire_chat: a chat message as cluster nodes pass it through Redis (the room's channel and
// stream carry it next to the seq): the fields of the chat_msg and where it came from (node,
// publish number: the origin node matches its own publishes) and its kind (0 text, 1 notice, 2
// deleted: proto::msg_kind), as text:
//
//   "<sender_id> <server_ts_us> <client_ts> <client_seq> <node> <no> <kind> <name length> <name><text>"
//
// (The kind came with moderation: nodes of older versions cannot read these; a cluster is
// upgraded by restarting all its nodes.)
//
// Plain functions, any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strix::chat {

struct wire_chat {
    std::uint64_t sender_id = 0, server_ts_us = 0, client_ts = 0, client_seq = 0, node = 0, no = 0;
    std::string_view name, text;
    std::uint64_t kind = 0;  // proto::msg_kind
};

/// The message as the backplane carries it.
std::string encode_wire_chat(const wire_chat& w);
/// The message `s` carries (views into `s`), or nothing when it is malformed.
std::optional<wire_chat> decode_wire_chat(std::string_view s);

}  // namespace strix::chat
