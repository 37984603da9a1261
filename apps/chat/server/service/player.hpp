#pragma once
// player: the chat state of one session, owned by the session's shard and held by the session as
// its typed state (session::emplace_state<player>, read back with session::state<player>()).
// Created when the connection opens; "logged in" once the database said so.

#include "token_bucket.hpp"
#include "apps/chat/server/rooms/room_id.hpp"

#include <strix/net/session.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strix::chat {

/// Requests waiting for an earlier one: a deque made on the first and freed with the last, so
/// an idle session holds none (libstdc++'s std::deque allocates ~600 bytes even when empty).
class waiting_requests {
public:
    using frame = std::vector<std::byte>;
    bool empty() const noexcept { return !q_ || q_->empty(); }
    std::size_t size() const noexcept { return q_ ? q_->size() : 0; }
    frame& front() noexcept { return q_->front(); }
    template <class It>
    void emplace_back(It begin, It end) {
        made().emplace_back(begin, end);
    }
    void push_front(frame f) { made().push_front(std::move(f)); }
    void pop_front() noexcept {
        q_->pop_front();
        if (q_->empty()) q_.reset();
    }

private:
    std::deque<frame>& made() {
        if (!q_) q_ = std::make_unique<std::deque<frame>>();
        return *q_;
    }
    std::unique_ptr<std::deque<frame>> q_;
};

/// The server's per-session rate limits, shared by every player (chat_service holds them).
struct player_limits {
    rate_limit chat;
    rate_limit room;  // create_room_req and join_room_req (a leave always follows one)
    // typing_req per session: a client repeats it every few seconds while its user types.
    rate_limit typing{1.0, 5.0};
};

struct player {
    enum class login_state : std::uint8_t { anonymous, pending, logged_in };
    enum class room_state : std::uint8_t { none, joining, member };

    /// `l` must outlive the player (the service's).
    player(session_ptr s, const player_limits& l)
        : sess(std::move(s)), limits(&l), chat_bucket(l.chat), room_bucket(l.room), typing_bucket(l.typing) {}

    /// A token from the chat, room or typing bucket; false: over that limit.
    bool take_chat() noexcept { return chat_bucket.try_take(limits->chat); }
    bool take_room() noexcept { return room_bucket.try_take(limits->room); }
    bool take_typing() noexcept { return typing_bucket.try_take(limits->typing); }

    session_ptr sess;
    bool ws = false;  // a WebSocket session (chat_ws): every frame goes out as a binary message
    login_state login = login_state::anonymous;
    std::uint64_t player_id = 0;
    std::string name;
    // The next logged-in session of the same account on this shard (chat_service's account index).
    player* next_of_account = nullptr;
    // A JWT login's: when its token expires (Unix seconds; 0 for other logins), and the rooms it
    // may join or create (its `rooms` claim: ids and names; null, any). A pointer, not an
    // optional vector: most tokens have no such claim, and a session costs 24 bytes less.
    std::int64_t jwt_exp = 0;
    std::unique_ptr<const std::vector<std::string>> jwt_rooms;
    // A room this session is in or joining; requests about it go to its owner shard
    // (room_id::owner), which is the authority on membership.
    struct room_slot {
        room_id id;
        room_state state = room_state::joining;
        // The room's last seq when this session was added (join_room_res.last_seq): every
        // message above it reaches the session live, so a resume_req covers up to it.
        std::uint64_t joined_seq = 0;
    };
    // The rooms this session is in or joining, in join order: at most one with protocol version
    // 1, at most the server's rooms-per-account limit with version 2 (login_req.version).
    std::vector<room_slot> rooms;
    std::uint32_t version = 1;
    // Joins in flight that the pending join waits for: one for join_room_req, one per room a
    // login puts the session back in.
    unsigned joins_in_flight = 0;

    room_slot* slot(room_id id) noexcept {
        for (auto& r : rooms)
            if (r.id == id) return &r;
        return nullptr;
    }
    /// The room a request names: `id`, or with 0 the session's only room (null when it is in
    /// none or several).
    room_slot* named(std::uint64_t id) noexcept {
        if (id != 0) return slot(room_id(id));
        return rooms.size() == 1 ? &rooms.front() : nullptr;
    }
    void drop(room_id id) noexcept {
        for (auto it = rooms.begin(); it != rooms.end(); ++it)
            if (it->id == id) {
                rooms.erase(it);
                return;
            }
    }

    // Direct messages' state, which most sessions never use: allocated at the first direct_req
    // or direct room (8 bytes a session until then, not 48).
    struct direct_state {
        // Direct rooms this session opened with direct_req, by the peer's name: a later
        // direct_req to the same name goes straight to the room (no database read). Bounded like
        // its rooms.
        std::vector<std::pair<std::string, room_id>> opened;
        // Direct rooms the account was put in while this session was busy with another request:
        // entered when that completes (chat_service::complete).
        std::vector<room_id> entering;
    };
    std::unique_ptr<direct_state> directs;
    direct_state& directs_made() {
        if (!directs) directs = std::make_unique<direct_state>();
        return *directs;
    }
    room_id direct_to(std::string_view peer) const noexcept {
        if (directs)
            for (const auto& [n, id] : directs->opened)
                if (n == peer) return id;
        return room_id();
    }
    // The direct room a direct_req's join is in flight for (its message waits at the front of
    // `queued`): if the join fails, so does the direct_req, and the message is dropped.
    room_id direct_join;

    const player_limits* limits;
    token_bucket chat_bucket;
    token_bucket room_bucket;
    token_bucket typing_bucket;

    // Requests that arrived while an earlier one is decided elsewhere (a login, a history or
    // resume read on the database pool, a join or leave at the room's owner shard, a room list
    // gathered from every shard)
    // wait here and run in order once it completes: a session's requests take effect, and are
    // answered, in the order sent, whatever shard owns what.
    enum class pending_op : std::uint8_t { none, login, join, leave, list, history, direct, block, refresh, publish };
    waiting_requests queued;
    std::size_t queued_bytes = 0;
    pending_op pending = pending_op::none;
    bool draining = false;
    bool reading_held = false;  // the session stopped reading while too much waits here
};

}  // namespace strix::chat
