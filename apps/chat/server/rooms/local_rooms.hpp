#pragma once
// local_rooms: one shard's replica of room membership, restricted to the sessions living on this
// shard. Updated only by room events from each room's owner shard (applied in the owner's order),
// so a broadcast reaches every local member with one task per shard, never one per member.

#include "room_id.hpp"

#include <strix/net/session.hpp>

#include <boost/unordered/unordered_flat_map.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace strix::chat {

class local_rooms {
public:
    /// Adds s to the room's local members (no duplicates). Owning shard only.
    void add(room_id id, session_ptr s) {
        auto& v = rooms_[id];
        for (auto& x : v)
            if (x->id() == s->id()) return;
        v.push_back(std::move(s));
    }

    /// Removes the session from the room's local members; drops the room when none are left.
    /// Owning shard only.
    void remove(room_id id, std::uint64_t session_id) {
        auto it = rooms_.find(id);
        if (it == rooms_.end()) return;
        auto& v = it->second;
        v.erase(std::remove_if(v.begin(), v.end(), [&](const session_ptr& s) { return s->id() == session_id; }),
                v.end());
        if (v.empty()) rooms_.erase(it);
    }

    /// Calls f(session&) for every local member of the room. f must not change membership.
    /// Owning shard only.
    template <class F>
    void for_each(room_id id, F&& f) const {
        auto it = rooms_.find(id);
        if (it == rooms_.end()) return;
        for (const auto& s : it->second) f(*s);
    }

    /// Drops every reference (the shard is exiting). Owning shard only.
    void clear() noexcept { rooms_.clear(); }

    std::size_t room_count() const noexcept { return rooms_.size(); }

private:
    boost::unordered_flat_map<room_id, std::vector<session_ptr>> rooms_;
};

}  // namespace strix::chat
