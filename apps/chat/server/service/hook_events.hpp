#pragma once
// hook_events: where the chat server's shards tell the webhook sender what happened
// (docs/webhooks.md, "Events"). Each function returns at once when webhooks are off
// (chat_context::hooks null, or without --webhook-url); otherwise it queues an event, never
// waiting for the network (webhook_sink::push).
//
// Room events are emitted on the room's owner shard at the moment the owner decides (queued for
// the database), in decision order, which is the room's order; the sender keeps it.

#include "apps/chat/server/hooks/webhook_event.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace strix::chat {

struct chat_context;
struct chat_request;
class chat_service;
class room;

namespace hook_events {

/// A session of `account` logged in / closed: counted on the account's presence shard, which
/// emits user.online / user.offline on the first and last. The session's shard.
void session_up(chat_service& svc, chat_context& ctx, std::uint64_t account, const std::string& name);
void session_down(chat_service& svc, chat_context& ctx, std::uint64_t account);

/// room.created, room.deleted, member.joined or member.left about room r and an account. The
/// room's owner shard.
void room_changed(chat_context& ctx, webhook_kind kind, const room& r, std::uint64_t account, const std::string& name);

/// message.stored for a chat message (not a moderator's notice) of req numbered `seq` in room
/// r, when r's name matches --webhook-messages: made before the log entry takes req's strings,
/// queued by emit() once the message is queued for the database. The room's owner shard.
std::optional<webhook_event> stored_message(chat_context& ctx, const room& r, std::uint64_t seq,
                                            const chat_request& req);
void emit(chat_context& ctx, std::optional<webhook_event> ev);

}  // namespace hook_events
}  // namespace strix::chat
