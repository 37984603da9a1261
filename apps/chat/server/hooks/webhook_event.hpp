#pragma once
// webhook_event: one thing that happened on the chat server, as a webhook receiver hears of it
// (docs/webhooks.md, "Events"). A shard fills the plain fields and hands the event to the
// webhook sender (webhook_sink::push); the JSON is written on the sender's thread.

#include <cstdint>
#include <string>

namespace strix::chat {

enum class webhook_kind : std::uint8_t {
    user_online,     // the account's first session on this server logged in
    user_offline,    // its last session here closed
    room_created,
    room_deleted,
    member_joined,   // the account now belongs to the room (stored)
    member_left,     // it no longer does (left, kicked or banned)
    message_stored,  // a chat message got its seq (only rooms matching --webhook-messages)
};

/// The event's "type" in the JSON: "user.online", "room.created", "message.stored", ... Any thread.
const char* webhook_type(webhook_kind k) noexcept;

struct webhook_event {
    webhook_kind kind = webhook_kind::user_online;
    std::int64_t time_ms = 0;  // Unix milliseconds when it happened (0: push() stamps it)
    std::uint64_t room = 0;    // 0 for user events
    std::string room_name;
    std::uint64_t user = 0;    // the account's id (0 when no account is involved)
    std::string user_name;
    std::uint64_t seq = 0;     // message.stored: the message's seq in the room
    std::string text;          // message.stored: the message as stored
};

/// The event as one JSON object with the id `id` (docs/webhooks.md). Any thread.
std::string webhook_event_json(const webhook_event& ev, const std::string& id);

/// 16 random hex digits (OpenSSL RAND_bytes): the per-process part of event, batch and
/// publish-hook ids ("<this>-e<n>"), unique across restarts with no state on disk. Any thread.
std::string hook_random_id();

/// Unix milliseconds now. Any thread.
std::int64_t webhook_now_ms() noexcept;

}  // namespace strix::chat
