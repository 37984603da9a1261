// cluster_sequencer: what a room's Redis stream holds that the database lacks. The members of
// other nodes get a message as soon as Redis publishes it, before its node's commit, and a node
// killed between the two never commits it. Two repairs take such messages from the stream and
// queue them for the database, insert-if-absent (a commit that was only late stores nothing
// twice), so that what one client was given, history keeps:
//
//   resume whose rows the database lacks part of ─> chat_since (this shard's Redis connection)
//                                                ─> merged into the answer, queued for the database
//   a node found down ─> its messages in the streams of the rooms this shard watches ─> queued

#include "cluster_sequencer.hpp"

#include "room_host.hpp"
#include "wire_chat.hpp"
#include "apps/chat/cluster/resp.hpp"
#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/cluster/room_backplane.hpp"
#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/storage/chat_log_writer.hpp"

#include <strix/core/log.hpp>

namespace strix::chat {

void cluster_sequencer::read_stream(room_id id, std::uint64_t after, std::uint32_t limit,
                                    std::function<void(std::optional<std::vector<chat_log_entry>>)> done,
                                    std::uint32_t only_node) {
    if (!publisher_ || limit == 0) {
        done(std::nullopt);
        return;
    }
    const auto cmd = since_command(std::to_string(id.value()), after, limit);
    std::vector<std::string_view> args(cmd.begin(), cmd.end());
    publisher_->command(args, [alive = alive_, id, after, limit, only_node,
                               done = std::move(done)](std::error_code ec, const resp_reply& reply) {
        if (!*alive) return;
        std::optional<room_since> since;
        if (!ec) since = parse_since_reply(reply);
        if (!since) {
            done(std::nullopt);
            return;
        }
        std::vector<chat_log_entry> out;
        out.reserve(since->entries.size());
        for (const auto& m : since->entries) {
            if (m.seq <= after || m.seq > after + limit) continue;
            auto w = decode_wire_chat(m.body);
            if (!w) {
                log_limited(log_level::warn, "room {}: undecodable stream entry {}", id.value(), m.seq);
                continue;
            }
            if (only_node != 0 && w->node != only_node) continue;
            chat_log_entry e;
            e.room_id = id.value();
            e.seq = m.seq;
            e.sender_id = w->sender_id;
            e.sender_name = std::string(w->name);
            e.server_ts_us = static_cast<std::int64_t>(w->server_ts_us);
            e.text = std::string(w->text);
            e.kind = static_cast<std::uint8_t>(w->kind);
            out.push_back(std::move(e));
        }
        done(std::move(out));
    });
}

void cluster_sequencer::complete_resume(std::uint64_t from, std::uint64_t to, stored_range rows,
                                        std::function<void(stored_range)> done) {
    STRIX_ASSERT_OWNER(host_.service().home(), "cluster_sequencer::complete_resume");
    const std::uint64_t room = rows.query.room_id;
    read_stream(room_id(room), from, static_cast<std::uint32_t>(to - from),
                [this, room, rows = std::move(rows),
                 done = std::move(done)](std::optional<std::vector<chat_log_entry>> streamed) mutable {
                    if (!streamed || streamed->empty()) {
                        done(std::move(rows));
                        return;
                    }
                    // Both ascending; a seq in both is the database's (the stream of a later epoch
                    // could reuse a seq after a lagging floor; what is stored stays what was stored).
                    std::vector<chat_log_entry> all;
                    all.reserve(rows.logs.size() + streamed->size());
                    auto db = rows.logs.begin();
                    for (auto& e : *streamed) {
                        while (db != rows.logs.end() && db->seq < e.seq) all.push_back(std::move(*db++));
                        if (db != rows.logs.end() && db->seq == e.seq) continue;
                        bump(counters_.resume_from_stream);
                        // Insert-if-absent (ON CONFLICT DO NOTHING): the origin's own write, if it
                        // still comes, stores nothing twice. A full queue leaves the message to the
                        // stream only.
                        if (!ctx_.writer.try_enqueue_copy(e))
                            log_limited(log_level::warn,
                                        "room {}: seq {} from Redis's stream not queued for the database", room, e.seq);
                        all.push_back(std::move(e));
                    }
                    while (db != rows.logs.end()) all.push_back(std::move(*db++));
                    rows.logs = std::move(all);
                    done(std::move(rows));
                });
}

void cluster_sequencer::store_left_by(std::uint32_t node) {
    if (!feed_) return;
    // The stream keeps about stream_max messages per room; twice that back from the newest seq
    // seen reaches past anything a node could have left uncommitted short of a writer stalled
    // for thousands of messages (whose entries the stream no longer holds anyway).
    const std::uint64_t window = 2ull * ctx_.options.cluster.stream_max;
    for (const auto& [id, r] : host_.rooms()) {
        if (!feed_->watching(std::to_string(id.value()))) continue;
        const std::uint64_t top = r.last_seq();
        const std::uint64_t after = top > window ? top - window : 0;
        read_stream(
            id, after, static_cast<std::uint32_t>(2 * window),
            [this, id, node](std::optional<std::vector<chat_log_entry>> entries) {
                if (!entries) {
                    log_limited(log_level::warn, "room {}: Redis did not give node {}'s recent messages", id.value(),
                                node);
                    return;
                }
                std::size_t queued = 0;
                for (auto& e : *entries) queued += ctx_.writer.try_enqueue_copy(std::move(e)) ? 1 : 0;
                if (queued != 0)
                    log(log_level::info,
                        "room {}: {} messages node {} published, from Redis's stream, queued for the database "
                        "(insert-if-absent)",
                        id.value(), queued, node);
                if (queued != entries->size())
                    log_limited(log_level::warn, "room {}: {} of node {}'s messages not queued (the queue is full)",
                                id.value(), entries->size() - queued, node);
            },
            node);
    }
}

}  // namespace strix::chat
