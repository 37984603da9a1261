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
//
// The database's last seq still misses the other nodes' commits in flight when Redis died: a
// seq another node's publish got just before the kill, not stored yet when this node read. Under
// `make bench-cluster`'s load (5,000 messages/s) that gave 22 seqs twice in one Redis kill: the
// node that had the first copy never got its own message back from the feed (no ack, every
// member missed it) and the database kept one of the two. So a node may not start a room's new
// epoch at once: its publish says so (chat_publish with may_create false), Redis answers that
// the room has no state, and the node waits --epoch-wait-ms for those commits, reads the last
// stored seq again, and only then publishes what waited, in order, starting the epoch:
//
//   publish (may_create 0) ──Redis has the room──> seq, as always
//                          └─no state──> back to the front of the room's queue ── wait ──>
//                                        database's last seq ──> publish (may_create 1)
//
// A node's floor above an existing epoch's counter moves the counter (chat_publish): whatever a
// node knows to be taken is never given again, even if another node started the epoch lower.
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
    read_floor(r.id(), conn, false);
    return false;
}

void room_host::read_floor(room_id id, std::uint64_t conn, bool settled) {
    floors_[id].reading = true;
    sharded<chat_service>* services = &service_.container();
    const unsigned self = self_;
    const bool queued = ctx_.pool.try_submit([services, self, id, conn, settled](chat_store& store) {
        std::uint64_t newest = 0;
        try {
            newest = store.room_log_range(id.value()).newest;
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "room {}: reading its last stored seq failed: {}", id.value(), e.what());
        }
        services->invoke_on(self, [id, newest, conn, settled](chat_service& svc) {
            svc.host().floor_read(id, newest, conn, settled);
        });
    });
    if (!queued) floor_read(id, 0, conn, settled);  // the database is busy: go on with what this node knows
}

void room_host::no_room_state(room_id id, chat_request req) {
    auto& f = floors_[id];
    // Before the chats that came after it (the replies come in the order of the publishes).
    f.waiting.insert(f.waiting.begin() + static_cast<std::ptrdiff_t>(f.returned), std::move(req));
    ++f.returned;
    if (f.settling) return;
    f.settling = true;
    f.reading = true;  // floor_ready queues the room's chats until the read after the wait
    log_limited(log_level::info, "room {}: Redis has no state for it; waiting {} ms for commits in flight before "
                "continuing its seqs", id.value(), ctx_.options.cluster.epoch_wait_ms);
    settle_queue_.emplace_back(id, std::chrono::steady_clock::now() +
                                       std::chrono::milliseconds(ctx_.options.cluster.epoch_wait_ms));
    shard& sh = ctx_.eng.at(self_);
    if (!settle_timer_.armed())
        sh.timers().schedule(settle_timer_, sh.ticks_for(std::chrono::milliseconds(ctx_.options.cluster.epoch_wait_ms)));
}

void room_host::settle_due() {
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

void room_host::floor_read(room_id id, std::uint64_t newest, std::uint64_t conn, bool settled) {
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
