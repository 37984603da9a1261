#pragma once
// local_rooms: one shard's replica of room membership, restricted to the sessions living on this
// shard. Updated only by room events from each room's owner shard (applied in the owner's order),
// so a broadcast reaches every local member with one task per shard, never one per member.

#include <strix/net/session.hpp>

#include <boost/unordered/unordered_flat_map.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace strix::chat {

class local_rooms {
public:
    /// Adds s to room_id's local members (no duplicates). Owning shard only.
    void add(std::uint64_t room_id, session_ptr s) {
        auto& v = rooms_[room_id];
        for (auto& x : v)
            if (x->id() == s->id()) return;
        v.push_back(std::move(s));
    }

    /// Removes the session from room_id's local members; drops the room when none are left.
    /// Owning shard only.
    void remove(std::uint64_t room_id, std::uint64_t session_id) {
        auto it = rooms_.find(room_id);
        if (it == rooms_.end()) return;
        auto& v = it->second;
        v.erase(std::remove_if(v.begin(), v.end(), [&](const session_ptr& s) { return s->id() == session_id; }), v.end());
        if (v.empty()) rooms_.erase(it);
    }

    /// Calls f(session&) for every local member of room_id. f must not change membership.
    /// Owning shard only.
    template <class F>
    void for_each(std::uint64_t room_id, F&& f) const {
        auto it = rooms_.find(room_id);
        if (it == rooms_.end()) return;
        for (const auto& s : it->second) f(*s);
    }

    /// Drops every reference (the shard is exiting). Owning shard only.
    void clear() noexcept { rooms_.clear(); }

    std::size_t room_count() const noexcept { return rooms_.size(); }

private:
    boost::unordered_flat_map<std::uint64_t, std::vector<session_ptr>> rooms_;
};

}  // namespace strix::chat
