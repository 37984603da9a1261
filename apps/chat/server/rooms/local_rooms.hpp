#pragma once
// local_rooms: one shard's replica of room membership, restricted to the sessions living on this
// shard. Updated only by room events from each room's owner shard (applied in the owner's order),
// so a broadcast reaches every local member with one task per shard, never one per member.

#include "room_id.hpp"

#include <strix/net/session.hpp>

#include <boost/unordered/unordered_flat_map.hpp>

#include <cstdint>
#include <vector>

namespace strix::chat {

class local_rooms {
public:
    /// Adds s to the room's local members (no duplicates); O(1). Owning shard only.
    void add(room_id id, session_ptr s) {
        auto& r = rooms_[id];
        if (!r.at.try_emplace(s->id(), r.sessions.size()).second) return;
        r.sessions.push_back(std::move(s));
    }

    /// Removes the session from the room's local members (the last one takes its place: O(1));
    /// drops the room when none are left. Owning shard only.
    void remove(room_id id, std::uint64_t session_id) {
        auto it = rooms_.find(id);
        if (it == rooms_.end()) return;
        auto& r = it->second;
        auto at = r.at.find(session_id);
        if (at == r.at.end()) return;
        const std::size_t i = at->second;
        r.at.erase(at);
        if (i + 1 != r.sessions.size()) {
            r.sessions[i] = std::move(r.sessions.back());
            r.at[r.sessions[i]->id()] = i;
        }
        r.sessions.pop_back();
        if (r.sessions.empty()) rooms_.erase(it);
    }

    /// Calls f(session&) for every local member of the room. f must not change membership.
    /// Owning shard only.
    template <class F>
    void for_each(room_id id, F&& f) const {
        auto it = rooms_.find(id);
        if (it == rooms_.end()) return;
        for (const auto& s : it->second.sessions) f(*s);
    }

    /// Drops every reference (the shard is exiting). Owning shard only.
    void clear() noexcept { rooms_.clear(); }

    std::size_t room_count() const noexcept { return rooms_.size(); }

private:
    struct members {
        std::vector<session_ptr> sessions;                          // what a broadcast walks
        boost::unordered_flat_map<std::uint64_t, std::size_t> at;  // session id -> index in sessions
    };
    boost::unordered_flat_map<room_id, members> rooms_;
};

}  // namespace strix::chat
