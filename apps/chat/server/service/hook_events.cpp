// hook_events (hook_events.hpp): the shards' side of the webhooks.

#include "hook_events.hpp"

#include "chat_context.hpp"
#include "chat_service.hpp"
#include "apps/chat/server/hooks/chat_hooks.hpp"
#include "apps/chat/server/rooms/room.hpp"
#include "apps/chat/server/rooms/room_sequencer.hpp"

namespace strix::chat::hook_events {
namespace {

chat_hooks* webhooks_on(chat_context& ctx) {
    return ctx.hooks != nullptr && ctx.hooks->webhooks() != nullptr ? ctx.hooks : nullptr;
}

}  // namespace

void session_up(chat_service& svc, chat_context& ctx, std::uint64_t account, const std::string& name) {
    chat_hooks* h = webhooks_on(ctx);
    if (h == nullptr) return;
    svc.container().invoke_on(h->presence_shard(account),
                              [h, account, name](chat_service&) { h->session_up(account, name); });
}

void session_down(chat_service& svc, chat_context& ctx, std::uint64_t account) {
    chat_hooks* h = webhooks_on(ctx);
    if (h == nullptr) return;
    svc.container().invoke_on(h->presence_shard(account), [h, account](chat_service&) { h->session_down(account); });
}

void room_changed(chat_context& ctx, webhook_kind kind, const room& r, std::uint64_t account, const std::string& name) {
    chat_hooks* h = webhooks_on(ctx);
    if (h == nullptr) return;
    webhook_event ev;
    ev.kind = kind;
    ev.room = r.id().value();
    ev.room_name = r.name();
    ev.user = account;
    ev.user_name = name;
    h->emit(std::move(ev));
}

std::optional<webhook_event> stored_message(chat_context& ctx, const room& r, std::uint64_t seq,
                                            const chat_request& req) {
    chat_hooks* h = webhooks_on(ctx);
    if (h == nullptr || req.kind != 0 || !h->wants_messages(r.name())) return std::nullopt;
    webhook_event ev;
    ev.kind = webhook_kind::message_stored;
    ev.room = r.id().value();
    ev.room_name = r.name();
    ev.user = req.sender.player_id;
    ev.user_name = req.sender.name;
    ev.seq = seq;
    ev.text = req.text;
    return ev;
}

void emit(chat_context& ctx, std::optional<webhook_event> ev) {
    if (ev && ctx.hooks != nullptr) ctx.hooks->emit(std::move(*ev));
}

}  // namespace strix::chat::hook_events
