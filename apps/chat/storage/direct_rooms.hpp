#pragma once
// open_direct and set_block, written once for both back ends: each back end opens the
// transaction, runs these over its own statements (direct_steps) and commits (an ok outcome) or
// rolls back (anything else, so a refused call changes nothing).

#include "apps/chat/storage/chat_store.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace strix::chat::storage_detail {

/// One statement each, run inside the caller's transaction. The back ends implement it.
class direct_steps {
public:
    /// A direct_rooms row: the pair's room, and whether that room is still there (not deleted).
    struct pair_row {
        std::uint64_t room_id = 0;
        bool live = false;
    };

    virtual std::optional<account> account_named(std::string_view name) = 0;
    /// An account_blocks row (blocker, blocked) exists.
    virtual bool blocks(std::uint64_t blocker, std::uint64_t blocked) = 0;
    virtual std::optional<pair_row> find_pair(std::uint64_t low, std::uint64_t high) = 0;
    /// Inserts the pair's row; false when a row holds the pair already (a racing caller's).
    virtual bool claim_pair(std::uint64_t low, std::uint64_t high, std::uint64_t room_id) = 0;
    /// Points the pair's row from `from_room` to `to_room`; false when it no longer holds from_room.
    virtual bool move_pair(std::uint64_t low, std::uint64_t high, std::uint64_t from_room, std::uint64_t to_room) = 0;
    virtual bool is_member(std::uint64_t room_id, std::uint64_t account_id) = 0;
    /// The account's account_rooms rows, but those of deleted rooms.
    virtual std::size_t membership_count(std::uint64_t account_id) = 0;
    /// A rooms row of kind 1 (direct) with an empty name; throws if the id is taken.
    virtual void create_direct_room(std::uint64_t room_id, std::int64_t now_us) = 0;
    /// A membership with role 0 and last_read_seq 0; false when it was there already.
    virtual bool add_member(std::uint64_t room_id, std::uint64_t account_id, std::int64_t now_us) = 0;
    /// Inserts (blocked) or deletes the account_blocks row; either is a no-op when already so.
    virtual void set_block_row(std::uint64_t account_id, std::uint64_t blocked_id, bool blocked,
                               std::int64_t now_us) = 0;

protected:
    ~direct_steps() = default;
};

/// chat_store::open_direct's decisions over `s`, inside the caller's transaction: commit it when
/// the outcome is ok, roll it back otherwise. Database worker thread; throws storage_error.
direct_result open_direct_with(direct_steps& s, std::uint64_t from, std::string_view to_name, std::uint64_t new_room_id,
                               std::int64_t now_us, std::size_t max_rooms);

/// chat_store::set_block's, likewise (commit it either way). Database worker thread; throws
/// storage_error.
block_result set_block_with(direct_steps& s, std::uint64_t account_id, std::string_view name, bool blocked,
                            std::int64_t now_us);

}  // namespace strix::chat::storage_detail
