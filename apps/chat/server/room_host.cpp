#include "room_host.hpp"

#include "chat_context.hpp"
#include "chat_service.hpp"
#include "frames.hpp"

#include "apps/chat/storage/chat_log_writer.hpp"

#include <algorithm>
#include <chrono>

namespace strix::chat {
namespace {

std::int64_t wall_clock_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

room_host::room_host(chat_context& ctx, unsigned self, chat_counters& counters)
    : ctx_(ctx), self_(self), counters_(counters), next_counter_(ctx.first_room_counter),
      notice_timer_([this] { flush_notices(); }) {}

void room_host::deliver(unsigned to, room_event ev) {
    if (to != self_) bump(counters_.cross_shard_posts);
    ctx_.services->invoke_on(to, [ev = std::move(ev)](chat_service& svc) mutable { svc.apply(ev); });
}

void room_host::fan_out(const room& r, room_event::kind what, std::uint64_t subject, unsigned subject_shard,
                        const shared_buffer_ptr& to_subject, const shared_buffer_ptr& to_members) {
    bump(counters_.broadcasts);
    for (unsigned s = 0; s < r.shard_count(); ++s) {
        bool subject_here = subject != 0 && s == subject_shard;
        if (r.members_on(s) == 0 && !subject_here) continue;
        if (!to_members && !subject_here) continue;  // a join or leave whose notice waits: only the subject's shard
        room_event ev;
        ev.room_id = r.id();
        ev.what = what;
        ev.subject = subject;
        if (subject_here) ev.to_subject = to_subject;
        ev.to_members = to_members;
        deliver(s, std::move(ev));
    }
}

void room_host::fail(unsigned shard, std::uint64_t session_id, std::uint64_t room_id, proto::msg_type request,
                     proto::error_code code, const char* reason) {
    ctx_.services->invoke_on(shard, [session_id, room_id, request, code, reason](chat_service& svc) {
        svc.request_failed(session_id, room_id, request, code, reason);
    });
}

void room_host::create(std::uint64_t id, std::string name, member creator) {
    auto [it, inserted] = rooms_.try_emplace(id, id, std::move(name), ctx_.eng.shard_count());
    room& r = it->second;
    const std::uint64_t subject = creator.session_id;
    const unsigned subject_shard = creator.shard;
    r.add(std::move(creator));
    set_gauge(counters_.rooms, rooms_.size());
    fan_out(r, room_event::kind::joined, subject, subject_shard, frames::create_room_res(r.summary()), nullptr);
}

void room_host::join(std::uint64_t room_id, member m) {
    auto it = rooms_.find(room_id);
    if (it == rooms_.end()) {
        fail(m.shard, m.session_id, room_id, proto::msg_type::join_room_req, proto::error_code::unknown_room,
             "no such room");
        return;
    }
    room& r = it->second;
    const std::uint64_t subject = m.session_id;
    const unsigned subject_shard = m.shard;
    auto joined = frames::member_joined(room_id, m.player_id, m.name);
    if (!r.add(std::move(m))) {
        fail(subject_shard, subject, room_id, proto::msg_type::join_room_req, proto::error_code::already_in_room,
             "already a member of this room");
        return;
    }
    flush_notices(r);  // earlier changes: the newcomer sees their outcome in its member list
    auto res = frames::join_room_res(r.summary(), r.members());
    fan_out(r, room_event::kind::joined, subject, subject_shard, res, nullptr);
    notify(r, subject, subject_shard, true, std::move(joined));
}

void room_host::leave(std::uint64_t room_id, std::uint64_t session_id, unsigned session_shard, bool reply) {
    auto it = rooms_.find(room_id);
    std::optional<member> gone;
    if (it != rooms_.end()) gone = it->second.remove(session_id);
    if (!gone) {
        if (reply)
            fail(session_shard, session_id, room_id, proto::msg_type::leave_room_req, proto::error_code::not_in_room,
                 "not in that room");
        return;
    }
    room& r = it->second;
    fan_out(r, room_event::kind::left, session_id, session_shard, reply ? frames::leave_room_res(room_id) : nullptr, nullptr);
    if (notices_.cancel_join(room_id, session_id))
        bump(counters_.notices_coalesced);  // joined and left unnoticed: neither notice is sent
    else if (!r.empty())
        notify(r, session_id, session_shard, false, frames::member_left(room_id, gone->player_id, gone->name));
    if (r.empty()) {
        notices_.drop(room_id);
        rooms_.erase(it);
        set_gauge(counters_.rooms, rooms_.size());
    }
}

void room_host::chat(chat_request& req) {
    auto it = rooms_.find(req.room_id);
    if (it == rooms_.end() || !it->second.contains(req.sender.session_id)) {
        fail(req.sender.shard, req.sender.session_id, req.room_id, proto::msg_type::chat_req,
             proto::error_code::not_in_room, "not in a room");
        return;
    }
    room& r = it->second;
    frames::chat_fields f;
    f.room_id = req.room_id;
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
    entry.room_id = req.room_id;
    entry.seq = f.seq;
    entry.sender_id = req.sender.player_id;
    entry.sender_name = std::move(req.sender.name);
    entry.server_ts_us = ts;
    entry.text = std::move(req.text);
    // Nothing is acknowledged (sent) that is not queued for the database: the sender's own copy
    // of the chat_msg is its acknowledgement.
    if (!ctx_.writer.try_enqueue(std::move(entry))) {
        bump(counters_.server_busy);
        fail(req.sender.shard, req.sender.session_id, req.room_id, proto::msg_type::chat_req,
             proto::error_code::server_busy, "the chat log queue is full; retry later");
        return;
    }
    r.take_seq();
    bump(counters_.chat_messages);
    flush_notices(r);  // members hear of a newcomer before its first words
    fan_out(r, room_event::kind::message, 0, 0, nullptr, frame);
}

void room_host::notify(const room& r, std::uint64_t subject, unsigned subject_shard, bool joined, shared_buffer_ptr frame) {
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
    for (std::uint64_t id : notices_.rooms()) {
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
    ctx_.eng.at(self_).timers().cancel(notice_timer_);  // what waits has nobody left to tell
}

std::vector<room_summary> room_host::summaries() const {
    std::vector<room_summary> out;
    out.reserve(rooms_.size());
    for (const auto& [id, r] : rooms_) out.push_back(r.summary());
    return out;
}

}  // namespace strix::chat
