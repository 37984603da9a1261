#include "room_sequencer.hpp"

#include "cluster_sequencer.hpp"
#include "local_sequencer.hpp"
#include "apps/chat/server/service/chat_context.hpp"

#include <chrono>

namespace strix::chat {

std::int64_t wall_clock_us() noexcept {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

chat_log_entry to_log_entry(room_id room, std::uint64_t seq, chat_request& req, std::int64_t ts) {
    chat_log_entry entry;
    entry.room_id = room.value();
    entry.seq = seq;
    entry.sender_id = req.sender.player_id;
    entry.sender_name = std::move(req.sender.name);
    entry.server_ts_us = ts;
    entry.text = std::move(req.text);
    entry.kind = req.kind;
    entry.idem_key = std::move(req.idem_key);
    return entry;
}

std::unique_ptr<room_sequencer> make_room_sequencer(room_host& host, chat_context& ctx, unsigned self,
                                                    chat_counters& counters) {
    // The one place that asks which mode runs.
    if (ctx.options.cluster.enabled()) return std::make_unique<cluster_sequencer>(host, ctx, self, counters);
    return std::make_unique<local_sequencer>(host, ctx, self, counters);
}

}  // namespace strix::chat
