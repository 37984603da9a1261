#include "local_sequencer.hpp"

#include "room_host.hpp"
#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/server/service/hook_events.hpp"
#include "apps/chat/storage/chat_log_writer.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>

#include <algorithm>
#include <chrono>

namespace strix::chat {
local_sequencer::local_sequencer(room_host& host, chat_context& ctx, unsigned self, chat_counters& counters)
    : room_sequencer(room_id_source(ctx.first_room_counter, self)),
      host_(host),
      ctx_(ctx),
      self_(self),
      counters_(counters) {}

void local_sequencer::chat(room& r, chat_request& req) {
    STRIX_ASSERT_OWNER(host_.service().home(), "local_sequencer::chat");
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
    f.kind = req.kind;
    // Encoded once, before the strings move into the log record; every member shares this buffer.
    auto frame = frames::chat_msg(f);
    const std::string notice_text = f.kind != 0 ? req.text : std::string();

    // Nothing is acknowledged (sent) that is not queued for the database, and with --ack stored
    // not before it is committed: the sender's own copy of the chat_msg is its acknowledgement.
    std::optional<webhook_event> stored = hook_events::stored_message(ctx_, r, f.seq, req);
    auto ticket = host_.order().write(to_log_entry(req.room, f.seq, req, ts));
    if (!ticket) {
        bump(counters_.server_busy);
        if (req.taken)
            req.taken({0, 0, false, false, "the chat log queue is full; retry later"});
        else
            host_.fail(req.sender.shard, req.sender.session_id, req.room, proto::msg_type::chat_req,
                       proto::error_code::server_busy, "the chat log queue is full; retry later");
        return;
    }
    r.take_seq();
    if (req.taken) req.taken({f.seq, *ticket});
    bump(counters_.chat_messages);
    hook_events::emit(ctx_, std::move(stored));
    host_.flush_notices(r);  // members hear of a newcomer before its first words
    const bool notice = f.kind == static_cast<std::uint8_t>(proto::msg_kind::notice);
    host_.fan_out(r, notice ? room_event::kind::moderation : room_event::kind::message, 0, 0, nullptr, frame, *ticket,
                  f.seq);
    // A notice takes effect once every member has it in its place in the room's order.
    if (notice) host_.apply_notice(r, f.sender_id, notice_text, *ticket, ts);
}

void local_sequencer::fetch(room_id id, std::function<void(room*, bool)> then) {
    then(host_.find(id), false);  // every room lives here
}

std::uint64_t local_sequencer::join_point(const room& r) const {
    // Every message taken so far went out (or waits in commit order) before the join event.
    return r.last_seq();
}

shared_buffer_ptr local_sequencer::join_room_res(const room& r, std::uint64_t join_seq) const {
    return frames::join_room_res(r.summary(), r.listed_accounts(ctx_.options.member_list_limit), join_seq);
}

bool local_sequencer::left(room& r, std::int64_t now, std::uint64_t& ticket) {
    // A direct room stays when both left: the pair's next direct_req finds it, with its history.
    if (!r.abandoned() || r.direct()) return false;
    // Nobody belongs to it any more: deleted. The write may not fail (a leave is never refused):
    // it follows a join or create that was admitted within the queue's capacity.
    ticket = *host_.order().write(room_change{room_change::kind::deleted, r.id().value(), 0, {}, now}, true);
    return true;
}

bool local_sequencer::list_rooms(std::size_t limit,
                                 std::function<void(std::optional<std::vector<room_summary>>)> done) {
    // Every shard's rooms, gathered back here; `done` runs when all have answered.
    host_.service().container().gather(
        [](chat_service& svc) { return svc.host().summaries(); },
        [limit, done = std::move(done)](std::vector<std::vector<room_summary>> parts) {
            std::vector<room_summary> all;
            for (auto& part : parts)
                for (auto& r : part)
                    if (r.kind == 0) all.push_back(std::move(r));  // direct rooms are their pairs' business
            std::sort(all.begin(), all.end(), [](const room_summary& a, const room_summary& b) { return a.id < b.id; });
            if (all.size() > limit) all.resize(limit);
            done(std::move(all));
        });
    return true;
}

void local_sequencer::complete_resume(std::uint64_t, std::uint64_t, stored_range rows,
                                      std::function<void(stored_range)> done) {
    STRIX_ASSERT_OWNER(host_.service().home(), "local_sequencer::complete_resume");
    // With --ack stored every message members got was committed first: what the database lacks
    // is gone (retention). With --ack early it may still wait in the writer's queue: flushed,
    // then the rows are read again.
    if (ctx_.options.ack != ack_mode::early) {
        done(std::move(rows));
        return;
    }
    sharded<chat_service>* services = &host_.service().container();
    const unsigned self = self_;
    chat_log_writer* writer = &ctx_.writer;
    auto again = [services, self, writer, q = rows.query, done](chat_store& store) {
        stored_range r{q, {}, 0, false};
        try {
            writer->flush();
            r.logs = store.history_page(q);
            r.oldest = store.room_log_range(q.room_id).oldest;
            r.ok = true;
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "resume_req failed: {}", e.what());
        }
        services->invoke_on(self, [done, r = std::move(r)](chat_service&) mutable { done(std::move(r)); });
    };
    // The database queue is full: answered from what was read (a gap).
    if (!ctx_.pool.try_submit(std::move(again))) done(std::move(rows));
}

}  // namespace strix::chat
