// room_host's roles and moderation (docs/protocol.md, "Roles and moderation"), direct rooms and
// blocks. A moderator's action is checked on the room's owner shard of the node that got the
// request, stored, and sent as a notice: a message in the room's order, which every node (this
// one included) applies to its copy of the room when it goes out (apply_notice).
#include "notice.hpp"
#include "room_host.hpp"

#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/server/service/hook_events.hpp"

#include <strix/core/log.hpp>

namespace strix::chat {
namespace {

using proto::error_code;
using proto::mod_action;

constexpr std::uint8_t role_member = 0, role_admin = 1, role_owner = 2;
constexpr std::uint8_t sanction_ban = 1, sanction_mute = 2;
// The longest ban or mute with an end: a year (a longer ban is one without an end).
constexpr std::uint32_t max_sanction_seconds = 365u * 24 * 3600;

bool acts_on_member(mod_action a) {
    return a == mod_action::kick || a == mod_action::mute || a == mod_action::promote || a == mod_action::demote ||
           a == mod_action::transfer;
}

bool owner_only(mod_action a) {
    return a == mod_action::promote || a == mod_action::demote || a == mod_action::transfer;
}

}  // namespace

std::optional<room_host::refusal> room_host::check(room& r, const moderation& m, std::int64_t) const {
    const mod_action a = m.action;
    if (a == mod_action::none || a > mod_action::MAX) return refusal{error_code::bad_request, "unknown action"};
    if (r.direct()) return refusal{error_code::forbidden, "a direct room has no moderators"};
    const std::uint8_t mine = m.application ? role_owner : r.role_of(m.actor.player_id);
    if (owner_only(a) ? mine != role_owner : mine < role_admin)
        return refusal{error_code::forbidden,
                       owner_only(a) ? "only the room's owner may do that" : "only the owner and admins moderate"};
    if (a == mod_action::erase) {
        if (m.seq == 0 || m.seq > r.last_seq()) return refusal{error_code::bad_request, "no message with that seq"};
        return std::nullopt;
    }
    if (m.target == 0) return refusal{error_code::bad_request, "name the target account (target)"};
    if (m.target == m.actor.player_id) return refusal{error_code::bad_request, "not on yourself"};
    // On one node the room knows every member; in cluster mode one that joined through another
    // node may be unknown here: the action goes ahead (on a non-member it changes nothing).
    if (acts_on_member(a) && r.account(m.target) == nullptr && seq_->knows_all_members())
        return refusal{error_code::not_in_room, "the target is not a member"};
    // Nobody acts on the owner; only the owner acts on an admin.
    const std::uint8_t theirs = r.role_of(m.target);
    if (theirs >= mine)
        return refusal{error_code::forbidden,
                       m.application ? "not on the room's owner" : "the target's role is not below yours"};
    if (a == mod_action::promote && theirs != role_member)
        return refusal{error_code::bad_request, "the target is an admin already"};
    if (a == mod_action::demote && theirs != role_admin) return refusal{error_code::bad_request, "not an admin"};
    if ((a == mod_action::mute && m.seconds == 0) || m.seconds > max_sanction_seconds)
        return refusal{error_code::bad_request, "seconds: 1-31536000 for a mute, 0-31536000 for a ban (0: no end)"};
    return std::nullopt;
}

void room_host::moderate_for_api(moderation m) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::moderate_for_api");
    const room_id id = m.room;
    hold_for_api(id, [this, m = std::move(m)](room* r, bool failed) mutable {
        if (r != nullptr) return moderate(std::move(m));
        if (failed) return m.answer(error_code::server_busy, "the database is unavailable; retry later");
        m.answer(error_code::unknown_room, "no such room");
    });
}

void room_host::moderate(moderation m) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::moderate");
    // The application's action holds the room (moderate_for_api) until its notice is taken.
    const bool held_for_api = m.application;
    const auto refuse = [&](error_code code, const char* reason) {
        if (m.answer)
            m.answer(code, reason);
        else
            fail(m.actor.shard, m.actor.session_id, m.room, proto::msg_type::moderate_req, code, reason);
        if (held_for_api) release_for_api(m.room);
    };
    auto it = rooms_.find(m.room);
    if (it == rooms_.end() || (!m.application && !it->second.contains(m.actor.session_id))) {
        refuse(m.application ? error_code::unknown_room : error_code::not_in_room,
               m.application ? "no such room" : "not in that room");
        return;
    }
    room& r = it->second;
    const std::int64_t now = wall_clock_us();
    if (auto no = check(r, m, now)) {
        bump(counters_.moderation_refused);
        refuse(no->code, no->reason);
        return;
    }
    notice n;
    n.action = m.action;
    n.target = m.action == mod_action::erase ? 0 : m.target;
    n.seq = m.action == mod_action::erase ? m.seq : 0;
    if (m.action == mod_action::ban || m.action == mod_action::mute)
        n.until_us = m.seconds == 0 ? 0 : now + std::int64_t{m.seconds} * 1'000'000;
    const room_member* t = r.account(m.target);
    const std::string target_name = t ? t->name : std::string();
    n.target_name = target_name;
    // The changes, in the order the database applies them, before the notice's message.
    std::vector<room_change> changes;
    auto change = [&](room_change::kind k, std::uint64_t account) {
        room_change c{k, m.room.value(), account, {}, now};
        c.by = m.actor.player_id;
        changes.push_back(std::move(c));
        return &changes.back();
    };
    switch (m.action) {
        case mod_action::kick: change(room_change::kind::left, m.target); break;
        case mod_action::ban: {
            auto* c = change(room_change::kind::sanction, m.target);
            c->sanction = sanction_ban;
            c->until_us = n.until_us;
            change(room_change::kind::left, m.target);  // a no-op for a non-member
            break;
        }
        case mod_action::mute: {
            auto* c = change(room_change::kind::sanction, m.target);
            c->sanction = sanction_mute;
            c->until_us = n.until_us;
            break;
        }
        case mod_action::unban: change(room_change::kind::lift, m.target)->sanction = sanction_ban; break;
        case mod_action::unmute: change(room_change::kind::lift, m.target)->sanction = sanction_mute; break;
        case mod_action::erase: change(room_change::kind::erase, 0)->seq = m.seq; break;
        case mod_action::promote:
        case mod_action::demote:
            n.role = m.action == mod_action::promote ? proto::member_role::admin : proto::member_role::member;
            change(room_change::kind::role, m.target)->role = static_cast<std::uint8_t>(n.role);
            break;
        case mod_action::transfer:
            n.role = proto::member_role::owner;
            change(room_change::kind::role, m.target)->role = role_owner;
            change(room_change::kind::role, m.actor.player_id)->role = role_admin;
            break;
        default: break;
    }
    // The first write may find the queue full (nothing done); the rest complete an admitted one.
    std::uint64_t ticket = 0;
    for (std::size_t i = 0; i < changes.size(); ++i) {
        auto written = order_.write(std::move(changes[i]), i > 0);
        if (!written) {
            bump(counters_.server_busy);
            refuse(error_code::server_busy, "the database queue is full; retry later");
            return;
        }
        ticket = *written;
    }
    bump(counters_.moderations);
    chat_request req;
    req.room = m.room;
    req.sender = std::move(m.actor);
    req.text = encode_notice(n);
    req.kind = static_cast<std::uint8_t>(proto::msg_kind::notice);
    // The notice goes out once its changes are stored: a node that reads the room from the
    // database after hearing of it (a join there) reads them too.
    order_.after_commit(ticket, [this, req = std::move(req), answer = std::move(m.answer), held_for_api]() mutable {
        const room_id id = req.room;
        // In cluster mode the notice reaches the other nodes through Redis, like a session's;
        // the room stays held here until chat_publish answered (the publish may wait for its floor).
        if (held_for_api) req.taken = [this, id](const post_taken&) { release_for_api(id); };
        if (room* held = find(id))
            seq_->chat(*held, req);
        else if (held_for_api)
            release_for_api(id);
        if (answer) answer(error_code::none, {});
    });
}

void room_host::hand_over(room& r, std::uint64_t session_id) {
    const room_seat* owner = r.find(session_id);
    if (owner == nullptr) return;
    const room_member* next = nullptr;
    for (const room_member& a : r.accounts())
        if (a.player_id != owner->player_id && a.role == role_admin) {
            next = &a;
            break;
        }
    if (next == nullptr)
        for (const room_member& a : r.accounts())
            if (a.player_id != owner->player_id) {
                next = &a;
                break;
            }
    if (next == nullptr) return;
    room_change c{room_change::kind::role, r.id().value(), next->player_id, {}, wall_clock_us()};
    c.role = role_owner;
    c.by = owner->player_id;
    // May not fail: a leave is never refused (it completes an admitted join's writes).
    const std::uint64_t ticket = *order_.write(std::move(c), true);
    notice n;
    n.action = mod_action::transfer;
    n.target = next->player_id;
    n.role = proto::member_role::owner;
    n.target_name = next->name;
    chat_request req;
    req.room = r.id();
    req.sender = r.member_of(*owner);
    req.text = encode_notice(n);
    req.kind = static_cast<std::uint8_t>(proto::msg_kind::notice);
    r.set_role(next->player_id, role_owner);
    // As moderate(): out once stored. In cluster mode a node without sessions left in the room
    // drops it before then: the other nodes read the new owner at their next load of the room.
    order_.after_commit(ticket, [this, req = std::move(req)]() mutable {
        if (room* held = find(req.room)) seq_->chat(*held, req);
    });
}

void room_host::apply_notice(room& r, std::uint64_t actor, std::string_view text, std::uint64_t ticket,
                             std::int64_t at_us) {
    auto n = decode_notice(text);
    if (!n) {
        log_limited(log_level::warn, "room {}: undecodable notice", r.id().value());
        return;
    }
    switch (n->action) {
        case mod_action::ban:
            // Whenever its sessions joined (a node that read the room before the ban was
            // stored let them in): a ban in force keeps the account out.
            r.sanction(n->target, sanction_ban, n->until_us);
            remove_account(r, n->target, ticket, 0);
            break;
        case mod_action::kick: remove_account(r, n->target, ticket, at_us); break;
        case mod_action::unban: r.lift(n->target, sanction_ban); break;
        case mod_action::mute: r.sanction(n->target, sanction_mute, n->until_us); break;
        case mod_action::unmute: r.lift(n->target, sanction_mute); break;
        case mod_action::promote:
        case mod_action::demote: r.set_role(n->target, static_cast<std::uint8_t>(n->role)); break;
        case mod_action::transfer:
            r.set_role(actor, role_admin);
            r.set_role(n->target, role_owner);
            break;
        default: break;  // erase: the tombstone is the database's; members have the notice
    }
}

void room_host::remove_account(room& r, std::uint64_t account, std::uint64_t ticket, std::int64_t before_us) {
    // A session that joined after the kick was decided stays: this node may have read the room
    // from the database before the kick's notice was stored and hear of it only now.
    std::vector<std::uint64_t> sessions;
    bool rejoined = false;
    for (const room_seat& m : r.members()) {
        if (m.player_id != account) continue;
        if (before_us != 0 && m.joined_us > before_us)
            rejoined = true;
        else
            sessions.push_back(m.session_id);
    }
    std::string name;
    if (const room_member* a = r.account(account)) name = a->name;
    for (std::uint64_t sid : sessions) {
        std::optional<member> gone = r.remove(sid);
        if (!gone) continue;
        fan_out(r, room_event::kind::removed, sid, gone->shard, frames::leave_room_res(r.id().value()), nullptr,
                ticket);
    }
    const bool had_sessions = !sessions.empty();
    if (rejoined) return;  // it belongs again
    r.forget(account);
    hook_events::room_changed(ctx_, webhook_kind::member_left, r, account, name);
    if (had_sessions) seq_->announce(r, presence_change::left, account, name);
    if (!r.empty()) return;
    if (seq_->holds_idle_rooms()) {
        seq_->unwatch(r);
        return;
    }
    // Cluster mode: its view goes stale, and the next join reads it from the database again.
    // Neither erased nor unwatched here: the sequencer's feed that called may still be walking
    // its state for the room; after this turn, unless a join took it meanwhile.
    r.mark_stale();
    ctx_.eng.at(self_).post_local([this, id = r.id()] {
        room* held = find(id);
        if (held != nullptr && held->stale() && !held->unwatched()) {
            seq_->unwatch(*held);
            held->mark_unwatched();
        }
    });
}

void room_host::adopt_direct(stored_room info, bool created) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::adopt_direct");
    if (room* r = find(room_id(info.id))) {
        // Known here: a member that had left belongs again.
        for (std::size_t i = 0; i < info.members.size(); ++i) r->mark_absent(info.members[i], info.member_names[i]);
    } else if (seq_->holds_idle_rooms() || created) {
        // Everything about a room made just now is in `info` (no message, no block).
        restore(std::move(info));
    }
    // Otherwise (cluster mode, a room made earlier) the next join reads it from the database.
}

void room_host::enter_everywhere(room_id id, const std::vector<std::uint64_t>& accounts) {
    for (std::uint64_t account : accounts)
        for (unsigned s = 0; s < ctx_.eng.shard_count(); ++s)
            service_.container().invoke_on(s, [account, id](chat_service& svc) { svc.enter_direct(account, id); });
}

void room_host::open_direct(stored_room info, member m, std::vector<std::uint64_t> announce, bool created) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::open_direct");
    const room_id id(info.id);
    stored_room told = info;  // for the other nodes
    adopt_direct(std::move(info), created);
    join(id, std::move(m), true);
    // Posted from here, after the room is held: their joins reach this shard after it.
    enter_everywhere(id, announce);
    if (!announce.empty()) seq_->direct_opened(told, created);
}

stored_room room_host::direct_room_info(std::uint64_t id, const account& a, const account& b) {
    stored_room info;
    info.id = id;
    info.kind = 1;
    const account& low = a.id < b.id ? a : b;
    const account& high = a.id < b.id ? b : a;
    info.members = {low.id, high.id};
    info.member_names = {low.name, high.name};
    info.member_roles = {0, 0};
    return info;
}

void room_host::set_block(room_id id, std::uint64_t blocker, std::uint64_t blocked, bool on) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::set_block");
    if (room* r = find(id)) r->set_block(blocker, blocked, on);
}

}  // namespace strix::chat
