// resume_requests (resume_requests.hpp): the range checks on the shard, the read of the range on
// a database worker and, when the rows are not all of it, what the room sequencer can add.

#include "resume_requests.hpp"

#include "chat_service.hpp"

#include "apps/chat/server/net/frames.hpp"

#include <strix/core/log.hpp>
#include "apps/chat/storage/db_pool.hpp"

namespace strix::chat {
namespace {

using proto::error_code;
using proto::msg_type;

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
read_answer resume_answer(std::uint64_t room, std::uint64_t from, std::uint64_t to,
                          std::span<const chat_log_entry> logs, std::uint64_t oldest, std::size_t max_bytes) {
    std::size_t bytes = 0;
    for (const auto& e : logs) bytes += e.text.size() + e.sender_name.size();
    if (!covers(logs, from, to) || bytes > max_bytes)
        return {{frames::resume_res(room, true, {}, to, oldest, false)}, read_outcome::gap};
    return {resume_frames(room, logs, to, oldest), read_outcome::resumed};
}

}  // namespace

void resume_requests::handle(player& p, std::span<const std::byte> frame) {
    STRIX_ASSERT_OWNER(svc_.home(), "resume_requests::handle");
    auto* req = svc_.decode<proto::resume_req>(p, frame, msg_type::resume_req, "malformed resume_req");
    if (!req) return;
    session& s = *p.sess;
    const player::room_slot* slot = req->room_id() != 0 ? p.slot(room_id(req->room_id())) : nullptr;
    if (!slot || slot->state != player::room_state::member) {
        svc_.send_error(s, msg_type::resume_req, error_code::not_in_room, "resume a room you are in (join it first)");
        return;
    }
    const std::uint64_t room = req->room_id();
    const std::uint64_t from = req->last_seq();
    const std::uint64_t to = slot->joined_seq;
    if (from >= to) {
        // Nothing was missed: everything above the join point comes live. No database trip.
        bump(counters_.resumes);
        svc_.send(s, frames::resume_res(room, false, {}, to, 0, false));
        return;
    }
    if (to - from > ctx_.options.resume_max) {
        bump(counters_.resume_gaps);
        svc_.send(s, frames::resume_res(room, true, {}, to, 0, false));
        return;
    }
    resume_read(p, room, from, to);
}

void resume_requests::resume_read(player& p, std::uint64_t room, std::uint64_t from, std::uint64_t to) {
    sharded<chat_service>* services = &svc_.container();
    const unsigned shard_index = svc_.shard_id();
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
                services->invoke_on(shard_index,
                                    [sid, answer = resume_answer(room, from, to, r.logs, r.oldest, max_bytes)](
                                        chat_service& svc) mutable { svc.reads().done(sid, std::move(answer)); });
                return;
            }
            services->invoke_on(shard_index, [sid, room, from, to, r = std::move(r)](chat_service& svc) mutable {
                svc.resumes().resume_stored(sid, room, from, to, std::move(r));
            });
        });
    if (!queued) {
        p.pending = player::pending_op::none;
        bump(counters_.server_busy);
        svc_.send_error(*p.sess, msg_type::resume_req, error_code::server_busy,
                        "the database queue is full; retry later");
    }
}

void resume_requests::resume_stored(std::uint64_t session_id, std::uint64_t room, std::uint64_t from, std::uint64_t to,
                                    stored_range rows) {
    STRIX_ASSERT_OWNER(svc_.home(), "resume_requests::resume_stored");
    if (!svc_.find(session_id)) return;  // the session closed while the database read
    if (rows.ok) {
        // A range the database holds with holes comes back with rows past `to` filling the limit.
        std::erase_if(rows.logs, [to](const chat_log_entry& e) { return e.seq > to; });
        // What members were given that the database lacks, from where the sequencer has it (the
        // writer's queue with --ack early; the room's Redis stream in a cluster).
        host_.sequencer().complete_resume(from, to, std::move(rows),
                                          [this, session_id, room, from, to](stored_range r) {
                                              resume_merged(session_id, room, from, to, std::move(r));
                                          });
        return;
    }
    resume_merged(session_id, room, from, to, std::move(rows));
}

void resume_requests::resume_merged(std::uint64_t session_id, std::uint64_t room, std::uint64_t from, std::uint64_t to,
                                    stored_range rows) {
    if (!svc_.find(session_id)) return;
    if (!rows.ok) {
        reads_.done(session_id, {{frames::error(msg_type::resume_req, error_code::internal_error,
                                                "the database is unavailable; retry later")},
                                 read_outcome::failed});
        return;
    }
    reads_.done(session_id, resume_answer(room, from, to, rows.logs, rows.oldest, resume_max_bytes(ctx_.options)));
}

}  // namespace strix::chat
