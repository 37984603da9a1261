// cluster_sequencer: rooms as the shared database has them. A join for a room this node does
// not hold reads it from the database first. A room is deleted when its last member leaves,
// decided by the database's membership count under a lock on the room's row (never by one
// node's view, which may miss joins made through other nodes), and every node holding the room
// drops it when told on its presence channel. list_rooms lists the database's rooms (every
// node's), with each room's online count from the rooms' online hashes in Redis:
//
//   list_rooms_req ─> db_pool worker: load_rooms ─> this shard: online counts (FCALL_RO
//   chat_online_counts) ─> list_rooms_res

#include "cluster_sequencer.hpp"

#include "room_host.hpp"
#include "apps/chat/cluster/resp.hpp"
#include "apps/chat/cluster/room_backplane.hpp"
#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>

#include <algorithm>
#include <chrono>
#include <map>

namespace strix::chat {

void cluster_sequencer::fetch(room_id id, std::function<void(room*, bool)> then) {
    // Held: a session here is in it (its feed keeps it current) or another API call read it.
    if (room* r = host_.find(id)) return then(r, false);
    sharded<chat_service>* services = &host_.service().container();
    const unsigned self = self_;
    auto held = std::make_shared<std::function<void(room*, bool)>>(std::move(then));
    const bool queued = ctx_.pool.try_submit([services, self, id, held](chat_store& store) {
        std::optional<stored_room> found;
        bool failed = false;
        try {
            found = store.load_room(id.value());
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "loading room {} failed: {}", id.value(), e.what());
            failed = true;
        }
        services->invoke_on(self, [id, found = std::move(found), failed, held](chat_service& svc) mutable {
            room_host& host = svc.host();
            if (found && host.find(id) == nullptr) host.restore(std::move(*found));
            (*held)(host.find(id), failed);
        });
    });
    if (!queued) (*held)(nullptr, true);
}

bool cluster_sequencer::load(room_id id, member& m, bool rejoin) {
    sharded<chat_service>* services = &host_.service().container();
    const unsigned self = self_;
    const bool queued = ctx_.pool.try_submit([services, self, id, m, rejoin](chat_store& store) mutable {
        std::optional<stored_room> found;
        try {
            found = store.load_room(id.value());
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "loading room {} failed: {}", id.value(), e.what());
        }
        services->invoke_on(self, [id, found = std::move(found), m = std::move(m), rejoin](chat_service& svc) mutable {
            of(svc).loaded(id, std::move(found), std::move(m), rejoin);
        });
    });
    if (!queued) {
        bump(counters_.server_busy);
        host_.fail(m.shard, m.session_id, id, proto::msg_type::join_room_req, proto::error_code::server_busy,
                   "the database queue is full; retry later");
    }
    return true;
}

void cluster_sequencer::loaded(room_id id, std::optional<stored_room> r, member m, bool rejoin) {
    if (r && host_.find(id) == nullptr && id.owner(ctx_.eng.shard_count()) == self_) host_.restore(std::move(*r));
    host_.join(id, std::move(m), rejoin, true);
}

bool cluster_sequencer::left(room& r, std::int64_t, std::uint64_t& ticket) {
    // This node's view of who belongs may be stale (members joined through other nodes are not
    // known here): it never deletes a room on that view. The database decides, once this leave
    // is stored. A direct room stays (the pair's next direct_req finds it).
    if (!r.direct()) host_.order().after_commit(ticket, [this, id = r.id()] { delete_if_empty(id); });
    return false;
}

void cluster_sequencer::delete_if_empty(room_id id) {
    sharded<chat_service>* services = &host_.service().container();
    const unsigned self = self_;
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    const bool queued = ctx_.pool.try_submit([services, self, id, now](chat_store& store) {
        bool deleted = false;
        try {
            deleted = store.delete_room_if_empty(id.value(), now);
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "room {}: deciding its deletion failed: {}", id.value(), e.what());
        }
        if (deleted) services->invoke_on(self, [id](chat_service& svc) { of(svc).room_deleted(id); });
    });
    // Not retried: the room stays, empty, until a later leave of it decides again.
    if (!queued) log_limited(log_level::warn, "room {}: the database queue is full; not deleted", id.value());
}

void cluster_sequencer::room_deleted(room_id id) {
    if (presence_) presence_->announce_deleted(id);
    host_.forget_deleted(id);
}

bool cluster_sequencer::list_rooms(std::size_t limit,
                                   std::function<void(std::optional<std::vector<room_summary>>)> done) {
    sharded<chat_service>* services = &host_.service().container();
    const unsigned self = self_;
    return ctx_.pool.try_submit([services, self, limit, done = std::move(done)](chat_store& store) mutable {
        std::vector<room_summary> rooms;
        bool failed = false;
        try {
            // Ordered by id: the first `limit` are the smallest ids, as on one node.
            for (auto& r : store.load_rooms()) {
                if (rooms.size() == limit) break;
                if (r.kind != 0) continue;  // direct rooms are their pairs' business
                rooms.push_back({r.id, std::move(r.name), static_cast<std::uint32_t>(r.members.size()), 0});
            }
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "list_rooms failed: {}", e.what());
            failed = true;
        }
        services->invoke_on(self, [failed, rooms = std::move(rooms),
                                   done = std::move(done)](chat_service& svc) mutable {
            if (failed) {
                done(std::nullopt);
                return;
            }
            of(svc).online_counts(std::move(rooms), [done = std::move(done)](std::vector<room_summary> counted) {
                std::sort(counted.begin(), counted.end(),
                          [](const room_summary& a, const room_summary& b) { return a.id < b.id; });
                done(std::move(counted));
            });
        });
    });
}

void cluster_sequencer::online_counts(std::vector<room_summary> rooms,
                                      std::function<void(std::vector<room_summary>)> done) {
    if (!presence_ || rooms.empty()) {
        done(std::move(rooms));
        return;
    }
    std::vector<std::string> keys;
    keys.reserve(rooms.size());
    for (const auto& r : rooms) keys.push_back(std::to_string(r.id));
    const auto cmd = online_counts_command(keys, presence_->alive().value_or(std::map<std::uint32_t, std::string>{}));
    std::vector<std::string_view> args(cmd.begin(), cmd.end());
    presence_->redis().command(args, [alive = alive_, rooms = std::move(rooms),
                                      done = std::move(done)](std::error_code ec, const resp_reply& reply) mutable {
        if (!*alive) return;
        if (auto counts = ec ? std::nullopt : parse_online_counts(reply, rooms.size()))
            for (std::size_t i = 0; i < rooms.size(); ++i) rooms[i].online = std::min((*counts)[i], rooms[i].members);
        done(std::move(rooms));
    });
}

// --- signals (cluster_presence_signals.cpp) --------------------------------------------------

void cluster_sequencer::typed(const room& r, std::uint64_t account, std::string_view name) {
    if (presence_) presence_->signal_typing(r.id(), account, name);
}

void cluster_sequencer::marked_read(const room& r, std::uint64_t account, std::uint64_t seq) {
    if (presence_) presence_->signal_read(r.id(), account, seq);
}

void cluster_sequencer::direct_opened(const stored_room& info, bool created) {
    if (presence_) presence_->signal_direct(info, created);
}

void cluster_sequencer::block_changed(room_id id, std::uint64_t blocker, std::uint64_t blocked, bool on) {
    if (presence_) presence_->signal_block(id, blocker, blocked, on);
}

void cluster_sequencer::disconnected(const account& a) {
    if (presence_) presence_->signal_disconnect(a);
}

void cluster_sequencer::deleted_by_api(room_id id) {
    if (presence_) presence_->signal_deleted(id);
}

}  // namespace strix::chat
