#include "room.hpp"

#include <algorithm>

namespace strix::chat {

room::room(room_id id, std::string name, unsigned shard_count)
    : id_(id), name_(std::move(name)), per_shard_(shard_count, 0) {}

bool room::add(member m) {
    if (!session_ids_.insert(m.session_id).second) return false;
    absent_.erase(m.player_id);
    ++per_shard_[m.shard];
    if (m.ws) ++ws_members_;
    members_.push_back(std::move(m));
    return true;
}

std::optional<member> room::remove(std::uint64_t session_id) {
    if (!session_ids_.erase(session_id)) return std::nullopt;
    auto it =
        std::find_if(members_.begin(), members_.end(), [&](const member& m) { return m.session_id == session_id; });
    if (it == members_.end()) return std::nullopt;
    member m = std::move(*it);
    // Keep join order for the member lists sent to joiners.
    members_.erase(it);
    --per_shard_[m.shard];
    if (m.ws) --ws_members_;
    return m;
}

bool room::has_player(std::uint64_t player_id) const noexcept {
    return std::any_of(members_.begin(), members_.end(), [&](const member& m) { return m.player_id == player_id; });
}

const member* room::find(std::uint64_t session_id) const noexcept {
    if (!contains(session_id)) return nullptr;
    for (const auto& m : members_)
        if (m.session_id == session_id) return &m;
    return nullptr;
}

}  // namespace strix::chat
