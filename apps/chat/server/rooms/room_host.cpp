#include "room_host.hpp"

#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"

#include "apps/chat/storage/chat_log_writer.hpp"

#include <strix/core/log.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <type_traits>

namespace strix::chat {
namespace {

std::int64_t wall_clock_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

room_host::room_host(chat_service& service, chat_context& ctx, unsigned self, chat_counters& counters)
    : service_(service),
      ctx_(ctx),
      self_(self),
      counters_(counters),
      next_counter_(ctx.first_room_counter),
      notice_timer_([this] { flush_notices(); }),
      ack_stored_(ctx.options.ack == ack_mode::stored),
      node_id_(ctx.options.cluster.enabled() ? ctx.options.cluster.node_id : 0) {
    if (node_id_ != 0) {
        // Ids of this node continue above every id in the shared database, whichever node made it.
        next_counter_ = (ctx.first_room_counter >> 16) + 1;
        start_cluster();
    }
}

void room_host::restore(stored_room stored) {
    const room_id id(stored.id);
    auto [it, inserted] = rooms_.try_emplace(id, id, std::move(stored.name), ctx_.eng.shard_count());
    room& r = it->second;
    r.restore_seq(stored.last_seq);
    for (std::size_t i = 0; i < stored.members.size(); ++i)
        r.mark_absent(stored.members[i], i < stored.member_names.size() ? stored.member_names[i] : std::string());
    set_gauge(counters_.rooms, rooms_.size());
}

template <class Write>
std::optional<std::uint64_t> room_host::write(Write w, bool beyond_capacity) {
    const std::uint64_t ticket = ack_stored_ ? next_ticket_ : 0;
    const std::uint64_t tag = ticket == 0 ? 0 : shard_stamp::pack(ticket, self_);
    bool queued;
    if constexpr (std::is_same_v<Write, chat_log_entry>)
        queued = ctx_.writer.try_enqueue(std::move(w), tag);
    else
        queued = ctx_.writer.try_enqueue(std::move(w), tag, beyond_capacity);
    if (!queued) return std::nullopt;
    if (ticket != 0) ++next_ticket_;
    return ticket;
}

// room_host_cluster.cpp queues chat log entries too.
template std::optional<std::uint64_t> room_host::write<chat_log_entry>(chat_log_entry, bool);

void room_host::deliver(unsigned to, room_event ev, std::uint64_t ticket) {
    // Once one event waits, every later one waits behind it: the owner's order is the order
    // every shard applies (with --ack early nothing ever waits: one branch).
    if (ticket > committed_ || !held_.empty()) {
        held_.push_back({ticket, to, std::move(ev)});
        return;
    }
    send_event(to, std::move(ev));
}

void room_host::send_event(unsigned to, room_event ev) {
    if (to != self_) bump(counters_.cross_shard_posts);
    service_.container().invoke_on(to, [ev = std::move(ev)](chat_service& svc) mutable { svc.apply(ev); });
}

void room_host::committed(std::uint64_t upto) {
    // The writer commits in acceptance order and reports the highest ticket per batch, so the
    // reports only grow; a ticket never handed out would be a broken invariant.
    if (upto >= next_ticket_) {
        log(log_level::error, "room_host {}: the writer reported ticket {} committed, but only {} were issued", self_,
            upto, next_ticket_ - 1);
        std::abort();
    }
    if (upto > committed_) committed_ = upto;
    while (!held_.empty() && held_.front().ticket <= committed_) {
        held_event h = std::move(held_.front());
        held_.pop_front();
        send_event(h.to, std::move(h.ev));
    }
    while (!after_commit_.empty() && after_commit_.front().first <= committed_) {
        auto fn = std::move(after_commit_.front().second);
        after_commit_.pop_front();
        fn();
    }
}

void room_host::after_commit(std::uint64_t ticket, std::function<void()> fn) {
    if (ticket <= committed_ && after_commit_.empty()) {
        fn();
        return;
    }
    after_commit_.emplace_back(ticket, std::move(fn));
}

void room_host::fan_out(const room& r, room_event::kind what, std::uint64_t subject, unsigned subject_shard,
                        const shared_buffer_ptr& to_subject, const shared_buffer_ptr& to_members,
                        std::uint64_t ticket, std::uint64_t seq) {
    bump(counters_.broadcasts);
    // Encoded once for the whole broadcast, and only when a WebSocket member will take it.
    const shared_buffer_ptr to_members_ws = to_members && r.ws_members() != 0 ? frames::ws_message(to_members) : nullptr;
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
    const std::uint64_t subject = creator.session_id;
    const unsigned subject_shard = creator.shard;
    const std::int64_t now = wall_clock_us();
    // The room, then its first member, in the database before create_room_res (--ack stored).
    // The second write may exceed the queue's capacity: it completes one that was admitted.
    if (!write(room_change{room_change::kind::created, id.value(), 0, name, now})) {
        bump(counters_.server_busy);
        fail(subject_shard, subject, id, proto::msg_type::create_room_req, proto::error_code::server_busy,
             "the database queue is full; retry later");
        return;
    }
    const std::uint64_t ticket =
        *write(room_change{room_change::kind::joined, id.value(), creator.player_id, {}, now}, true);
    auto [it, inserted] = rooms_.try_emplace(id, id, std::move(name), ctx_.eng.shard_count());
    room& r = it->second;
    const std::uint64_t player_id = creator.player_id;
    const std::string player_name = creator.name;
    r.add(std::move(creator));
    watch(r);
    announce(r, presence_change::joined, player_id, player_name);
    set_gauge(counters_.rooms, rooms_.size());
    fan_out(r, room_event::kind::joined, subject, subject_shard, frames::create_room_res(r.summary()), nullptr, ticket);
}

void room_host::join(room_id id, member m, bool rejoin, bool after_load) {
    auto it = rooms_.find(id);
    if (it == rooms_.end() && clustered() && !after_load) {
        load_room(id, std::move(m), rejoin);  // another node may have made it
        return;
    }
    if (it == rooms_.end()) {
        // A rejoin finds its room gone when the last member left meanwhile: nothing to say.
        fail(m.shard, m.session_id, id, proto::msg_type::join_room_req, proto::error_code::unknown_room,
             rejoin ? nullptr : "no such room");
        return;
    }
    room& r = it->second;
    if (presence_ && !presence_->primed(id)) {
        // Cluster mode, the node's first session in the room: who is online on the other nodes
        // is read first, so join_room_res can say it.
        presence_->prime(id, [this, id, m = std::move(m), rejoin]() mutable { join(id, std::move(m), rejoin, true); });
        return;
    }
    const std::uint64_t subject = m.session_id;
    const unsigned subject_shard = m.shard;
    if (r.contains(subject)) {
        fail(subject_shard, subject, id, proto::msg_type::join_room_req, proto::error_code::already_in_room,
             rejoin ? nullptr : "already a member of this room");
        return;
    }
    // The account belongs here from now on; a member's (a rejoin, or a session of an offline
    // member joining by hand) already does: nothing to store.
    std::uint64_t ticket = 0;
    if (!rejoin && r.account(m.player_id) == nullptr) {
        auto t = write(room_change{room_change::kind::joined, id.value(), m.player_id, {}, wall_clock_us()});
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
    // Online on another node already (cluster mode): nothing changes for the others here.
    const bool elsewhere = presence_ && presence_->online_elsewhere(id, player_id);
    const room::added what = r.add(std::move(m));
    if (r.size() == 1) watch(r);
    flush_notices(r);  // earlier changes: the newcomer sees their outcome in its member list
    // The join point: on one node every message taken so far went out before this event; in
    // cluster mode only those this node delivered did (later ones the feed brought wait behind a
    // commit or a gap and reach the newcomer live), so resume must not give them as well.
    const std::uint64_t join_seq = presence_ ? r.delivered_seq() : r.last_seq();
    auto res = presence_ ? frames::join_room_res(presence_->summary(r), presence_->accounts(r), join_seq)
                         : frames::join_room_res(r.summary(), r.accounts(), join_seq);
    fan_out(r, room_event::kind::joined, subject, subject_shard, res, nullptr, ticket, join_seq);
    // A new member is announced as one; a member coming back as presence; a further session of
    // an online member not at all (nothing changed for the others).
    if (what == room::added::new_member)
        notify(r, subject, subject_shard, true, frames::member_joined(id.value(), player_id, name));
    else if (what == room::added::came_online && !elsewhere)
        notify(r, subject, subject_shard, false, frames::member_presence(id.value(), player_id, name, true));
    if (what == room::added::new_member || what == room::added::came_online)
        announce(r, what == room::added::new_member ? presence_change::joined : presence_change::online, player_id,
                 name);
}

void room_host::leave(room_id id, std::uint64_t session_id, unsigned session_shard, bool reply) {
    auto it = rooms_.find(id);
    std::optional<member> gone;
    if (it != rooms_.end()) gone = it->second.remove(session_id);
    if (!gone) {
        if (reply)
            fail(session_shard, session_id, id, proto::msg_type::leave_room_req, proto::error_code::not_in_room,
                 "not in that room");
        return;
    }
    room& r = it->second;
    if (r.empty()) unwatch(r);
    // Belonging is per account: another session of it in the room keeps the account online.
    const bool last_session = !r.has_player(gone->player_id);
    std::uint64_t ticket = 0;
    bool abandoned = false;
    if (last_session && reply) {
        // Left on purpose: the account no longer belongs here, and a room nobody belongs to is
        // deleted. Neither write may fail (a leave is never refused); each follows a join or
        // create that was admitted within the queue's capacity.
        const std::int64_t now = wall_clock_us();
        r.forget(gone->player_id);
        ticket = *write(room_change{room_change::kind::left, id.value(), gone->player_id, {}, now}, true);
        // A node's view of who belongs may be stale in cluster mode (members joined through
        // other nodes are not known here): it never deletes a room on that view.
        if (r.abandoned() && !clustered()) {
            abandoned = true;
            ticket = *write(room_change{room_change::kind::deleted, id.value(), 0, {}, now}, true);
        }
        // In cluster mode the database decides, once this leave is stored.
        if (clustered()) after_commit(ticket, [this, id] { delete_if_empty(id); });
    }
    fan_out(r, room_event::kind::left, session_id, session_shard, reply ? frames::leave_room_res(id.value()) : nullptr,
            nullptr, ticket);
    if (last_session && reply) {
        if (notices_.cancel_join(id, session_id))
            bump(counters_.notices_coalesced);  // joined and left unnoticed: neither notice is sent
        else if (!r.empty())
            notify(r, session_id, session_shard, false, frames::member_left(id.value(), gone->player_id, gone->name));
    } else if (last_session && !r.empty() && !(presence_ && presence_->online_elsewhere(id, gone->player_id))) {
        // Disconnected: still a member, now offline (its member_joined, if pending, still goes out first).
        notify(r, session_id, session_shard, false,
               frames::member_presence(id.value(), gone->player_id, gone->name, false));
    }
    if (last_session)
        announce(r, reply ? presence_change::left : presence_change::offline, gone->player_id, gone->name);
    // Cluster mode: a room without sessions here is not followed any more, so this node's view
    // of it would go stale; the next join reads it from the database again (or finds it gone).
    if (abandoned || (clustered() && r.empty())) {
        notices_.drop(id);
        rooms_.erase(it);
        set_gauge(counters_.rooms, rooms_.size());
    }
}

void room_host::chat(chat_request& req) {
    auto it = rooms_.find(req.room);
    if (it == rooms_.end() || !it->second.contains(req.sender.session_id)) {
        fail(req.sender.shard, req.sender.session_id, req.room, proto::msg_type::chat_req,
             proto::error_code::not_in_room, "not in a room");
        return;
    }
    room& r = it->second;
    if (clustered()) {
        cluster_chat(r, req);
        return;
    }
    frames::chat_fields f;
    f.room_id = req.room.value();
    f.seq = r.next_seq();
    f.sender_id = req.sender.player_id;
    f.sender_name = req.sender.name;
    const std::int64_t ts = wall_clock_us();
    f.server_ts_us = static_cast<std::uint64_t>(ts);
    f.text = req.text;
    f.client_ts = req.client_ts;
    f.client_seq = req.client_seq;
    // Encoded once, before the strings move into the log record; every member shares this buffer.
    auto frame = frames::chat_msg(f);

    chat_log_entry entry;
    entry.room_id = req.room.value();
    entry.seq = f.seq;
    entry.sender_id = req.sender.player_id;
    entry.sender_name = std::move(req.sender.name);
    entry.server_ts_us = ts;
    entry.text = std::move(req.text);
    // Nothing is acknowledged (sent) that is not queued for the database, and with --ack stored
    // not before it is committed: the sender's own copy of the chat_msg is its acknowledgement.
    auto ticket = write(std::move(entry));
    if (!ticket) {
        bump(counters_.server_busy);
        fail(req.sender.shard, req.sender.session_id, req.room, proto::msg_type::chat_req,
             proto::error_code::server_busy, "the chat log queue is full; retry later");
        return;
    }
    r.take_seq();
    bump(counters_.chat_messages);
    flush_notices(r);  // members hear of a newcomer before its first words
    fan_out(r, room_event::kind::message, 0, 0, nullptr, frame, *ticket, f.seq);
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

void room_host::flush_notices(const room& r) {
    if (!notices_.has(r.id())) return;  // the common case, for every chat message: one branch
    for (auto& n : notices_.take(r.id()))
        fan_out(r, room_event::kind::notice, n.subject, n.subject_shard, nullptr, n.frame);
}

void room_host::flush_notices() {
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
    stopped_ = true;
    stop_cluster();
    ctx_.eng.at(self_).timers().cancel(notice_timer_);  // what waits has nobody left to tell
}

std::vector<room_summary> room_host::summaries() const {
    std::vector<room_summary> out;
    out.reserve(rooms_.size());
    for (const auto& [id, r] : rooms_) out.push_back(r.summary());
    return out;
}

}  // namespace strix::chat
