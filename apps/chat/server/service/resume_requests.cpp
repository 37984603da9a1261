// resume_requests (resume_requests.hpp): the range checks on the shard, the read of the range on
// a database worker and, in cluster mode, the rows the database lacks from Redis's stream.

#include "resume_requests.hpp"

#include "chat_service.hpp"

#include "apps/chat/server/net/frames.hpp"

#include <strix/core/log.hpp>
#include "apps/chat/storage/chat_log_writer.hpp"
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
    auto* req = svc_.decode<proto::resume_req>(p, frame, msg_type::resume_req, "malformed resume_req");
    if (!req) return;
    session& s = *p.sess;
    if (!p.room || p.room.value() != req->room_id() || p.in_room != player::room_state::member) {
        svc_.send_error(s, msg_type::resume_req, error_code::not_in_room, "resume the room you are in (join it first)");
        return;
    }
    const std::uint64_t room = req->room_id();
    const std::uint64_t from = req->last_seq();
    const std::uint64_t to = p.joined_seq;
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
    if (host_.clustered()) {
        resume_cluster(p, room, from, to);
        return;
    }
    const std::size_t max_bytes = resume_max_bytes(ctx_.options);
    const bool ack_early = ctx_.options.ack == ack_mode::early;
    chat_log_writer* writer = &ctx_.writer;
    reads_.submit(p, msg_type::resume_req, [room, from, to, max_bytes, ack_early, writer](chat_store& store) {
        const history_query q = resume_query(room, from, to);
        std::vector<chat_log_entry> logs = store.history_page(q);
        if (!covers(logs, from, to) && ack_early) {
            // --ack early: members may have seen messages the writer has not committed yet.
            writer->flush();
            logs = store.history_page(q);
        }
        return resume_answer(room, from, to, logs, store.room_log_range(room).oldest, max_bytes);
    });
}

void resume_requests::resume_cluster(player& p, std::uint64_t room, std::uint64_t from, std::uint64_t to) {
    sharded<chat_service>* services = &svc_.container();
    const unsigned shard_index = svc_.shard_id();
    const std::uint64_t sid = p.sess->id();
    p.pending = player::pending_op::history;
    const bool queued = ctx_.pool.try_submit([services, shard_index, sid, room, from, to](chat_store& store) {
        stored_rows r;
        try {
            r.logs = store.history_page(resume_query(room, from, to));
            r.oldest = store.room_log_range(room).oldest;
            r.ok = true;
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "resume_req failed: {}", e.what());
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
                                    stored_rows rows) {
    if (!svc_.find(session_id)) return;  // the session closed while the database read
    if (!rows.ok) {
        reads_.done(session_id, {{frames::error(msg_type::resume_req, error_code::internal_error,
                                                "the database is unavailable; retry later")},
                                 read_outcome::failed});
        return;
    }
    // A range the database holds with holes comes back with rows past `to` filling the limit.
    std::erase_if(rows.logs, [to](const chat_log_entry& e) { return e.seq > to; });
    if (covers(rows.logs, from, to)) {
        resume_merged(session_id, room, from, to, std::move(rows), std::vector<chat_log_entry>{});
        return;
    }
    host_.read_stream(room_id(room), from, static_cast<std::uint32_t>(to - from),
                      [this, session_id, room, from, to,
                       rows = std::move(rows)](std::optional<std::vector<chat_log_entry>> streamed) mutable {
                          resume_merged(session_id, room, from, to, std::move(rows), std::move(streamed));
                      });
}

void resume_requests::resume_merged(std::uint64_t session_id, std::uint64_t room, std::uint64_t from, std::uint64_t to,
                                    stored_rows rows, std::optional<std::vector<chat_log_entry>> streamed) {
    if (!svc_.find(session_id)) return;
    if (streamed && !streamed->empty()) {
        // Both ascending; a seq in both is the database's (the stream of a later epoch could
        // reuse a seq after a lagging floor; what is stored stays what was stored).
        std::vector<chat_log_entry> all;
        all.reserve(rows.logs.size() + streamed->size());
        auto db = rows.logs.begin();
        for (auto& e : *streamed) {
            while (db != rows.logs.end() && db->seq < e.seq) all.push_back(std::move(*db++));
            if (db != rows.logs.end() && db->seq == e.seq) continue;
            bump(counters_.resume_from_stream);
            // Insert-if-absent (ON CONFLICT DO NOTHING): the origin's own write, if it still
            // comes, stores nothing twice. A full queue leaves the message to the stream only.
            if (!ctx_.writer.try_enqueue_copy(e))
                log_limited(log_level::warn, "room {}: seq {} from Redis's stream not queued for the database", room,
                            e.seq);
            all.push_back(std::move(e));
        }
        while (db != rows.logs.end()) all.push_back(std::move(*db++));
        rows.logs = std::move(all);
    }
    reads_.done(session_id, resume_answer(room, from, to, rows.logs, rows.oldest, resume_max_bytes(ctx_.options)));
}

}  // namespace strix::chat
