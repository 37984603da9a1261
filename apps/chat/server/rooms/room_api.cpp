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
    // Cluster mode: held only until the answer (nobody here is in it; a join anywhere reads it
    // from the database, where it is by then).
    if (seq_->holds_idle_rooms())
        seq_->watch(r);
    else
        ++api_holds_[id];
    hook_events::room_changed(ctx_, webhook_kind::room_created, r, owner_id, owner_name);
    if (owner_id != 0) hook_events::room_changed(ctx_, webhook_kind::member_joined, r, owner_id, owner_name);
    set_gauge(counters_.rooms, rooms_.size());
    order_.after_commit(ticket, [this, id, done = std::move(done)] {
        done(true);
        if (!seq_->holds_idle_rooms()) release_for_api(id);
    });
}

void room_host::delete_for(room_id id, std::function<void(int, const char*)> done) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::delete_for");
    hold_for_api(id, [this, id, done = std::move(done)](room* found, bool failed) mutable {
        if (found == nullptr)
            return done(failed ? 503 : 404,
                        failed ? "the database is unavailable; retry later" : "no such room (or it was deleted)");
        room& r = *found;
        if (r.direct()) {
            done(403, "a direct room belongs to its two accounts");
            return release_for_api(id);
        }
        auto ticket = order_.write(room_change{room_change::kind::deleted, id.value(), 0, {}, wall_clock_us()});
        if (!ticket) {
            bump(counters_.server_busy);
            done(503, "the database queue is full; retry later");
            return release_for_api(id);
        }
        hook_events::room_changed(ctx_, webhook_kind::room_deleted, r, 0, {});
        remove_everyone(r, *ticket);
        // The other nodes' sessions leave once the deletion is stored: a login there that puts
        // its account back in its rooms does not find this one any more.
        order_.after_commit(*ticket, [this, id, done = std::move(done)] {
            seq_->deleted_by_api(id);
            done(204, nullptr);
            release_for_api(id);
        });
    });
}

void room_host::drop_deleted(room_id id) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::drop_deleted");
    if (room* r = find(id)) remove_everyone(*r, 0);
}

void room_host::remove_everyone(room& r, std::uint64_t ticket) {
    const room_id id = r.id();
    // Followed (cluster mode) while a session is in it, or until a kick's pending unwatch ran.
    const bool followed = !r.empty() || (r.stale() && !r.unwatched());
    // Every session leaves (its shard drops the room when the event arrives, after the commit).
    std::vector<std::uint64_t> sessions;
    for (const room_seat& m : r.members()) sessions.push_back(m.session_id);
    for (std::uint64_t sid : sessions)
        if (std::optional<member> gone = r.remove(sid))
            fan_out(r, room_event::kind::removed, sid, gone->shard, frames::leave_room_res(id.value()), nullptr,
                    ticket);
    if (followed) seq_->unwatch(r);
    notices_.drop(id);
    rooms_.erase(id);
    set_gauge(counters_.rooms, rooms_.size());
}

void room_host::hold_for_api(room_id id, std::function<void(room*, bool)> then) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::hold_for_api");
    seq_->fetch(id, [this, id, then = std::move(then)](room* r, bool failed) {
        if (r != nullptr) ++api_holds_[id];
        then(r, failed);
    });
}

void room_host::release_for_api(room_id id) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::release_for_api");
    auto h = api_holds_.find(id);
    if (h == api_holds_.end()) return;
    if (--h->second != 0) return;
    api_holds_.erase(h);
    if (room* r = find(id); r != nullptr && drops_idle(*r)) drop(id);
}

bool room_host::drops_idle(const room& r) const {
    return r.empty() && !seq_->holds_idle_rooms() && !api_holds_.contains(r.id());
}

void room_host::drop(room_id id) {
    auto it = rooms_.find(id);
    if (it == rooms_.end()) return;
    if (it->second.stale() && !it->second.unwatched()) seq_->unwatch(it->second);
    notices_.drop(id);
    rooms_.erase(it);
    set_gauge(counters_.rooms, rooms_.size());
}

}  // namespace strix::chat
