// chat_service's history and resume requests (the rest of the service is in chat_service.cpp).
// Both read the chat log on a database worker, never on the shard; the worker encodes the
// answer's frames and posts them back, and the session's later requests wait for them (so
// replies keep the order of the requests).
//
//   history_req ─ check membership ══> worker: history_page ─ history_res ══> read_done: send
//   resume_req  ─ check membership, bound ══> worker: the missed range, whole or not at all
//               (nothing missed, or over --resume-max: answered here)  ══> resume_res... or gap
//
// A resume covers (last_seq, joined_seq]: joined_seq is the room's join point when this session
// was added, and every later message reaches it live (docs/protocol.md, "Resume"). The answer is
// complete or a gap, never part of the range: a range the database does not hold whole (deleted
// by retention, or not yet committed with --ack early after a flush) is a gap.
//
// Members may have been given messages the database does not hold yet: with --ack early the
// writer's queue has them; in cluster mode the members of other nodes get a message as soon as
// Redis publishes it, before its node's commit, and a node killed between the two never commits
// it. So rows that are not the whole range go to the room sequencer, which completes them from
// where it has them (room_sequencer::complete_resume: the local one flushes the writer and reads
// again; the cluster one takes them from the room's Redis stream, exactly as published, and
// queues each for the database, insert-if-absent, so that what one client was given, history
// keeps):
//
//   resume_req ══> worker: rows of (last_seq, joined_seq] ──> whole: resume_res (encoded there)
//                                                        └──> not whole: the sequencer completes
//                                                             them ──> resume_res / gap

#include "chat_service.hpp"

#include "apps/chat/server/net/frames.hpp"

#include <strix/core/log.hpp>
#include "apps/chat/storage/db_pool.hpp"

namespace strix::chat {
namespace {

using proto::error_code;
using proto::msg_type;

constexpr std::uint32_t default_history_limit = 50;
constexpr std::uint32_t max_history_limit = 200;

// read_done's outcomes.
constexpr int read_ok = 0;
constexpr int read_gap = 1;
constexpr int read_failed = 2;

// Splits `logs` (ascending) into resume_res frames of at most one frame's message budget each.
std::vector<shared_buffer_ptr> resume_frames(std::uint64_t room, std::span<const chat_log_entry> logs,
                                             std::uint64_t to_seq, std::uint64_t oldest) {
    std::vector<shared_buffer_ptr> out;
    do {
        const std::size_t n = logs.empty() ? 0 : frames::messages_that_fit(logs);
        out.push_back(frames::resume_res(room, false, logs.first(n), to_seq, oldest, n < logs.size()));
        logs = logs.subspan(n);
    } while (!logs.empty());
    return out;
}

// The rows of (from, to], ascending. after_seq 0 would mean "the newest": from 0 asks for what
// lies below to + 1 instead.
history_query resume_query(std::uint64_t room, std::uint64_t from, std::uint64_t to) {
    history_query q{room, 0, from, static_cast<std::size_t>(to - from)};
    if (from == 0) {
        q.after_seq = 0;
        q.before_seq = to + 1;
    }
    return q;
}

// Whether `logs` (ascending, from resume_query) is all of (from, to].
bool covers(std::span<const chat_log_entry> logs, std::uint64_t from, std::uint64_t to) {
    return !logs.empty() && logs.size() == to - from && logs.front().seq == from + 1 && logs.back().seq == to;
}

// The answer to a resume of (from, to] from the rows found: complete, or a gap when they are not
// all of it or exceed the byte bound.
std::vector<shared_buffer_ptr> resume_answer(std::uint64_t room, std::uint64_t from, std::uint64_t to,
                                             std::span<const chat_log_entry> logs, std::uint64_t oldest,
                                             std::size_t max_bytes) {
    std::size_t bytes = 0;
    for (const auto& e : logs) bytes += e.text.size() + e.sender_name.size();
    if (!covers(logs, from, to) || bytes > max_bytes)
        return std::vector<shared_buffer_ptr>{frames::resume_res(room, true, {}, to, oldest, false)};
    return resume_frames(room, logs, to, oldest);
}

int resume_outcome(const std::vector<shared_buffer_ptr>& out) {
    if (out.size() != 1) return read_ok;
    auto* r = body_as<proto::resume_res>(std::span<const std::byte>(out[0]->data(), out[0]->size()));
    return r != nullptr && r->status() == proto::resume_status::gap ? read_gap : read_ok;
}

}  // namespace

void chat_service::handle_history(player& p, std::span<const std::byte> frame) {
    auto* req = decode<proto::history_req>(p, frame, msg_type::history_req, "malformed history_req");
    if (!req) return;
    session& s = *p.sess;
    if (!p.room || p.room.value() != req->room_id() || p.in_room != player::room_state::member) {
        send_error(s, msg_type::history_req, error_code::not_in_room, "history is for the room you are in");
        return;
    }
    if (req->before_seq() != 0 && req->after_seq() != 0) {
        bump(counters_.bad_requests);
        send_error(s, msg_type::history_req, error_code::bad_request, "give before_seq or after_seq, not both");
        return;
    }
    history_query q;
    q.room_id = req->room_id();
    q.before_seq = req->before_seq();
    q.after_seq = req->after_seq();
    const std::uint32_t limit =
        req->limit() == 0 ? default_history_limit : std::min(req->limit(), max_history_limit);
    q.limit = limit + 1;  // one more than asked: whether there is more in that direction
    bump(counters_.history_requests);
    submit_read(p, msg_type::history_req, [q, limit](chat_store& store) {
        std::vector<chat_log_entry> logs = store.history_page(q);
        const log_range range = store.room_log_range(q.room_id);
        const bool newest_first = q.after_seq == 0;  // before_seq or newest: the page ends at the newest
        bool more = logs.size() > limit;
        std::span<const chat_log_entry> page(logs);
        if (more) page = newest_first ? page.last(limit) : page.first(limit);
        // One frame: when the page does not fit, keep the part nearest the cursor.
        if (!page.empty()) {
            if (newest_first) {
                std::size_t n = 0, bytes = 0;
                for (auto it = page.rbegin(); it != page.rend(); ++it) {
                    bytes += frames::message_size(*it);
                    if (n > 0 && bytes > frames::max_messages_bytes) break;
                    ++n;
                }
                if (n < page.size()) more = true;
                page = page.last(n);
            } else {
                const std::size_t n = frames::messages_that_fit(page);
                if (n < page.size()) more = true;
                page = page.first(n);
            }
        }
        return std::vector<shared_buffer_ptr>{frames::history_res(q.room_id, page, more, range.oldest, range.newest)};
    }, false);
}

void chat_service::handle_resume(player& p, std::span<const std::byte> frame) {
    auto* req = decode<proto::resume_req>(p, frame, msg_type::resume_req, "malformed resume_req");
    if (!req) return;
    session& s = *p.sess;
    if (!p.room || p.room.value() != req->room_id() || p.in_room != player::room_state::member) {
        send_error(s, msg_type::resume_req, error_code::not_in_room, "resume the room you are in (join it first)");
        return;
    }
    const std::uint64_t room = req->room_id();
    const std::uint64_t from = req->last_seq();
    const std::uint64_t to = p.joined_seq;
    if (from >= to) {
        // Nothing was missed: everything above the join point comes live. No database trip.
        bump(counters_.resumes);
        send(s, frames::resume_res(room, false, {}, to, 0, false));
        return;
    }
    if (to - from > ctx_.options.resume_max) {
        bump(counters_.resume_gaps);
        send(s, frames::resume_res(room, true, {}, to, 0, false));
        return;
    }
    resume_read(p, room, from, to);
}

void chat_service::resume_read(player& p, std::uint64_t room, std::uint64_t from, std::uint64_t to) {
    sharded<chat_service>* services = &container();
    const unsigned shard_index = self_;
    const std::uint64_t sid = p.sess->id();
    const std::size_t max_bytes = resume_max_bytes(ctx_.options);
    p.pending = player::pending_op::history;
    const bool queued =
        ctx_.pool.try_submit([services, shard_index, sid, room, from, to, max_bytes](chat_store& store) {
            stored_range r{resume_query(room, from, to), {}, 0, false};
            try {
                r.logs = store.history_page(r.query);
                r.oldest = store.room_log_range(room).oldest;
                r.ok = true;
            } catch (const std::exception& e) {
                log_limited(log_level::warn, "resume_req failed: {}", e.what());
            }
            if (r.ok && covers(r.logs, from, to)) {
                // The common case, answered from here: the worker encodes the frames.
                auto out = resume_answer(room, from, to, r.logs, r.oldest, max_bytes);
                const int outcome = resume_outcome(out);
                services->invoke_on(shard_index, [sid, out = std::move(out), outcome](chat_service& svc) mutable {
                    svc.read_done(sid, msg_type::resume_req, std::move(out), outcome);
                });
                return;
            }
            services->invoke_on(shard_index, [sid, room, from, to, r = std::move(r)](chat_service& svc) mutable {
                svc.resume_stored(sid, room, from, to, std::move(r));
            });
        });
    if (!queued) {
        p.pending = player::pending_op::none;
        bump(counters_.server_busy);
        send_error(*p.sess, msg_type::resume_req, error_code::server_busy, "the database queue is full; retry later");
    }
}

void chat_service::resume_stored(std::uint64_t session_id, std::uint64_t room, std::uint64_t from, std::uint64_t to,
                                 stored_range rows) {
    if (!find(session_id)) return;  // the session closed while the database read
    if (rows.ok) {
        // A range the database holds with holes comes back with rows past `to` filling the limit.
        std::erase_if(rows.logs, [to](const chat_log_entry& e) { return e.seq > to; });
        // What members were given that the database lacks, from where the sequencer has it (the
        // writer's queue with --ack early; the room's Redis stream in a cluster).
        host_.sequencer().complete_resume(from, to, std::move(rows), [this, session_id, room, from, to](stored_range r) {
            resume_merged(session_id, room, from, to, std::move(r));
        });
        return;
    }
    resume_merged(session_id, room, from, to, std::move(rows));
}

void chat_service::resume_merged(std::uint64_t session_id, std::uint64_t room, std::uint64_t from, std::uint64_t to,
                                 stored_range rows) {
    if (!find(session_id)) return;
    if (!rows.ok) {
        read_done(session_id, msg_type::resume_req,
                  {frames::error(msg_type::resume_req, error_code::internal_error,
                                 "the database is unavailable; retry later")},
                  read_failed);
        return;
    }
    auto out = resume_answer(room, from, to, rows.logs, rows.oldest, resume_max_bytes(ctx_.options));
    const int outcome = resume_outcome(out);
    read_done(session_id, msg_type::resume_req, std::move(out), outcome);
}

// Queues `read` on a database worker; its frames go to the session in order, then the session's
// waiting requests run. False (answered server_busy) when the database queue is full.
bool chat_service::submit_read(player& p, msg_type request,
                               std::function<std::vector<shared_buffer_ptr>(chat_store&)> read, bool gap_counts) {
    sharded<chat_service>* services = &container();
    const unsigned shard_index = self_;
    const std::uint64_t sid = p.sess->id();
    p.pending = player::pending_op::history;
    const bool queued =
        ctx_.pool.try_submit([services, shard_index, sid, request, gap_counts, read = std::move(read)](chat_store& store) {
            std::vector<shared_buffer_ptr> out;
            int outcome = read_ok;
            try {
                out = read(store);
                if (gap_counts) outcome = resume_outcome(out);
            } catch (const std::exception& e) {
                log_limited(log_level::warn, "{} failed: {}", proto::EnumNamemsg_type(request), e.what());
                out = {frames::error(request, error_code::internal_error, "the database is unavailable; retry later")};
                outcome = read_failed;
            }
            services->invoke_on(shard_index, [sid, request, out = std::move(out), outcome](chat_service& svc) mutable {
                svc.read_done(sid, request, std::move(out), outcome);
            });
        });
    if (!queued) {
        p.pending = player::pending_op::none;
        bump(counters_.server_busy);
        send_error(*p.sess, request, error_code::server_busy, "the database queue is full; retry later");
    }
    return queued;
}

void chat_service::read_done(std::uint64_t session_id, msg_type request, std::vector<shared_buffer_ptr> frames_out,
                             int outcome) {
    player* p = find(session_id);
    if (!p) return;  // the session closed while the database read
    if (outcome == read_gap) bump(counters_.resume_gaps);
    if (outcome == read_ok && request == msg_type::resume_req) bump(counters_.resumes);
    if (outcome == read_failed) bump(counters_.errors);
    for (auto& f : frames_out) send(*p->sess, std::move(f));
    complete(*p, player::pending_op::history);
}

}  // namespace strix::chat
