// room_host in cluster mode: rooms as the shared database has them. A room is deleted when its
// last member leaves, decided by the database's membership count under a lock on the room's
// row (never by one node's view, which may miss joins made through other nodes), and every
// node holding the room drops it when told on its presence channel.

#include "room_host.hpp"

#include <strix/core/log.hpp>

namespace strix::chat {

void room_host::deleted_elsewhere(room_id id) {
    auto it = rooms_.find(id);
    if (it == rooms_.end()) return;
    if (!it->second.empty()) {
        // A session joined here meanwhile: its membership keeps the room for this node's view.
        log_limited(log_level::warn, "room {}: deleted by another node while this node has sessions in it",
                    id.value());
        return;
    }
    notices_.drop(id);
    rooms_.erase(it);
    set_gauge(counters_.rooms, rooms_.size());
}

}  // namespace strix::chat
