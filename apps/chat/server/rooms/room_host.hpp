#pragma once
// room_host: the rooms one shard owns. Every decision about a room's membership is made here, on
// its owner shard: who is a member, whether a join or leave is accepted (queued for the
// database). The outcome goes to the shards that have members as room_events (one per shard),
// and failures go back to the requesting session's shard as error replies.
//
// Room ids name their creating shard, which owns the room (room_id.hpp: modulo the shard count,
// so a room loaded from the database after a restart with fewer shards still has an owner).
//
// How a room's messages get their seqs, are stored and reach other nodes is the room sequencer's
// (room_sequencer.hpp), chosen once at start: local_sequencer on one node, cluster_sequencer
// with --cluster. The host asks it at the points where the two differ (a join of a room not
// held here, the join point, who is online elsewhere, whether a room goes with its last member)
// and hands it every chat message; the sequencer comes back through fan_out() and order().
//
//   chat_req ─> owner shard: room_host::chat (membership) ─> sequencer.chat ─> fan_out
//   join/leave ─> owner shard: room_host (membership, its database write) ─> fan_out
//
// Acknowledged means stored (--ack stored, the default): every write a decision needs is queued
// through commit_order, and the events that announce it wait there for its commit, in decision
// order (commit_order.hpp).

#include "commit_order.hpp"
#include "member.hpp"
#include "member_notices.hpp"
#include "room.hpp"
#include "room_event.hpp"
#include "room_id.hpp"
#include "room_sequencer.hpp"
#include "apps/chat/server/service/chat_counters.hpp"

#include <strix/proto/chat_generated.h>
#include "apps/chat/storage/chat_store.hpp"

#include <boost/unordered/unordered_flat_map.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strix::chat {

struct chat_context;
class chat_service;

class room_host {
public:
    /// Rooms owned by shard `self`, hosted by that shard's service (which reaches the other
    /// shards). Built on any thread; used on shard `self` only.
    room_host(chat_service& service, chat_context& ctx, unsigned self, chat_counters& counters);
    ~room_host();

    /// A fresh room id owned by this shard. Owner shard only.
    room_id allocate_id() noexcept { return seq_->allocate_id(); }

    /// Takes a room loaded from the database (its owner is this shard): no member present,
    /// its accounts absent, its seq continuing after the last stored message. Before the engine
    /// starts, on the thread that builds the server; in cluster mode also on the owner shard.
    void restore(stored_room r);

    /// Creates room `id` (from allocate_id) with `creator` as its only member and stores it; the
    /// creator's shard (this one) gets a joined event carrying create_room_res once stored, or
    /// server_busy when the database queue is full. Owner shard only.
    void create(room_id id, std::string name, member creator);
    /// The server API's create (room_api.cpp): room `id` (from allocate_id) with `owner` (id,
    /// name) as its owner and only member, offline, or with no member at all (owner id 0); stored,
    /// then done(true) once committed; done(false) when the database queue is full. Owner shard
    /// only.
    void create_for(room_id id, std::string name, std::uint64_t owner_id, std::string owner_name,
                    std::function<void(bool)> done);
    /// The server API's delete (room_api.cpp): group room `id` is deleted (its messages stay until
    /// retention), every session in it gets leave_room_res (in cluster mode on every node, told
    /// once the deletion is committed), and done(204, nullptr) runs once that is committed; else
    /// done(404 / 403 / 503, the reason) and nothing changes. Owner shard only.
    void delete_for(room_id id, std::function<void(int, const char*)> done);
    /// Another node deleted room `id` through its server API (committed): every session here
    /// leaves it (leave_room_res) and the room is forgotten. Owner shard only.
    void drop_deleted(room_id id);

    /// The server API acts on room `id` (room_posts, room_api.cpp): `then` gets the room, held
    /// here until release_for_api(id) (in cluster mode read from the database first when no
    /// session here is in it, and dropped again at the release unless one came meanwhile);
    /// nullptr when there is no such room (`failed`: the database did not answer), with nothing
    /// to release. Owner shard only.
    void hold_for_api(room_id id, std::function<void(room*, bool failed)> then);
    void release_for_api(room_id id);

    /// Adds session m to the room and stores that m's account belongs to it: join_room_res to m
    /// (every member with its online state, the join point), and to the others member_joined for
    /// a new member, member_presence (online) for a member coming back; unknown_room,
    /// already_in_room or server_busy back to m's shard otherwise. `rejoin`: the login of an
    /// account that belongs to the room (nothing to store; a room that is gone fails silently).
    /// A room this shard does not hold may be held elsewhere: the sequencer loads it first and
    /// joins again with `after_load` (a second miss is unknown_room). Owner shard only.
    void join(room_id id, member m, bool rejoin = false, bool after_load = false);

    /// Removes the session from the room. `reply`: it asked to leave: leave_room_res to it, the
    /// account no longer belongs to the room (stored; member_left to the others), and a room
    /// nobody belongs to any more is deleted when the sequencer says so (in cluster mode the
    /// database decides, once the leave is stored: a node's view may be stale). Without `reply`
    /// (the session closed) failures are silent and the account stays a member, offline
    /// (member_presence to the others), to be put back by its next login. Either way only the
    /// account's last session in the room counts. Owner shard only.
    void leave(room_id id, std::uint64_t session_id, unsigned session_shard, bool reply);

    /// Checks membership and hands the message to the sequencer, which numbers, stores and
    /// broadcasts it (not_in_room back to the sender otherwise). Owner shard only.
    void chat(chat_request& req);

    /// Raises the read marker of m's account in the room to `seq` (at most the room's last seq),
    /// stores it, answers read_res to m and read_marker to the account's other sessions; a seq at
    /// or below the marker only answers. not_in_room or server_busy back otherwise. Owner shard.
    void mark_read(room_id id, const member& m, std::uint64_t seq);

    /// A moderator's request (moderate_req): checked here against the actor's role (forbidden,
    /// not_in_room, bad_request back to it otherwise), its changes queued for the database, and
    /// the notice handed to the sequencer like a message; it takes effect when the notice goes
    /// out (apply_notice). room_moderation.cpp. Owner shard only.
    struct moderation {
        room_id room;
        member actor;
        proto::mod_action action = proto::mod_action::none;
        std::uint64_t target = 0;
        std::uint64_t seq = 0;
        std::uint32_t seconds = 0;
        // The server API's action (room_api.cpp): the application acts with the owner's
        // authority and needs no session in the room; actor is {0, this shard, 0, ""}.
        bool application = false;
        // Set: told the outcome instead of the actor's session (code none once the notice's
        // changes are committed).
        std::function<void(proto::error_code, std::string_view)> answer;
    };
    void moderate(moderation m);
    /// moderate() for the server API (application set, answer set): the room is held for it
    /// (hold_for_api) until its notice is taken. Owner shard only.
    void moderate_for_api(moderation m);

    /// What notice `text` (sent by `actor`) does to room r's state on this node: roles, bans,
    /// mutes, and for a kick or ban the target's sessions here leave the room (they got the
    /// notice first: leave_room_res follows it). Called by the sequencer right after it handed
    /// the notice to the members; `ticket`: the write the notice's delivery waits for. Owner
    /// shard only.
    /// `at_us`: the notice's server stamp.
    void apply_notice(room& r, std::uint64_t actor, std::string_view text, std::uint64_t ticket, std::int64_t at_us);

    /// A direct room found or made by the database (direct_req): held here from now on (on one
    /// node, where every room is held; in cluster mode a join loads it), both accounts members,
    /// and session m put in it as a login's rejoin would. Then every session of the accounts in
    /// `announce` on this node is put in it too (chat_service::enter_direct). Owner shard only.
    /// `created`: the database made the room just now (`info` is all of it).
    void open_direct(stored_room info, member m, std::vector<std::uint64_t> announce, bool created);
    /// The direct room `info` as another node opened it (or this one): held here when `created`
    /// (`info` is all of it; otherwise a join loads it), its two accounts members. Owner shard.
    void adopt_direct(stored_room info, bool created);
    /// Direct room `id` of accounts a and b as adopt_direct takes it: both members, no roles,
    /// ascending by account as the database lists them. Any thread.
    static stored_room direct_room_info(std::uint64_t id, const account& a, const account& b);
    /// Every session of `accounts` on this node goes in room `id` (chat_service::enter_direct on
    /// each shard). Owner shard, after the room is held.
    void enter_everywhere(room_id id, const std::vector<std::uint64_t>& accounts);

    /// In the direct room `id`: `blocker` takes (on = false) or refuses (on) messages from
    /// `blocked`. Owner shard only.
    void set_block(room_id id, std::uint64_t blocker, std::uint64_t blocked, bool on);

    /// Tells the room's other members that m is typing (typing, never stored); not_in_room back
    /// to m when it is not in the room. Owner shard only.
    void typing(room_id id, const member& m);

    /// The writer committed every write of this shard up to ticket `upto`: deliver what waited
    /// for them. Posted by the writer thread, runs on the owner shard.
    void committed(std::uint64_t upto);

    /// Events waiting for a commit (or behind one). Owner shard only.
    std::size_t held() const noexcept { return order_.held(); }

    /// Every room this shard owns. Owner shard only.
    std::vector<room_summary> summaries() const;

    /// Sends every pending member notice now. Owner shard only.
    void flush_notices();
    /// Cancels the notice timer and stops the sequencer; later notices go out at once (the shard
    /// is exiting). Owner shard only.
    void stop();
    std::size_t size() const noexcept { return rooms_.size(); }

    // --- for this shard's sequencer (and what it runs) --------------------------------------

    /// This shard's sequencer (local or cluster, fixed at start). Owner shard only.
    room_sequencer& sequencer() noexcept { return *seq_; }
    /// The shard's database writes and the events waiting for them. Owner shard only.
    commit_order& order() noexcept { return order_; }
    /// The service this host belongs to (its container reaches the other shards). Owner shard.
    chat_service& service() noexcept { return service_; }
    /// The room, or nullptr when this shard does not hold it. Owner shard only.
    room* find(room_id id) noexcept;
    /// Every room held. Owner shard only.
    const boost::unordered_flat_map<room_id, room>& rooms() const noexcept { return rooms_; }
    /// Sends one event per shard with members of r; `subject_shard` always gets one (it may
    /// have just lost its last member) with `to_subject` attached. The events wait for write
    /// `ticket` (0: none) in commit order. Owner shard only.
    void fan_out(const room& r, room_event::kind what, std::uint64_t subject, unsigned subject_shard,
                 const shared_buffer_ptr& to_subject, const shared_buffer_ptr& to_members, std::uint64_t ticket = 0,
                 std::uint64_t seq = 0, std::uint64_t account = 0);
    /// Whether r is large (more members than --member-list-limit): then the caller sends no
    /// member notice about a join, leave or presence change, and this counts it as suppressed.
    /// Owner shard only.
    bool quiet(const room& r);
    /// Sends r's pending member notices now (before a message or a join). Owner shard only.
    void flush_notices(const room& r) {
        // Nothing pending is the common case: one branch for every chat message.
        if (notices_.has(r.id())) send_notices(r);
    }
    /// The error reply for a request of session `session_id` on shard `shard`. Owner shard.
    void fail(unsigned shard, std::uint64_t session_id, room_id id, proto::msg_type request, proto::error_code code,
              const char* reason);
    /// Room `id` was deleted (in cluster mode by any node): forgotten here, unless a session
    /// here is in it (logged). Owner shard only.
    void forget_deleted(room_id id);

private:
    // Sends ev to shard `to` once write `ticket` is committed and everything decided before it
    // went out: applied at once when `to` is this shard, else posted (FIFO per pair).
    void deliver(unsigned to, room_event ev, std::uint64_t ticket);
    void send_event(unsigned to, room_event ev);
    // Member notices (see member_notices.hpp): queue one, or send a room's pending ones.
    void send_notices(const room& r);
    void notify(const room& r, std::uint64_t subject, unsigned subject_shard, bool joined, shared_buffer_ptr frame);
    // A kick or ban: the account's sessions here that joined before `before_us` (0: all) leave r
    // (leave_room_res to each) and it no longer belongs, unless one joined later; a room left
    // without sessions is dropped after this turn (cluster mode).
    void remove_account(room& r, std::uint64_t account, std::uint64_t ticket, std::int64_t before_us);
    // moderate()'s checks: the refusal's code and reason, or none.
    struct refusal {
        proto::error_code code;
        const char* reason;
    };
    std::optional<refusal> check(room& r, const moderation& m, std::int64_t now) const;
    // A leave that would leave the room without its owner (others still belong).
    bool owner_stays(const room& r, std::uint64_t session_id) const;
    // The owner (session `session_id`) leaves: its oldest admin, else its oldest other member,
    // becomes the owner (stored, and a transfer notice from the leaving owner).
    void hand_over(room& r, std::uint64_t session_id);

    // A room nobody here is in any more is dropped (cluster mode: not followed, its view would
    // go stale) unless the server API holds it.
    bool drops_idle(const room& r) const;
    // Every session in r leaves it (leave_room_res, after write `ticket`) and r is forgotten.
    void remove_everyone(room& r, std::uint64_t ticket);
    // Erases a held room (notices, gauge); a stale one's feed is let go first.
    void drop(room_id id);

    chat_service& service_;
    chat_context& ctx_;
    const unsigned self_;
    chat_counters& counters_;
    boost::unordered_flat_map<room_id, room> rooms_;
    boost::unordered_flat_map<room_id, unsigned> api_holds_;  // rooms the server API works on now
    member_notices notices_;
    timer_node notice_timer_;  // sends what waits in notices_ after the notice delay
    bool stopped_ = false;
    commit_order order_;
    std::unique_ptr<room_sequencer> seq_;  // last: it may reach the members above while built
};

}  // namespace strix::chat
