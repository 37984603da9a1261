#pragma once
// member_notices: the member_joined / member_left notices a room owner has decided but not sent
// yet. Notices wait up to a short delay (--notice-delay-ms) so that churn costs the other members
// nothing: a session that joins and leaves again before its member_joined went out produces no
// notice at all. Order with everything else in the room is kept by three rules the owner
// (room_host) applies:
//
//   - a join sends what is pending first: the newcomer learns the earlier changes from
//     join_room_res's member list, and must not get notices about them;
//   - a chat message sends what is pending first: members hear of a newcomer before its words;
//   - a leave of a session whose member_joined is still pending cancels both.
//
// So at most one member_joined is pending per room (the latest join), followed by member_lefts.
// Owner shard only; plain state.

#include "room_id.hpp"

#include <strix/core/shared_buffer.hpp>

#include <boost/unordered/unordered_flat_map.hpp>

#include <cstdint>
#include <utility>
#include <vector>

namespace strix::chat {

class member_notices {
public:
    struct notice {
        std::uint64_t subject = 0;  // the session that joined or left
        unsigned subject_shard = 0;
        bool joined = false;
        shared_buffer_ptr frame;  // member_joined / member_left
    };

    /// Queues a notice for the room.
    void add(room_id id, notice n) { pending_[id].push_back(std::move(n)); }

    /// `subject` left the room: if its member_joined is still pending, drops it and returns true
    /// (then the leave sends no notice either).
    bool cancel_join(room_id id, std::uint64_t subject) {
        auto it = pending_.find(id);
        if (it == pending_.end()) return false;
        auto& v = it->second;
        for (auto n = v.begin(); n != v.end(); ++n) {
            if (n->joined && n->subject == subject) {
                v.erase(n);
                if (v.empty()) pending_.erase(it);
                return true;
            }
        }
        return false;
    }

    /// Takes the room's pending notices, oldest first.
    std::vector<notice> take(room_id id) {
        auto it = pending_.find(id);
        if (it == pending_.end()) return {};
        std::vector<notice> out = std::move(it->second);
        pending_.erase(it);
        return out;
    }

    /// Rooms with pending notices.
    std::vector<room_id> rooms() const {
        std::vector<room_id> out;
        out.reserve(pending_.size());
        for (const auto& [id, v] : pending_) out.push_back(id);
        return out;
    }

    void drop(room_id id) { pending_.erase(id); }
    bool empty() const noexcept { return pending_.empty(); }
    bool has(room_id id) const noexcept { return !pending_.empty() && pending_.contains(id); }

private:
    boost::unordered_flat_map<room_id, std::vector<notice>> pending_;
};

}  // namespace strix::chat
