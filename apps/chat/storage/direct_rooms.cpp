#include "apps/chat/storage/direct_rooms.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace strix::chat::storage_detail {

namespace {

// The pair's room, found or claimed for `new_room_id` (created: true). A claim loses only to
// a caller that committed the pair meanwhile (PostgreSQL: the unique key made this caller wait
// for that commit), so the next read finds its row; SQLite's write lock never lets it happen.
std::pair<std::uint64_t, bool> pair_room(direct_steps& s, std::uint64_t low, std::uint64_t high,
                                         std::uint64_t new_room_id) {
    for (int attempt = 0; attempt < 3; ++attempt) {
        const auto row = s.find_pair(low, high);
        if (!row) {
            if (s.claim_pair(low, high, new_room_id)) return {new_room_id, true};
        } else if (!row->live) {
            // Its room was deleted (both members had left): the pair gets a new one.
            if (s.move_pair(low, high, row->room_id, new_room_id)) return {new_room_id, true};
        } else {
            return {row->room_id, false};
        }
    }
    throw storage_error("direct room of accounts " + std::to_string(low) + " and " + std::to_string(high) +
                        " kept changing while it was opened");
}

}  // namespace

direct_result open_direct_with(direct_steps& s, std::uint64_t from, std::string_view to_name, std::uint64_t new_room_id,
                               std::int64_t now_us, std::size_t max_rooms) {
    direct_result out;
    const auto peer = s.account_named(to_name);
    if (!peer) return out;  // unknown_account
    if (peer->id == from) {
        out.outcome = direct_result::status::self;
        return out;
    }
    out.peer = *peer;
    if (s.blocks(peer->id, from)) {
        out.outcome = direct_result::status::blocked;
        return out;
    }
    const auto [room, created] = pair_room(s, std::min(from, peer->id), std::max(from, peer->id), new_room_id);
    const bool from_in = !created && s.is_member(room, from);
    const bool peer_in = !created && s.is_member(room, peer->id);
    // Only a membership this call would add counts against the limit.
    if (!from_in && s.membership_count(from) >= max_rooms) {
        out.outcome = direct_result::status::room_limit;
        return out;
    }
    if (!peer_in && s.membership_count(peer->id) >= max_rooms) {
        out.outcome = direct_result::status::room_limit;
        out.peer_at_limit = true;
        return out;
    }
    if (created) s.create_direct_room(room, now_us);
    if (!from_in) s.add_member(room, from, now_us);
    if (!peer_in) out.joined_peer = s.add_member(room, peer->id, now_us);
    out.outcome = direct_result::status::ok;
    out.room_id = room;
    out.created = created;
    return out;
}

block_result set_block_with(direct_steps& s, std::uint64_t account_id, std::string_view name, bool blocked,
                            std::int64_t now_us) {
    block_result out;
    const auto peer = s.account_named(name);
    if (!peer) return out;
    out.found = true;
    out.peer = *peer;
    s.set_block_row(account_id, peer->id, blocked, now_us);
    if (peer->id != account_id) {
        if (const auto row = s.find_pair(std::min(account_id, peer->id), std::max(account_id, peer->id));
            row && row->live) {
            out.direct_room = row->room_id;
        }
    }
    return out;
}

}  // namespace strix::chat::storage_detail
