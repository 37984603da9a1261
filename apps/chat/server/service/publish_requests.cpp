// publish_requests: a chat_req through the publish hook (--publish-hook-url, docs/webhooks.md).
// The session's shard submits the message and marks the session busy (pending_op::publish), so
// its later requests wait and its messages keep their order; the hook's worker posts the verdict
// back to this shard (as a login's database job does), which sends the message on to the room's
// owner as it was or rewritten, or answers error_res.

#include "chat_service.hpp"

#include "apps/chat/server/hooks/chat_hooks.hpp"

#include <string>

namespace strix::chat {
namespace {

// error_res reasons stay short whatever the backend wrote.
constexpr std::size_t max_reason = 200;

}  // namespace

void chat_service::ask_publish_hook(player& p, room_id room, std::string_view text, std::uint64_t client_ts,
                                    std::uint64_t client_seq) {
    p.pending = player::pending_op::publish;
    sharded<chat_service>* services = &container();
    const unsigned self = self_;
    const std::uint64_t sid = p.sess->id();
    publish_request req;
    req.room = room.value();
    req.user = p.player_id;
    req.user_name = p.name;
    req.text.assign(text);
    // The verdict comes on a worker thread (or at once, here, when the hook's queue is full).
    ctx_.hooks->publish()->submit(std::move(req), [services, self, sid, room, client_ts, client_seq,
                                                   original = std::string(text)](publish_verdict v) mutable {
        services->invoke_on(self, [sid, room, client_ts, client_seq, v = std::move(v),
                                   original = std::move(original)](chat_service& svc) mutable {
            svc.published(sid, room, std::move(v), std::move(original), client_ts, client_seq);
        });
    });
}

void chat_service::published(std::uint64_t sid, room_id room, publish_verdict v, std::string text,
                             std::uint64_t client_ts, std::uint64_t client_seq) {
    STRIX_ASSERT_OWNER(shard_, "chat_service::published");
    player* p = find(sid);
    if (p == nullptr) return;  // the session closed while the hook judged
    switch (v.act) {
        case publish_verdict::action::accept: send_chat(*p, room, text, client_ts, client_seq); break;
        case publish_verdict::action::rewrite: send_chat(*p, room, v.text, client_ts, client_seq); break;
        case publish_verdict::action::reject: {
            bump(counters_.sends_refused);
            // A hook that failed (fail-closed) is the server's trouble: retry later. A verdict is final.
            std::string reason = v.hook_failed ? "message not stored: " + v.reason + " (retry later)"
                                               : "refused by the application: " + v.reason;
            if (reason.size() > max_reason) {
                std::size_t n = max_reason;
                while (n > 0 && (static_cast<unsigned char>(reason[n]) & 0xC0) == 0x80) --n;  // whole UTF-8 characters
                reason.resize(n);
            }
            send_error(*p->sess, proto::msg_type::chat_req,
                       v.hook_failed ? proto::error_code::server_busy : proto::error_code::forbidden, reason);
            break;
        }
    }
    complete(*p, player::pending_op::publish);
}

}  // namespace strix::chat
