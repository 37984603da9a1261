#include "room_host.hpp"

#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/server/service/hook_events.hpp"

#include <strix/core/log.hpp>

#include <algorithm>
#include <chrono>

namespace strix::chat {
room_host::room_host(chat_service& service, chat_context& ctx, unsigned self, chat_counters& counters)
    : service_(service),
      ctx_(ctx),
      self_(self),
      counters_(counters),
      notice_timer_([this] { flush_notices(); }),
      order_(ctx.writer, self, ctx.options.ack == ack_mode::stored),
      seq_(make_room_sequencer(*this, ctx, self, counters)) {}

room_host::~room_host() = default;

void room_host::restore(stored_room stored) {
    const room_id id(stored.id);
    auto [it, inserted] = rooms_.try_emplace(id, id, std::move(stored.name), ctx_.eng.shard_count());
    room& r = it->second;
    r.restore_seq(stored.last_seq);
    for (std::size_t i = 0; i < stored.members.size(); ++i) {
        r.mark_absent(stored.members[i], i < stored.member_names.size() ? stored.member_names[i] : std::string());
        if (i < stored.member_roles.size()) r.set_role(stored.members[i], stored.member_roles[i]);
    }
    r.set_kind(stored.kind);
    for (const room_sanction& s : stored.sanctions) r.sanction(s.account_id, s.kind, s.until_us);
    for (const auto& [blocker, blocked] : stored.blocks) r.set_block(blocker, blocked, true);
    set_gauge(counters_.rooms, rooms_.size());
}

room* room_host::find(room_id id) noexcept {
    auto it = rooms_.find(id);
    return it == rooms_.end() ? nullptr : &it->second;
}

void room_host::deliver(unsigned to, room_event ev, std::uint64_t ticket) {
    if (order_.pass(to, ev, ticket)) send_event(to, std::move(ev));
}

void room_host::send_event(unsigned to, room_event ev) {
    if (to != self_) bump(counters_.cross_shard_posts);
    service_.container().invoke_on(to, [ev = std::move(ev)](chat_service& svc) mutable { svc.apply(ev); });
}

void room_host::committed(std::uint64_t upto) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::committed");
    order_.committed(upto, [this](unsigned to, room_event&& ev) { send_event(to, std::move(ev)); });
}

void room_host::fan_out(const room& r, room_event::kind what, std::uint64_t subject, unsigned subject_shard,
                        const shared_buffer_ptr& to_subject, const shared_buffer_ptr& to_members, std::uint64_t ticket,
                        std::uint64_t seq, std::uint64_t account) {
    bump(counters_.broadcasts);
    // Encoded once for the whole broadcast, and only when a WebSocket member will take it.
    const shared_buffer_ptr to_members_ws =
        to_members && r.ws_members() != 0 ? frames::ws_message(to_members) : nullptr;
    for (unsigned s = 0; s < r.shard_count(); ++s) {
        bool subject_here = subject != 0 && s == subject_shard;
        if (r.members_on(s) == 0 && !subject_here) continue;
        if (!to_members && !subject_here) continue;  // a join or leave whose notice waits: only the subject's shard
        room_event ev;
        ev.room = r.id();
        ev.what = what;
        ev.subject = subject;
        if (subject_here) ev.to_subject = to_subject;
        ev.to_members = to_members;
        ev.seq = seq;
        ev.account = account;
        ev.to_members_ws = to_members_ws;
        deliver(s, std::move(ev), ticket);
    }
}

void room_host::fail(unsigned shard, std::uint64_t session_id, room_id id, proto::msg_type request,
                     proto::error_code code, const char* reason) {
    service_.container().invoke_on(shard, [session_id, id, request, code, reason](chat_service& svc) {
        svc.request_failed(session_id, id, request, code, reason);
    });
}

void room_host::create(room_id id, std::string name, member creator) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::create");
    const std::uint64_t subject = creator.session_id;
    const unsigned subject_shard = creator.shard;
    const std::int64_t now = wall_clock_us();
    // The room, then its first member, in the database before create_room_res (--ack stored).
    // The second write may exceed the queue's capacity: it completes one that was admitted.
    if (!order_.write(room_change{room_change::kind::created, id.value(), 0, name, now})) {
        bump(counters_.server_busy);
        fail(subject_shard, subject, id, proto::msg_type::create_room_req, proto::error_code::server_busy,
             "the database queue is full; retry later");
        return;
    }
    // Its creator owns it.
    room_change owner{room_change::kind::joined, id.value(), creator.player_id, {}, now};
    owner.role = 2;
    const std::uint64_t ticket = *order_.write(std::move(owner), true);
    auto [it, inserted] = rooms_.try_emplace(id, id, std::move(name), ctx_.eng.shard_count());
    room& r = it->second;
    const std::uint64_t player_id = creator.player_id;
    const std::string player_name = creator.name;
    creator.joined_us = now;
    r.add(std::move(creator));
    r.set_role(player_id, 2);
    seq_->watch(r);
    seq_->announce(r, presence_change::joined, player_id, player_name);
    hook_events::room_changed(ctx_, webhook_kind::room_created, r, player_id, player_name);
    hook_events::room_changed(ctx_, webhook_kind::member_joined, r, player_id, player_name);
    set_gauge(counters_.rooms, rooms_.size());
    fan_out(r, room_event::kind::joined, subject, subject_shard, frames::create_room_res(r.summary()), nullptr, ticket);
}

void room_host::join(room_id id, member m, bool rejoin, bool after_load) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::join");
    auto it = rooms_.find(id);
    if (it != rooms_.end() && it->second.stale() && !after_load) {
        // Emptied by a kick or ban in this turn or before: still followed until unwatched here.
        if (!it->second.unwatched()) seq_->unwatch(it->second);
        notices_.drop(id);
        rooms_.erase(it);
        it = rooms_.end();
    }
    if (it == rooms_.end()) {
        if (!after_load && seq_->load(id, m, rejoin)) return;  // held elsewhere (cluster: another node made it)
        // A rejoin finds its room gone when the last member left meanwhile: nothing to say.
        fail(m.shard, m.session_id, id, proto::msg_type::join_room_req, proto::error_code::unknown_room,
             rejoin ? nullptr : "no such room");
        return;
    }
    room& r = it->second;
    // Cluster mode, the node's first session in the room: who is online on the other nodes is
    // read first, so join_room_res can say it.
    if (seq_->defer_join(r, m, rejoin)) return;
    const std::uint64_t subject = m.session_id;
    const unsigned subject_shard = m.shard;
    if (r.contains(subject)) {
        fail(subject_shard, subject, id, proto::msg_type::join_room_req, proto::error_code::already_in_room,
             rejoin ? nullptr : "already a member of this room");
        return;
    }
    // A direct room is its pair's only; a banned account stays out until the ban ends.
    if (r.direct() && r.account(m.player_id) == nullptr) {
        fail(subject_shard, subject, id, proto::msg_type::join_room_req, proto::error_code::forbidden,
             rejoin ? nullptr : "a direct room is for its two accounts only");
        return;
    }
    if (r.banned(m.player_id, wall_clock_us())) {
        fail(subject_shard, subject, id, proto::msg_type::join_room_req, proto::error_code::banned,
             rejoin ? nullptr : "banned from this room");
        return;
    }
    // The join point: every message up to it went out before this event, and later ones reach
    // the newcomer live, so resume must not give them as well. A new member has read nothing
    // before it: its read marker starts there (stored with the join).
    const std::uint64_t join_seq = seq_->join_point(r);
    // The account belongs here from now on; a member's (a rejoin, or a session of an offline
    // member joining by hand) already does: nothing to store.
    std::uint64_t ticket = 0;
    if (!rejoin && r.account(m.player_id) == nullptr) {
        auto t = order_.write(
            room_change{room_change::kind::joined, id.value(), m.player_id, {}, wall_clock_us(), join_seq});
        if (!t) {
            bump(counters_.server_busy);
            fail(subject_shard, subject, id, proto::msg_type::join_room_req, proto::error_code::server_busy,
                 "the database queue is full; retry later");
            return;
        }
        ticket = *t;
    }
    const std::uint64_t player_id = m.player_id;
    const std::string name = m.name;
    m.joined_us = wall_clock_us();
    // Online on another node already (cluster mode): nothing changes for the others here.
    const bool elsewhere = seq_->online_elsewhere(id, player_id);
    const room::added what = r.add(std::move(m));
    if (r.size() == 1) seq_->watch(r);
    flush_notices(r);  // earlier changes: the newcomer sees their outcome in its member list
    if (what == room::added::new_member && !rejoin) {
        r.account_mut(player_id)->last_read = join_seq;
        hook_events::room_changed(ctx_, webhook_kind::member_joined, r, player_id, name);
    }
    fan_out(r, room_event::kind::joined, subject, subject_shard, seq_->join_room_res(r, join_seq), nullptr, ticket,
            join_seq);
    // A new member is announced as one; a member coming back as presence; a further session of
    // an online member not at all (nothing changed for the others).
    // A large room announces nothing: each join would cost a notice to every member (N joins,
    // N²/2 notices); join_room_res and room_info carry the counts instead.
    if (what == room::added::new_member && !quiet(r))
        notify(r, subject, subject_shard, true, frames::member_joined(id.value(), player_id, name));
    else if (what == room::added::came_online && !elsewhere && !quiet(r))
        notify(r, subject, subject_shard, false, frames::member_presence(id.value(), player_id, name, true));
    if (what == room::added::new_member || what == room::added::came_online)
        seq_->announce(r, what == room::added::new_member ? presence_change::joined : presence_change::online,
                       player_id, name);
}

void room_host::leave(room_id id, std::uint64_t session_id, unsigned session_shard, bool reply) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::leave");
    auto it = rooms_.find(id);
    std::optional<member> gone;
    // The owner leaving for good hands the room to its oldest admin, else its oldest member.
    if (it != rooms_.end() && reply && owner_stays(it->second, session_id)) hand_over(it->second, session_id);
    if (it != rooms_.end()) gone = it->second.remove(session_id);
    if (!gone) {
        if (reply)
            fail(session_shard, session_id, id, proto::msg_type::leave_room_req, proto::error_code::not_in_room,
                 "not in that room");
        return;
    }
    room& r = it->second;
    if (r.empty()) seq_->unwatch(r);
    // Belonging is per account: another session of it in the room keeps the account online.
    const bool last_session = !r.has_player(gone->player_id);
    std::uint64_t ticket = 0;
    bool deleted = false;
    if (last_session && reply) {
        // Left on purpose: the account no longer belongs here, and a room nobody belongs to is
        // deleted, as the sequencer decides (a cluster node's view of who belongs may be stale:
        // the database decides there, once this leave is stored). The write may not fail (a
        // leave is never refused): it follows a join or create that was admitted within the
        // queue's capacity.
        const std::int64_t now = wall_clock_us();
        r.forget(gone->player_id);
        ticket = *order_.write(room_change{room_change::kind::left, id.value(), gone->player_id, {}, now}, true);
        deleted = seq_->left(r, now, ticket);
        hook_events::room_changed(ctx_, webhook_kind::member_left, r, gone->player_id, gone->name);
        if (deleted) hook_events::room_changed(ctx_, webhook_kind::room_deleted, r, 0, {});
    }
    fan_out(r, room_event::kind::left, session_id, session_shard, reply ? frames::leave_room_res(id.value()) : nullptr,
            nullptr, ticket);
    if (last_session && reply) {
        if (notices_.cancel_join(id, session_id))
            bump(counters_.notices_coalesced);  // joined and left unnoticed: neither notice is sent
        else if (!r.empty() && !quiet(r))
            notify(r, session_id, session_shard, false, frames::member_left(id.value(), gone->player_id, gone->name));
    } else if (last_session && !r.empty() && !seq_->online_elsewhere(id, gone->player_id) && !quiet(r)) {
        // Disconnected: still a member, now offline (its member_joined, if pending, still goes out first).
        notify(r, session_id, session_shard, false,
               frames::member_presence(id.value(), gone->player_id, gone->name, false));
    }
    if (last_session)
        seq_->announce(r, reply ? presence_change::left : presence_change::offline, gone->player_id, gone->name);
    // Cluster mode: a room without sessions here is not followed any more, so this node's view
    // of it would go stale; the next join reads it from the database again (or finds it gone).
    if (deleted || drops_idle(r)) {
        notices_.drop(id);
        rooms_.erase(it);
        set_gauge(counters_.rooms, rooms_.size());
    }
}

void room_host::chat(chat_request& req) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::chat");
    auto it = rooms_.find(req.room);
    if (it == rooms_.end() || !it->second.contains(req.sender.session_id)) {
        fail(req.sender.shard, req.sender.session_id, req.room, proto::msg_type::chat_req,
             proto::error_code::not_in_room, "not in a room");
        return;
    }
    room& r = it->second;
    const std::uint64_t who = req.sender.player_id;
    if (r.muted(who, wall_clock_us())) {
        bump(counters_.sends_refused);
        fail(req.sender.shard, req.sender.session_id, req.room, proto::msg_type::chat_req, proto::error_code::muted,
             "muted in this room");
        return;
    }
    if (r.direct() && r.blocks(r.other_member(who), who)) {
        bump(counters_.sends_refused);
        fail(req.sender.shard, req.sender.session_id, req.room, proto::msg_type::chat_req, proto::error_code::blocked,
             "that account does not take your direct messages");
        return;
    }
    seq_->chat(r, req);
}

bool room_host::owner_stays(const room& r, std::uint64_t session_id) const {
    // The owner's last session leaving for good, with other members left behind.
    const room_seat* m = r.find(session_id);
    if (m == nullptr || r.role_of(m->player_id) != 2 || r.accounts().size() < 2) return false;
    const room_member* a = r.account(m->player_id);
    return a != nullptr && a->sessions == 1;
}

void room_host::mark_read(room_id id, const member& m, std::uint64_t seq) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::mark_read");
    auto it = rooms_.find(id);
    if (it == rooms_.end() || !it->second.contains(m.session_id)) {
        fail(m.shard, m.session_id, id, proto::msg_type::read_req, proto::error_code::not_in_room, "not in that room");
        return;
    }
    room& r = it->second;
    room_member* a = r.account_mut(m.player_id);
    seq = std::min(seq, r.last_seq());
    if (a == nullptr || seq <= a->last_read) {
        // Nothing to store: the answer says where the marker is.
        fan_out(r, room_event::kind::read, m.session_id, m.shard, frames::read_res(id.value(), a ? a->last_read : 0),
                nullptr);
        return;
    }
    auto t = order_.write(room_change{room_change::kind::read, id.value(), m.player_id, {}, wall_clock_us(), seq});
    if (!t) {
        bump(counters_.server_busy);
        fail(m.shard, m.session_id, id, proto::msg_type::read_req, proto::error_code::server_busy,
             "the database queue is full; retry later");
        return;
    }
    a->last_read = seq;
    fan_out(r, room_event::kind::read, m.session_id, m.shard, frames::read_res(id.value(), seq),
            frames::read_marker(id.value(), seq), *t, 0, m.player_id);
    seq_->marked_read(r, m.player_id, seq);
}

void room_host::typing(room_id id, const member& m) {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::typing");
    auto it = rooms_.find(id);
    if (it == rooms_.end() || !it->second.contains(m.session_id)) {
        fail(m.shard, m.session_id, id, proto::msg_type::typing_req, proto::error_code::not_in_room,
             "not in that room");
        return;
    }
    // In a large room typing is noise to thousands and a notice to every member per keystroke
    // burst: dropped and counted like the member notices (protocol.md, "Large rooms").
    if (quiet(it->second)) return;
    fan_out(it->second, room_event::kind::notice, m.session_id, m.shard, nullptr,
            frames::typing(id.value(), m.player_id, m.name));
    seq_->typed(it->second, m.player_id, m.name);
}

bool room_host::quiet(const room& r) {
    if (!r.large(ctx_.options.member_list_limit)) return false;
    bump(counters_.notices_suppressed);
    return true;
}

void room_host::notify(const room& r, std::uint64_t subject, unsigned subject_shard, bool joined,
                       shared_buffer_ptr frame) {
    // After stop() (the shard is exiting) nothing may arm the timer: late leaves go out at once.
    if (ctx_.options.notice_delay.count() <= 0 || stopped_) {
        fan_out(r, room_event::kind::notice, subject, subject_shard, nullptr, frame);
        return;
    }
    notices_.add(r.id(), {subject, subject_shard, joined, std::move(frame)});
    shard& sh = ctx_.eng.at(self_);
    if (!notice_timer_.armed()) sh.timers().schedule(notice_timer_, sh.ticks_for(ctx_.options.notice_delay));
}

void room_host::send_notices(const room& r) {
    for (auto& n : notices_.take(r.id()))
        fan_out(r, room_event::kind::notice, n.subject, n.subject_shard, nullptr, n.frame);
}

void room_host::flush_notices() {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::flush_notices");
    for (room_id id : notices_.rooms()) {
        auto it = rooms_.find(id);
        if (it == rooms_.end()) {
            notices_.drop(id);
            continue;
        }
        flush_notices(it->second);
    }
}

void room_host::stop() {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::stop");
    stopped_ = true;
    seq_->stop();
    ctx_.eng.at(self_).timers().cancel(notice_timer_);  // what waits has nobody left to tell
}

void room_host::forget_deleted(room_id id) {
    auto it = rooms_.find(id);
    if (it == rooms_.end()) return;
    if (!it->second.empty()) {
        // A session joined here meanwhile (see docs/architecture.md: a join racing the deletion).
        log_limited(log_level::warn, "room {}: deleted while this node has sessions in it", id.value());
        return;
    }
    notices_.drop(id);
    rooms_.erase(it);
    set_gauge(counters_.rooms, rooms_.size());
}

std::vector<room_summary> room_host::summaries() const {
    STRIX_ASSERT_OWNER(service_.home(), "room_host::summaries");
    std::vector<room_summary> out;
    out.reserve(rooms_.size());
    for (const auto& [id, r] : rooms_) out.push_back(r.summary());
    return out;
}

}  // namespace strix::chat
