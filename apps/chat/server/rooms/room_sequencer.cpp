#include "room_sequencer.hpp"

#include "cluster_sequencer.hpp"
#include "local_sequencer.hpp"
#include "apps/chat/server/service/chat_context.hpp"

namespace strix::chat {

std::unique_ptr<room_sequencer> make_room_sequencer(room_host& host, chat_context& ctx, unsigned self,
                                                    chat_counters& counters) {
    // The one place that asks which mode runs.
    if (ctx.options.cluster.enabled()) return std::make_unique<cluster_sequencer>(host, ctx, self, counters);
    return std::make_unique<local_sequencer>(host, ctx, self, counters);
}

}  // namespace strix::chat
