// room_host in cluster mode: rooms as the shared database has them. A room is deleted when its
// last member leaves, decided by the database's membership count under a lock on the room's
// row (never by one node's view, which may miss joins made through other nodes), and every
// node holding the room drops it when told on its presence channel. list_rooms' online counts
// come from the rooms' online hashes in Redis.

#include "room_host.hpp"

#include "apps/chat/cluster/resp.hpp"
#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>

#include <chrono>

namespace strix::chat {

void room_host::delete_if_empty(room_id id) {
    sharded<chat_service>* services = &service_.container();
    const unsigned self = self_;
    const std::int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    const bool queued = ctx_.pool.try_submit([services, self, id, now](chat_store& store) {
        bool deleted = false;
        try {
            deleted = store.delete_room_if_empty(id.value(), now);
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "room {}: deciding its deletion failed: {}", id.value(), e.what());
        }
        if (deleted) services->invoke_on(self, [id](chat_service& svc) { svc.host().room_deleted(id); });
    });
    // Not retried: the room stays, empty, until a later leave of it decides again.
    if (!queued) log_limited(log_level::warn, "room {}: the database queue is full; not deleted", id.value());
}

void room_host::room_deleted(room_id id) {
    if (presence_) presence_->announce_deleted(id);
    deleted_elsewhere(id);
}

void room_host::deleted_elsewhere(room_id id) {
    auto it = rooms_.find(id);
    if (it == rooms_.end()) return;
    if (!it->second.empty()) {
        // A session joined here meanwhile (see docs/architecture.md: a join racing the deletion).
        log_limited(log_level::warn, "room {}: deleted while this node has sessions in it", id.value());
        return;
    }
    notices_.drop(id);
    rooms_.erase(it);
    set_gauge(counters_.rooms, rooms_.size());
}

void room_host::online_counts(std::vector<room_summary> rooms, std::function<void(std::vector<room_summary>)> done) {
    if (!presence_ || rooms.empty()) {
        done(std::move(rooms));
        return;
    }
    std::vector<std::string> keys;
    keys.reserve(rooms.size());
    for (const auto& r : rooms) keys.push_back(std::to_string(r.id));
    const auto cmd = online_counts_command(keys, presence_->alive().value_or(std::map<std::uint32_t, std::string>{}));
    std::vector<std::string_view> args(cmd.begin(), cmd.end());
    presence_->redis().command(args, [alive = alive_, rooms = std::move(rooms), done = std::move(done)](
                                         std::error_code ec, const resp_reply& reply) mutable {
        if (!*alive) return;
        if (auto counts = ec ? std::nullopt : parse_online_counts(reply, rooms.size()))
            for (std::size_t i = 0; i < rooms.size(); ++i) rooms[i].online = std::min((*counts)[i], rooms[i].members);
        done(std::move(rooms));
    });
}

}  // namespace strix::chat
