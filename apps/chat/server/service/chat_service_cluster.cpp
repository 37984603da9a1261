// chat_service in cluster mode: list_rooms lists the rooms of the shared database (every node's),
// not the ones this node holds, with each room's online count from Redis.
//
//   list_rooms_req ─> db_pool worker: load_rooms ─> this shard: online counts (FCALL_RO
//   chat_online_counts) ─> list_rooms_res

#include "chat_service.hpp"

#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>

#include <algorithm>

namespace strix::chat {

using proto::error_code;
using proto::msg_type;

void chat_service::handle_list_cluster(player& p) {
    p.pending = player::pending_op::list;
    sharded<chat_service>* services = &container();
    const unsigned self = self_;
    const std::uint64_t sid = p.sess->id();
    const bool queued = ctx_.pool.try_submit([services, self, sid](chat_store& store) {
        std::vector<room_summary> rooms;
        bool failed = false;
        try {
            // Ordered by id: the first max_listed_rooms are the smallest ids, as on one node.
            for (auto& r : store.load_rooms()) {
                if (rooms.size() == max_listed_rooms) break;
                rooms.push_back({r.id, std::move(r.name), static_cast<std::uint32_t>(r.members.size()), 0});
            }
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "list_rooms failed: {}", e.what());
            failed = true;
        }
        services->invoke_on(self, [sid, failed, rooms = std::move(rooms)](chat_service& svc) mutable {
            player* q = svc.find(sid);
            if (!q) return;
            if (failed) {
                bump(svc.counters_.errors);
                svc.send_error(*q->sess, msg_type::list_rooms_req, error_code::internal_error,
                               "the database is unavailable; retry later");
                svc.complete(*q, player::pending_op::list);
                return;
            }
            svc.host_.online_counts(std::move(rooms), [&svc, sid](std::vector<room_summary> counted) {
                player* r = svc.find(sid);
                if (!r) return;
                std::sort(counted.begin(), counted.end(),
                          [](const room_summary& a, const room_summary& b) { return a.id < b.id; });
                svc.send(*r->sess, frames::list_rooms_res(counted));
                svc.complete(*r, player::pending_op::list);
            });
        });
    });
    if (!queued) {
        p.pending = player::pending_op::none;
        bump(counters_.server_busy);
        send_error(*p.sess, msg_type::list_rooms_req, error_code::server_busy, "the database queue is full; retry later");
    }
}

}  // namespace strix::chat
