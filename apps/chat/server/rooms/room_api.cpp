// room_host's part of the server API (docs/api.md): a room created by the application, with an
// account as its owner that has no session in it yet (it is put in at its next login, as any
// member is), or with nobody.

#include "room_host.hpp"

#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/server/service/hook_events.hpp"

namespace strix::chat {

void room_host::create_for(room_id id, std::string name, std::uint64_t owner_id, std::string owner_name,
                           std::function<void(bool)> done) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::create_for");
    const std::int64_t now = wall_clock_us();
    auto created = order_.write(room_change{room_change::kind::created, id.value(), 0, name, now});
    if (!created) {
        bump(counters_.server_busy);
        done(false);
        return;
    }
    std::uint64_t ticket = *created;
    if (owner_id != 0) {
        room_change owner{room_change::kind::joined, id.value(), owner_id, {}, now};
        owner.role = 2;
        ticket = *order_.write(std::move(owner), true);  // completes the admitted create
    }
    auto [it, inserted] = rooms_.try_emplace(id, id, std::move(name), ctx_.eng.shard_count());
    room& r = it->second;
    if (owner_id != 0) {
        r.mark_absent(owner_id, owner_name);
        r.set_role(owner_id, 2);
    }
    seq_->watch(r);
    hook_events::room_changed(ctx_, webhook_kind::room_created, r, owner_id, owner_name);
    if (owner_id != 0) hook_events::room_changed(ctx_, webhook_kind::member_joined, r, owner_id, owner_name);
    set_gauge(counters_.rooms, rooms_.size());
    order_.after_commit(ticket, [done = std::move(done)] { done(true); });
}

}  // namespace strix::chat
