// room_host's part of the server API (docs/api.md): a room created by the application, with an
// account as its owner that has no session in it yet (it is put in at its next login, as any
// member is), or with nobody; and a room deleted by it, its sessions told with leave_room_res.

#include "room_host.hpp"

#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/server/net/frames.hpp"
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

void room_host::delete_for(room_id id, std::function<void(int, const char*)> done) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::delete_for");
    auto it = rooms_.find(id);
    if (it == rooms_.end()) return done(404, "no such room (or it was deleted)");
    room& r = it->second;
    if (r.direct()) return done(403, "a direct room belongs to its two accounts");
    auto ticket = order_.write(room_change{room_change::kind::deleted, id.value(), 0, {}, wall_clock_us()});
    if (!ticket) {
        bump(counters_.server_busy);
        return done(503, "the database queue is full; retry later");
    }
    // Every session leaves (its shard drops the room when the event arrives, after the commit).
    std::vector<std::uint64_t> sessions;
    for (const member& m : r.members()) sessions.push_back(m.session_id);
    for (std::uint64_t sid : sessions)
        if (std::optional<member> gone = r.remove(sid))
            fan_out(r, room_event::kind::removed, sid, gone->shard, frames::leave_room_res(id.value()), nullptr,
                    *ticket);
    hook_events::room_changed(ctx_, webhook_kind::room_deleted, r, 0, {});
    seq_->unwatch(r);
    notices_.drop(id);
    rooms_.erase(it);
    set_gauge(counters_.rooms, rooms_.size());
    order_.after_commit(*ticket, [done = std::move(done)] { done(204, nullptr); });
}

}  // namespace strix::chat
