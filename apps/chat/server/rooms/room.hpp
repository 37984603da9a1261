#pragma once
// room: the authoritative state of one room, kept by its owner shard only. It knows every member
// (on any shard), how many members each shard has (so a broadcast crosses to each shard once),
// the message sequence, and the accounts that belong to the room but have no session in it now
// (absent: they disconnected without leaving, or the server restarted; a login brings them back).
//
// Members are sessions; belonging is per account. A room is abandoned, and deleted, only when
// nobody is present and nobody absent belongs to it.

#include "member.hpp"
#include "room_id.hpp"

#include <boost/unordered/unordered_flat_set.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strix::chat {

class room {
public:
    /// An empty room. shard_count sizes the per-shard member counts. Owner shard only.
    room(room_id id, std::string name, unsigned shard_count);

    room_id id() const noexcept { return id_; }
    const std::string& name() const noexcept { return name_; }
    std::size_t size() const noexcept { return members_.size(); }
    bool empty() const noexcept { return members_.empty(); }
    /// Members in the order they joined. Owner shard only.
    const std::vector<member>& members() const noexcept { return members_; }

    /// Adds m; false if that session is already a member. Owner shard only.
    bool add(member m);
    /// Removes the member with this session id and returns it, or nothing if absent. Owner shard only.
    std::optional<member> remove(std::uint64_t session_id);
    /// The member with this session id, or nullptr. Owner shard only.
    const member* find(std::uint64_t session_id) const noexcept;
    /// True if that session is a member; O(1). Owner shard only.
    bool contains(std::uint64_t session_id) const noexcept { return session_ids_.contains(session_id); }

    /// Whether a session of this account is a member. O(members). Owner shard only.
    bool has_player(std::uint64_t player_id) const noexcept;
    /// The account belongs here without a session in the room (it disconnected). Owner shard only.
    void mark_absent(std::uint64_t player_id) { absent_.insert(player_id); }
    /// The account no longer belongs here (it left). Owner shard only.
    void forget(std::uint64_t player_id) noexcept { absent_.erase(player_id); }
    std::size_t absent_count() const noexcept { return absent_.size(); }
    /// No member present and no absent account: nobody can come back. Owner shard only.
    bool abandoned() const noexcept { return members_.empty() && absent_.empty(); }

    /// Members living on shard s. Owner shard only.
    unsigned members_on(unsigned s) const noexcept { return per_shard_[s]; }
    unsigned shard_count() const noexcept { return static_cast<unsigned>(per_shard_.size()); }
    /// Members on WebSocket sessions (member::ws), on any shard. Owner shard only.
    std::size_t ws_members() const noexcept { return ws_members_; }

    /// The seq the next message gets (starts at 1). Owner shard only.
    std::uint64_t next_seq() const noexcept { return last_seq_ + 1; }
    /// Consumes next_seq(). Call only once the message is accepted. Owner shard only.
    std::uint64_t take_seq() noexcept { return ++last_seq_; }
    /// A room loaded from the database continues after its last stored message. Before use.
    void restore_seq(std::uint64_t last_seq) noexcept { last_seq_ = last_seq; }

    room_summary summary() const { return {id_.value(), name_, static_cast<std::uint32_t>(members_.size())}; }

private:
    room_id id_;
    std::string name_;
    std::vector<member> members_;                         // join order
    boost::unordered_flat_set<std::uint64_t> session_ids_;  // O(1) membership for every message
    std::vector<unsigned> per_shard_;
    std::size_t ws_members_ = 0;
    boost::unordered_flat_set<std::uint64_t> absent_;  // account ids
    std::uint64_t last_seq_ = 0;
};

}  // namespace strix::chat
