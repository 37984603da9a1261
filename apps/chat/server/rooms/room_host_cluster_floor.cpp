// room_host in cluster mode: the floor each chat_publish passes. When Redis has no state for a
// room (it restarted empty), chat_publish starts a new epoch at floor + 1, so the floor must be
// at least every seq already given to a message, or a seq is given twice: members would see
// two messages under one seq and the database keep only the first (the second's sender
// acknowledged, its message not stored). This node knows:
//
//   - the room's last_seq: what its feed delivered;
//   - what its own chat_publish replies gave (a reply can arrive while the feed's copy is lost
//     with a Redis that died);
//   - the database's last seq, which holds the other nodes' acknowledged messages, read once per
//     room after every (re)connection of the publisher, before the room's next publish.
//
// Measured with cluster_faults_test's Redis kill mid-chat: without the database read, about one
// run in four gave a seq twice (the other node's reply had arrived, no feed had the message).
// A message no reply and no commit recorded anywhere (Redis died after publishing to some
// subscribers only) can still be given twice; docs/architecture.md says so.

#include "room_host.hpp"

#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>

#include <algorithm>

namespace strix::chat {

std::uint64_t room_host::floor_of(const room& r) const {
    const auto it = floors_.find(r.id());
    return it == floors_.end() ? r.last_seq() : std::max(r.last_seq(), it->second.seq);
}

void room_host::published(room_id id, std::uint64_t seq) {
    auto& f = floors_[id];
    f.seq = std::max(f.seq, seq);
}

bool room_host::floor_ready(room& r, chat_request& req) {
    auto& f = floors_[r.id()];
    const std::uint64_t conn = publisher_->connects();
    if (f.checked == conn && !f.reading && f.waiting.empty()) return true;
    f.waiting.push_back(std::move(req));
    if (f.reading) return false;
    f.reading = true;
    sharded<chat_service>* services = &service_.container();
    const unsigned self = self_;
    const room_id id = r.id();
    const bool queued = ctx_.pool.try_submit([services, self, id, conn](chat_store& store) {
        std::uint64_t newest = 0;
        try {
            newest = store.room_log_range(id.value()).newest;
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "room {}: reading its last stored seq failed: {}", id.value(), e.what());
        }
        services->invoke_on(self, [id, newest, conn](chat_service& svc) { svc.host().floor_read(id, newest, conn); });
    });
    if (!queued) floor_read(id, 0, conn);  // the database is busy: go on with what this node knows
    return false;
}

void room_host::floor_read(room_id id, std::uint64_t newest, std::uint64_t conn) {
    const auto it = floors_.find(id);
    if (it == floors_.end() || !publisher_) return;
    auto& f = it->second;
    f.seq = std::max(f.seq, newest);
    f.checked = conn;
    f.reading = false;
    // Published in arrival order; one finding the publisher reconnected again queues the rest
    // behind a new read.
    auto waiting = std::move(f.waiting);
    f.waiting.clear();
    for (auto& req : waiting) {
        auto r = rooms_.find(id);
        if (r == rooms_.end() || !r->second.contains(req.sender.session_id)) {
            fail(req.sender.shard, req.sender.session_id, id, proto::msg_type::chat_req,
                 proto::error_code::not_in_room, "not in a room");
            continue;
        }
        cluster_chat(r->second, req);
    }
}

}  // namespace strix::chat
