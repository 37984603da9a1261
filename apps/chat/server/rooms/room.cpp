#include "room.hpp"

#include <algorithm>

namespace strix::chat {

room::room(room_id id, std::string name, unsigned shard_count)
    : id_(id), name_(std::move(name)), per_shard_(shard_count, 0) {}

room::added room::add(member m) {
    if (!session_at_.try_emplace(m.session_id, members_.size()).second) return added::duplicate;
    added what = added::more_sessions;
    room_member* a = account_mut(m.player_id);
    if (a == nullptr) {
        accounts_.push_back({m.player_id, m.name, 0});
        accounts_.back().role = role_of(m.player_id);
        account_at_.emplace(m.player_id, std::prev(accounts_.end()));
        a = &accounts_.back();
        what = added::new_member;
    } else if (!a->online()) {
        what = added::came_online;
        count_out(*a);
    } else {
        count_out(*a);
    }
    a->last_read = std::max(a->last_read, m.last_read);
    ++a->sessions;
    count_in(*a);
    ++per_shard_[m.shard];
    if (m.ws) ++ws_members_;
    members_.push_back(room_seat{m.session_id, m.player_id, m.joined_us, m.shard, m.ws});
    return what;
}

std::optional<member> room::remove(std::uint64_t session_id) {
    auto at = session_at_.find(session_id);
    if (at == session_at_.end()) return std::nullopt;
    const std::size_t i = at->second;
    session_at_.erase(at);
    const room_seat seat = members_[i];
    // The last session takes the leaver's place: O(1) whatever the room's size.
    if (i + 1 != members_.size()) {
        members_[i] = members_.back();
        session_at_[members_[i].session_id] = i;
    }
    members_.pop_back();
    --per_shard_[seat.shard];
    if (room_member* a = account_mut(seat.player_id); a != nullptr && a->sessions > 0) {
        count_out(*a);
        --a->sessions;
        count_in(*a);
    }
    if (seat.ws) --ws_members_;
    return member_of(seat);
}

const room_seat* room::find(std::uint64_t session_id) const noexcept {
    auto it = session_at_.find(session_id);
    return it == session_at_.end() ? nullptr : &members_[it->second];
}

member room::member_of(const room_seat& seat) const {
    member m;
    m.session_id = seat.session_id;
    m.shard = seat.shard;
    m.player_id = seat.player_id;
    m.ws = seat.ws;
    m.joined_us = seat.joined_us;
    if (const room_member* a = account(seat.player_id)) {
        m.name = a->name;
        m.last_read = a->last_read;
    }
    return m;
}

const room_member* room::account(std::uint64_t player_id) const noexcept {
    auto it = account_at_.find(player_id);
    return it == account_at_.end() ? nullptr : &*it->second;
}

room_member* room::account_mut(std::uint64_t player_id) noexcept {
    auto it = account_at_.find(player_id);
    return it == account_at_.end() ? nullptr : &*it->second;
}

bool room::has_player(std::uint64_t player_id) const noexcept {
    const room_member* a = account(player_id);
    return a != nullptr && a->online();
}

void room::mark_absent(std::uint64_t player_id, std::string name) {
    if (account(player_id) != nullptr) return;
    accounts_.push_back({player_id, std::move(name), 0});
    accounts_.back().role = role_of(player_id);
    account_at_.emplace(player_id, std::prev(accounts_.end()));
}

void room::forget(std::uint64_t player_id) noexcept {
    auto it = account_at_.find(player_id);
    if (it == account_at_.end()) return;
    count_out(*it->second);
    accounts_.erase(it->second);
    account_at_.erase(it);
}

void room::count_out(const room_member& a) noexcept {
    if (a.online()) --online_;
    if (a.online_anywhere()) --online_anywhere_;
}

void room::count_in(const room_member& a) noexcept {
    if (a.online()) ++online_;
    if (a.online_anywhere()) ++online_anywhere_;
}

void room::add_remote(std::uint64_t player_id, int delta) noexcept {
    room_member* a = account_mut(player_id);
    if (a == nullptr || (delta < 0 && a->remote < static_cast<unsigned>(-delta))) return;
    count_out(*a);
    a->remote = static_cast<unsigned>(static_cast<int>(a->remote) + delta);
    count_in(*a);
}

void room::clear_remote() noexcept {
    for (auto& a : accounts_) {
        if (a.remote == 0) continue;
        count_out(a);
        a.remote = 0;
        count_in(a);
    }
}

std::vector<room_member> room::listed_accounts(std::size_t limit) const {
    if (large(limit)) return {};
    return {accounts_.begin(), accounts_.end()};
}

room_summary room::summary() const {
    return {id_.value(), name_, static_cast<std::uint32_t>(accounts_.size()), static_cast<std::uint32_t>(online_),
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
