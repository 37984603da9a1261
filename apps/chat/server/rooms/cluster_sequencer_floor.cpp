// cluster_sequencer: the floor each chat_publish passes. A Redis that lost a room's state starts
// a new epoch at floor + 1, so the floor must cover every seq already given, or one is given
// twice; and a node starts that epoch only after --epoch-wait-ms, once the other nodes' commits
// in flight have landed. Why each part is needed, with the faults that showed it and their
// figures: docs/architecture.md, "The floor a publish passes".
//
//   publish (may_create 0) ──Redis has the room──> seq, as always
//                          └─no state──> back to the front of the room's queue ── wait ──>
//                                        database's last seq ──> publish (may_create 1)

#include "cluster_sequencer.hpp"

#include "room_host.hpp"
#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>

#include <algorithm>

namespace strix::chat {

std::uint64_t cluster_sequencer::floor_of(const room& r) const {
    const auto it = floors_.find(r.id());
    return it == floors_.end() ? r.last_seq() : std::max(r.last_seq(), it->second.seq);
}

void cluster_sequencer::published(room_id id, std::uint64_t seq) {
    auto& f = floors_[id];
    f.seq = std::max(f.seq, seq);
}

bool cluster_sequencer::floor_ready(room& r, chat_request& req) {
    auto& f = floors_[r.id()];
    const std::uint64_t conn = publisher_->connects();
    if (f.checked == conn && !f.reading && f.waiting.empty()) return true;
    f.waiting.push_back(std::move(req));
    if (f.reading) return false;
    read_floor(r.id(), conn, false);
    return false;
}

void cluster_sequencer::read_floor(room_id id, std::uint64_t conn, bool settled) {
    floors_[id].reading = true;
    sharded<chat_service>* services = &host_.service().container();
    const unsigned self = self_;
    const bool queued = ctx_.pool.try_submit([services, self, id, conn, settled](chat_store& store) {
        std::uint64_t newest = 0;
        try {
            newest = store.room_log_range(id.value()).newest;
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "room {}: reading its last stored seq failed: {}", id.value(), e.what());
        }
        services->invoke_on(self, [id, newest, conn, settled](chat_service& svc) {
            of(svc).floor_read(id, newest, conn, settled);
        });
    });
    if (!queued) floor_read(id, 0, conn, settled);  // the database is busy: go on with what this node knows
}

void cluster_sequencer::no_room_state(room_id id, chat_request req) {
    auto& f = floors_[id];
    // Before the chats that came after it (the replies come in the order of the publishes).
    f.waiting.insert(f.waiting.begin() + static_cast<std::ptrdiff_t>(f.returned), std::move(req));
    ++f.returned;
    if (f.settling) return;
    f.settling = true;
    f.reading = true;  // floor_ready queues the room's chats until the read after the wait
    log_limited(log_level::info,
                "room {}: Redis has no state for it; waiting {} ms for commits in flight before "
                "continuing its seqs",
                id.value(), ctx_.options.cluster.epoch_wait_ms);
    settle_queue_.emplace_back(id, std::chrono::steady_clock::now() +
                                       std::chrono::milliseconds(ctx_.options.cluster.epoch_wait_ms));
    shard& sh = ctx_.eng.at(self_);
    if (!settle_timer_.armed())
        sh.timers().schedule(settle_timer_,
                             sh.ticks_for(std::chrono::milliseconds(ctx_.options.cluster.epoch_wait_ms)));
}

void cluster_sequencer::settle_due() {
    const auto now = std::chrono::steady_clock::now();
    while (!settle_queue_.empty() && settle_queue_.front().second <= now) {
        const room_id id = settle_queue_.front().first;
        settle_queue_.pop_front();
        if (publisher_) read_floor(id, publisher_->connects(), true);
    }
    if (!settle_queue_.empty()) {
        shard& sh = ctx_.eng.at(self_);
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(settle_queue_.front().second - now);
        sh.timers().schedule(settle_timer_, sh.ticks_for(std::max(left, std::chrono::milliseconds(1))));
    }
}

void cluster_sequencer::floor_read(room_id id, std::uint64_t newest, std::uint64_t conn, bool settled) {
    const auto it = floors_.find(id);
    if (it == floors_.end() || !publisher_) return;
    auto& f = it->second;
    f.seq = std::max(f.seq, newest);
    f.checked = conn;
    if (settled) {
        f.settled = conn;
        f.settling = false;
    }
    if (f.settling) return;  // a read begun before Redis was found without the room: the one after the wait publishes
    f.reading = false;
    f.returned = 0;
    // Published in arrival order; one finding the publisher reconnected again queues the rest
    // behind a new read.
    auto waiting = std::move(f.waiting);
    f.waiting.clear();
    for (auto& req : waiting) {
        room* r = host_.find(id);
        // Session 0: the application's (a server API post, a notice), with no session to be in.
        if (r == nullptr || (req.sender.session_id != 0 && !r->contains(req.sender.session_id))) {
            refuse(req, id, proto::error_code::not_in_room, r == nullptr ? "no such room" : "not in a room");
            continue;
        }
        publish(*r, req);
    }
}

}  // namespace strix::chat
