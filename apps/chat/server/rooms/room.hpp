#pragma once
// room: the authoritative state of one room, kept by its owner shard only. Two views of who is
// in it (docs/protocol.md, "Membership"):
//
//   accounts (room_member)   who BELONGS: a member from its join until it leaves on purpose,
//                            in join order; online while one of its sessions is in the room
//   sessions (member)        who RECEIVES: the sessions in the room now, and how many live on
//                            each shard (so a broadcast crosses to each shard once)
//
// A disconnect removes a session, never an account: the account goes offline and a login puts
// its next session back. The room is deleted when its last member account leaves, not when it
// is merely without sessions. Also the message sequence.
//
// Every join, leave and presence change costs O(1) here whatever the room's size (a room may
// hold a million members): sessions and accounts are found through hash indexes, and the online
// counts are kept up to date rather than counted.

#include "member.hpp"
#include "room_id.hpp"

#include <boost/unordered/unordered_flat_map.hpp>

#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <vector>

namespace strix::chat {

class room {
public:
    /// An empty room. shard_count sizes the per-shard session counts. Owner shard only.
    room(room_id id, std::string name, unsigned shard_count);
    // account_at_ points into accounts_: a move keeps those iterators valid, a copy would not.
    room(const room&) = delete;
    room& operator=(const room&) = delete;
    room(room&&) noexcept = default;
    room& operator=(room&&) noexcept = default;

    room_id id() const noexcept { return id_; }
    const std::string& name() const noexcept { return name_; }

    // --- sessions (who receives) -----------------------------------------------------------

    /// Sessions in the room now. Owner shard only.
    std::size_t size() const noexcept { return members_.size(); }
    bool empty() const noexcept { return members_.empty(); }
    /// Sessions, in no particular order (a leave moves the last one into its place). Owner shard
    /// only.
    const std::vector<room_seat>& members() const noexcept { return members_; }

    /// What add() did to the session's account.
    enum class added : std::uint8_t {
        duplicate,     // that session is in the room already: nothing changed
        new_member,    // the account did not belong to the room: it does now (member_joined)
        came_online,   // the account belonged, offline: it is online again (member_presence)
        more_sessions, // the account was online already: one more session, nothing to announce
    };
    /// Puts session m in the room, making its account a member (online) if needed. Owner shard only.
    added add(member m);
    /// Takes the session out and returns it (name and read marker its account's), or nothing if
    /// absent. Its account stays a member (offline when this was its last session): forget() it
    /// for a leave. Owner shard only.
    std::optional<member> remove(std::uint64_t session_id);
    /// The session with this id, or nullptr. Owner shard only.
    const room_seat* find(std::uint64_t session_id) const noexcept;
    /// The seat as a member: its account's name and read marker with it (empty when the
    /// account is not known here). Owner shard only.
    member member_of(const room_seat& seat) const;
    /// True if that session is in the room; O(1). Owner shard only.
    bool contains(std::uint64_t session_id) const noexcept { return session_at_.contains(session_id); }

    /// Sessions living on shard s. Owner shard only.
    unsigned members_on(unsigned s) const noexcept { return per_shard_[s]; }
    unsigned shard_count() const noexcept { return static_cast<unsigned>(per_shard_.size()); }
    /// Members on WebSocket sessions (member::ws), on any shard. Owner shard only.
    std::size_t ws_members() const noexcept { return ws_members_; }

    // --- accounts (who belongs) ------------------------------------------------------------

    /// Member accounts in join order, with their online state. Owner shard only.
    const std::list<room_member>& accounts() const noexcept { return accounts_; }
    /// The accounts as join_room_res lists them: all of them in join order, or none when the room
    /// is larger than `limit` (--member-list-limit; docs/protocol.md, "Large rooms"). Owner shard.
    std::vector<room_member> listed_accounts(std::size_t limit) const;
    /// More member accounts than `limit`: its joins, leaves and presence changes are not
    /// announced, and join_room_res lists no members. Owner shard only.
    bool large(std::size_t limit) const noexcept { return accounts_.size() > limit; }
    /// The member account, or nullptr if it does not belong here. Owner shard only.
    const room_member* account(std::uint64_t player_id) const noexcept;
    /// The same, to change (its read marker). Owner shard only.
    room_member* account_mut(std::uint64_t player_id) noexcept;
    /// Whether a session of this account is in the room. Owner shard only.
    bool has_player(std::uint64_t player_id) const noexcept;
    /// The account belongs here without a session (loaded from the database). Owner shard only.
    void mark_absent(std::uint64_t player_id, std::string name);
    /// The account no longer belongs here (it left); its sessions must be out already. Owner
    /// shard only.
    void forget(std::uint64_t player_id) noexcept;
    std::size_t absent_count() const noexcept { return accounts_.size() - online_; }
    /// Member accounts with a session here (kept, O(1)). Owner shard only.
    std::size_t online_count() const noexcept { return online_; }
    /// Cluster mode: the account is online on `delta` more (or fewer) other nodes; an unknown
    /// account is ignored. Owner shard only.
    void add_remote(std::uint64_t player_id, int delta) noexcept;
    /// Cluster mode: no account is online on another node (the view is no longer followed).
    void clear_remote() noexcept;
    /// Member accounts online here or on another node (kept, O(1)). Owner shard only.
    std::size_t online_anywhere() const noexcept { return online_anywhere_; }
    /// No member account left: the room is to be deleted. Owner shard only.
    bool abandoned() const noexcept { return accounts_.empty(); }

    // --- messages --------------------------------------------------------------------------

    /// The seq the next message gets (starts at 1). Owner shard only.
    std::uint64_t next_seq() const noexcept { return last_seq_ + 1; }
    /// The seq of the last accepted message (0: none yet). Owner shard only.
    std::uint64_t last_seq() const noexcept { return last_seq_; }
    /// Consumes next_seq(). Call only once the message is accepted. Owner shard only.
    std::uint64_t take_seq() noexcept { return ++last_seq_; }
    /// A room loaded from the database continues after its last stored message, all of which
    /// count as delivered. Before use.
    void restore_seq(std::uint64_t last_seq) noexcept { last_seq_ = delivered_seq_ = last_seq; }
    /// Cluster mode: the backplane assigned `seq` (the feed brought it); it may still wait behind a
    /// commit or a gap before this node hands it to its members. Owner shard only.
    void saw_seq(std::uint64_t seq) noexcept {
        if (seq > last_seq_) last_seq_ = seq;
    }
    /// Cluster mode: this node handed the room's messages up to `seq` to its members. Owner shard.
    void note_delivered(std::uint64_t seq) noexcept {
        if (seq > delivered_seq_) delivered_seq_ = seq;
    }
    /// The last seq this node handed to its members: a joining member's join point, so that what
    /// it gets live starts right after what resume gives it (in cluster mode last_seq() may be
    /// ahead: messages seen but still held). Owner shard only.
    std::uint64_t delivered_seq() const noexcept { return delivered_seq_; }

    room_summary summary() const;

    // --- kind, roles and moderation (room_host checks them; notices change them) -------------

    /// 0 group, 1 direct (proto::room_kind). Owner shard only.
    std::uint8_t kind() const noexcept { return kind_; }
    bool direct() const noexcept { return kind_ == 1; }
    void set_kind(std::uint8_t k) noexcept { kind_ = k; }
    /// The account's role (0 member, 1 admin, 2 owner), kept apart from who this node knows to
    /// belong (in cluster mode a member that joined elsewhere may be unknown here, and a notice
    /// may still promote it). Owner shard only.
    std::uint8_t role_of(std::uint64_t player_id) const noexcept;
    void set_role(std::uint64_t player_id, std::uint8_t role);
    /// Bans and mutes in force: kind 1 ban, 2 mute; until_us 0 never ends. Owner shard only.
    void sanction(std::uint64_t player_id, std::uint8_t kind, std::int64_t until_us);
    void lift(std::uint64_t player_id, std::uint8_t kind) noexcept;
    /// Whether the account is banned / muted at `now_us` (an expired entry is dropped).
    bool banned(std::uint64_t player_id, std::int64_t now_us) { return under(bans_, player_id, now_us); }
    bool muted(std::uint64_t player_id, std::int64_t now_us) { return under(mutes_, player_id, now_us); }
    /// A direct room: `blocker` takes no messages from `blocked` (set or lifted). Owner shard.
    void set_block(std::uint64_t blocker, std::uint64_t blocked, bool on);
    bool blocks(std::uint64_t blocker, std::uint64_t blocked) const noexcept;
    /// Cluster mode: emptied by a kick or ban, no longer followed; the next join loads it again.
    void mark_stale() noexcept { stale_ = true; }
    bool stale() const noexcept { return stale_; }
    /// A stale room's feed and presence are no longer followed (the sequencer's unwatch ran).
    void mark_unwatched() noexcept { unwatched_ = true; }
    bool unwatched() const noexcept { return unwatched_; }
    /// A direct room: the member that is not `player_id` (0 when none). Owner shard only.
    std::uint64_t other_member(std::uint64_t player_id) const noexcept;

private:
    // Adjusts the online counts around a change of account a's sessions or remote nodes.
    void count_out(const room_member& a) noexcept;
    void count_in(const room_member& a) noexcept;
    static bool under(boost::unordered_flat_map<std::uint64_t, std::int64_t>& m, std::uint64_t player_id,
                      std::int64_t now_us);

    room_id id_;
    std::string name_;
    std::vector<room_seat> members_;                               // sessions (swap-removed)
    boost::unordered_flat_map<std::uint64_t, std::size_t> session_at_;  // session -> index in members_
    std::vector<unsigned> per_shard_;
    std::list<room_member> accounts_;  // join order; a list, so that a leave erases in O(1)
    boost::unordered_flat_map<std::uint64_t, std::list<room_member>::iterator> account_at_;
    std::size_t online_ = 0;           // accounts with a session here
    std::size_t online_anywhere_ = 0;  // accounts with a session here or on another node
    std::size_t ws_members_ = 0;
    std::uint64_t last_seq_ = 0;
    std::uint64_t delivered_seq_ = 0;  // cluster mode; on one node messages go out as they are taken
    std::uint8_t kind_ = 0;
    bool stale_ = false;
    bool unwatched_ = false;
    boost::unordered_flat_map<std::uint64_t, std::int64_t> bans_, mutes_;  // account -> until_us (0: never)
    boost::unordered_flat_map<std::uint64_t, std::uint8_t> roles_;          // admins and the owner
    std::vector<std::pair<std::uint64_t, std::uint64_t>> blocks_;           // (blocker, blocked)
};

}  // namespace strix::chat
