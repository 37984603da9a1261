#include "room.hpp"

#include <algorithm>

namespace strix::chat {

room::room(room_id id, std::string name, unsigned shard_count)
    : id_(id), name_(std::move(name)), per_shard_(shard_count, 0) {}

room::added room::add(member m) {
    if (!session_ids_.insert(m.session_id).second) return added::duplicate;
    added what = added::more_sessions;
    room_member* a = account_mut(m.player_id);
    if (a == nullptr) {
        accounts_.push_back({m.player_id, m.name, 0});
        accounts_.back().role = role_of(m.player_id);
        a = &accounts_.back();
        what = added::new_member;
    } else if (!a->online()) {
        what = added::came_online;
    }
    a->last_read = std::max(a->last_read, m.last_read);
    ++a->sessions;
    ++per_shard_[m.shard];
    if (m.ws) ++ws_members_;
    members_.push_back(std::move(m));
    return what;
}

std::optional<member> room::remove(std::uint64_t session_id) {
    if (!session_ids_.erase(session_id)) return std::nullopt;
    auto it =
        std::find_if(members_.begin(), members_.end(), [&](const member& m) { return m.session_id == session_id; });
    if (it == members_.end()) return std::nullopt;
    member m = std::move(*it);
    members_.erase(it);
    --per_shard_[m.shard];
    if (room_member* a = account_mut(m.player_id); a != nullptr && a->sessions > 0) --a->sessions;
    if (m.ws) --ws_members_;
    return m;
}

const member* room::find(std::uint64_t session_id) const noexcept {
    if (!contains(session_id)) return nullptr;
    for (const auto& m : members_)
        if (m.session_id == session_id) return &m;
    return nullptr;
}

const room_member* room::account(std::uint64_t player_id) const noexcept {
    for (const auto& a : accounts_)
        if (a.player_id == player_id) return &a;
    return nullptr;
}

room_member* room::account_mut(std::uint64_t player_id) noexcept {
    for (auto& a : accounts_)
        if (a.player_id == player_id) return &a;
    return nullptr;
}

bool room::has_player(std::uint64_t player_id) const noexcept {
    const room_member* a = account(player_id);
    return a != nullptr && a->online();
}

void room::mark_absent(std::uint64_t player_id, std::string name) {
    if (account(player_id) != nullptr) return;
    accounts_.push_back({player_id, std::move(name), 0});
    accounts_.back().role = role_of(player_id);
}

void room::forget(std::uint64_t player_id) noexcept {
    accounts_.erase(std::remove_if(accounts_.begin(), accounts_.end(),
                                   [&](const room_member& a) { return a.player_id == player_id; }),
                    accounts_.end());
}

std::size_t room::absent_count() const noexcept {
    return static_cast<std::size_t>(
        std::count_if(accounts_.begin(), accounts_.end(), [](const room_member& a) { return !a.online(); }));
}

room_summary room::summary() const {
    const auto online = accounts_.size() - absent_count();
    return {id_.value(), name_, static_cast<std::uint32_t>(accounts_.size()), static_cast<std::uint32_t>(online),
            kind_};
}

std::uint8_t room::role_of(std::uint64_t player_id) const noexcept {
    auto it = roles_.find(player_id);
    return it == roles_.end() ? 0 : it->second;
}

void room::set_role(std::uint64_t player_id, std::uint8_t role) {
    if (role == 0)
        roles_.erase(player_id);
    else
        roles_[player_id] = role;
    if (room_member* a = account_mut(player_id)) a->role = role;
}

void room::sanction(std::uint64_t player_id, std::uint8_t kind, std::int64_t until_us) {
    (kind == 1 ? bans_ : mutes_)[player_id] = until_us;
}

void room::lift(std::uint64_t player_id, std::uint8_t kind) noexcept { (kind == 1 ? bans_ : mutes_).erase(player_id); }

bool room::under(boost::unordered_flat_map<std::uint64_t, std::int64_t>& m, std::uint64_t player_id,
                 std::int64_t now_us) {
    auto it = m.find(player_id);
    if (it == m.end()) return false;
    if (it->second == 0 || it->second > now_us) return true;
    m.erase(it);  // expired
    return false;
}

void room::set_block(std::uint64_t blocker, std::uint64_t blocked, bool on) {
    const auto pair = std::make_pair(blocker, blocked);
    auto it = std::find(blocks_.begin(), blocks_.end(), pair);
    if (on && it == blocks_.end()) blocks_.push_back(pair);
    if (!on && it != blocks_.end()) blocks_.erase(it);
}

bool room::blocks(std::uint64_t blocker, std::uint64_t blocked) const noexcept {
    return std::find(blocks_.begin(), blocks_.end(), std::make_pair(blocker, blocked)) != blocks_.end();
}

std::uint64_t room::other_member(std::uint64_t player_id) const noexcept {
    for (const auto& a : accounts_)
        if (a.player_id != player_id) return a.player_id;
    return 0;
}

}  // namespace strix::chat
