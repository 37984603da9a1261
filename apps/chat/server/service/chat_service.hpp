#pragma once
// chat_service: the chat application on one shard (the server makes one per shard). It owns the
// players of the sessions on this shard, hosts the rooms this shard owns (room_host), and keeps
// this shard's replica of room membership (local_rooms). Each request goes where its row in
// request_table.cpp says:
//
//   session --frame--> on_frame --> dispatch (request_table) --login--> login_requests
//                                       ══> db_pool worker ══> back on this shard
//                                   --history, resume--> history_requests, resume_requests
//                                       ══> db_pool worker (db_reads) ══> back on this shard
//                                   --room op--> owner shard's room_host --room_event--> member shards
//                                   --ping--> reply at once
//
// Every function runs on this service's shard. Other shards and the database workers reach it
// through the sharded service that holds it (container().invoke_on), which calls the "posted"
// functions below.

#include "chat_context.hpp"
#include "chat_counters.hpp"
#include "db_reads.hpp"
#include "history_requests.hpp"
#include "jwt_sessions.hpp"
#include "apps/chat/server/rooms/room_posts.hpp"
#include "login_requests.hpp"
#include "player.hpp"
#include "resume_requests.hpp"
#include "apps/chat/server/hooks/publish_hook.hpp"
#include "apps/chat/server/rooms/local_rooms.hpp"
#include "apps/chat/server/rooms/room_host.hpp"

#include <strix/core/sharded.hpp>
#include <strix/net/session_handler.hpp>
#include "apps/chat/storage/chat_store.hpp"

#include <boost/unordered/unordered_flat_map.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strix::chat {

class chat_service final : public session_handler, public sharded_peers<chat_service> {
public:
    /// Frame limit before login (a login request is small) and after.
    static constexpr std::uint32_t max_frame_anonymous = 4 * 1024;
    static constexpr std::uint32_t max_frame_logged_in = 64 * 1024;
    /// A session's frame limit when the frame comes wrapped in a masked WebSocket frame.
    static constexpr std::uint32_t ws_frame_limit(std::uint32_t frame) noexcept { return frame + 14; }
    /// list_rooms_res carries at most this many rooms (smallest ids first), so it fits a frame.
    static constexpr std::size_t max_listed_rooms = 500;
    /// Requests one session may have waiting behind a login, join or leave in progress before
    /// the server stops reading from it (backpressure: the client's socket fills up); the frames
    /// of the read in progress still queue, up to 4x this, beyond which they are refused.
    static constexpr std::size_t max_waiting_requests = 64;
    static constexpr std::size_t max_waiting_bytes = 256 * 1024;

    /// Built by the server factory on the main thread; used on shard `sh` from then on.
    chat_service(shard& sh, chat_context& ctx);
    ~chat_service() override;

    /// Starts the per-shard housekeeping timer. Posted once to the shard after the engine starts.
    void start();

    void on_open(session& s) override;
    void on_frame(session& s, std::span<const std::byte> frame) override;
    void on_protocol_error(session& s, std::error_code ec) override;
    void on_close(session& s, std::error_code reason) override;

    // --- posted to this shard -----------------------------------------------------------------

    /// A room's owner decided something: update local membership and send the frames.
    void apply(room_event& ev);
    /// A request of this session failed on another shard (reason null: answer nothing).
    void request_failed(std::uint64_t session_id, room_id room, proto::msg_type request, proto::error_code code,
                        const char* reason);
    /// Room operations for rooms this shard owns.
    room_host& host() noexcept { return host_; }
    /// The request units, for what their database work brings back to this shard.
    login_requests& logins() noexcept { return logins_; }
    jwt_sessions& jwt() noexcept { return jwt_; }
    /// The logged-in sessions of `account` on this shard (the server API's presence).
    std::size_t sessions_of(std::uint64_t account) const;
    /// Closes every logged-in session of `account` on this shard, each told with
    /// error_res{none, forbidden}; returns how many (the server API's disconnect).
    std::size_t disconnect(std::uint64_t account);
    /// The server API's posts to the rooms this shard owns.
    room_posts& posts() noexcept { return posts_; }
    db_reads& reads() noexcept { return reads_; }
    resume_requests& resumes() noexcept { return resumes_; }

    /// This shard's counters; read from any thread.
    const chat_counters& counters() const noexcept { return counters_; }
    unsigned shard_id() const noexcept { return self_; }
    /// The shard this instance lives on; its entry points check it (STRIX_ASSERT_OWNER in debug
    /// and sanitizer builds). Any thread.
    shard& home() const noexcept { return shard_; }

    // --- for the request units (login_requests, db_reads, history_requests, resume_requests) ----

    /// Queues `frame` to s (as one WebSocket message to a WebSocket session); counted.
    void send(session& s, shared_buffer_ptr frame);
    /// error_res{request, code, reason} to s; counted.
    void send_error(session& s, proto::msg_type request, proto::error_code code, std::string_view reason);
    /// The request body as T, or nullptr after a bad_request reply (counted).
    template <class T>
    const T* decode(player& p, std::span<const std::byte> frame, proto::msg_type request, const char* what);
    /// The player of a session on this shard; nullptr once it closed.
    player* find(std::uint64_t session_id) noexcept;
    /// p logged in (its player_id is set): the account index finds it from now until it closes.
    void logged_in(player& p);
    /// p's pending operation `op` finished: the requests that waited behind it run, in order.
    void complete(player& p, player::pending_op op);
    /// Puts p back in `room`, whose member its account is (a login): as a join_room_req would,
    /// without spending a room-change token; later requests wait for the join_room_res.
    void rejoin(player& p, room_id room, std::uint64_t last_read = 0);
    /// A join or create may add a room to p (else the error reply is sent): one room with
    /// protocol version 1, up to the rooms-per-account limit with version 2.
    bool may_add_room(player& p, proto::msg_type request);
    /// A join of p's (a join_room_req or a login's rejoin) was answered: the pending join ends
    /// with the last one in flight.
    void join_answered(player& p);

    /// Account `account` belongs to direct room `room` now (its first message): each of its
    /// protocol version 2 sessions on this shard goes in, as a login's rejoin would (a session
    /// busy with another request, or at its room limit, finds it at its next login). Posted by
    /// the room's owner shard.
    void enter_direct(std::uint64_t account, room_id room);
    /// The database answered a direct_req of session `sid` (conversation_requests.cpp).
    void direct_opened(std::uint64_t sid, std::string to, direct_result r, std::string text, std::uint64_t client_ts,
                       std::uint64_t client_seq);
    /// The database stored (or found unknown) a block_req of session `sid`; with a direct room
    /// between the two, its owner shard applies it before the answer (conversation_requests.cpp).
    void block_stored(std::uint64_t sid, block_result r, bool blocked);
    /// The publish hook judged a chat_req of session `sid` (publish_requests.cpp): sent on as
    /// it was or rewritten, or refused with the reason.
    void published(std::uint64_t sid, room_id room, publish_verdict v, std::string text, std::uint64_t client_ts,
                   std::uint64_t client_seq);

private:
    friend class request_table;  // its rows name the handlers below

    void dispatch(player& p, std::span<const std::byte> frame);
    void hold(player& p, std::span<const std::byte> frame);
    // The handlers of request_table's rows, called by dispatch once the row allows the session.
    void handle_login(player& p, std::span<const std::byte> frame) { logins_.handle(p, frame); }
    void handle_create(player& p, std::span<const std::byte> frame);
    void handle_join(player& p, std::span<const std::byte> frame);
    void handle_leave(player& p, std::span<const std::byte> frame);
    void handle_chat(player& p, std::span<const std::byte> frame);
    void handle_list(player& p, std::span<const std::byte> frame);
    void handle_ping(player& p, std::span<const std::byte> frame);
    void handle_history(player& p, std::span<const std::byte> frame) { history_.handle(p, frame); }
    void handle_resume(player& p, std::span<const std::byte> frame) { resumes_.handle(p, frame); }
    void handle_read(player& p, std::span<const std::byte> frame);    // marker_requests.cpp
    void handle_typing(player& p, std::span<const std::byte> frame);  // marker_requests.cpp
    void handle_direct(player& p, std::span<const std::byte> frame);    // conversation_requests.cpp
    void handle_block(player& p, std::span<const std::byte> frame);     // conversation_requests.cpp
    void handle_moderate(player& p, std::span<const std::byte> frame);  // conversation_requests.cpp
    void handle_refresh(player& p, std::span<const std::byte> frame) { jwt_.handle_refresh(p, frame); }
    // A chat_req of p's to `room` (a member's), checked and counted: to its owner shard.
    void send_chat(player& p, room_id room, std::string_view text, std::uint64_t client_ts, std::uint64_t client_seq);
    // With --publish-hook-url: the chat_req goes to the hook first; the session's later requests
    // wait for its verdict (publish_requests.cpp).
    void ask_publish_hook(player& p, room_id room, std::string_view text, std::uint64_t client_ts,
                          std::uint64_t client_seq);

    /// Runs fn(chat_service&) on the shard that owns `room`: now when that is this shard, else
    /// posted (FIFO per pair of shards).
    template <class F>
    void on_owner(room_id room, F&& fn) {
        container().invoke_on(room.owner(container().size()), std::forward<F>(fn));
    }
    member as_member(const player& p) const;
    void sample();

    shard& shard_;
    chat_context& ctx_;
    const unsigned self_;
    chat_counters counters_;
    room_host host_;
    local_rooms local_;
    login_requests logins_{*this, ctx_, counters_};
    jwt_sessions jwt_{*this, ctx_, counters_};
    room_posts posts_{*this, ctx_};
    db_reads reads_{*this, ctx_, counters_};
    history_requests history_{*this, counters_, reads_};
    resume_requests resumes_{*this, ctx_, counters_, host_, reads_};
    player_limits limits_;  // every player's rate limits, from the options
    boost::unordered_flat_map<std::uint64_t, player*> players_;  // by session id; each session owns its player
    // The logged-in sessions of each account on this shard: the newest, which links the others
    // through player::next_of_account. What an account's direct room, presence or disconnect
    // looks at, instead of every player on the shard (at a million, 18,500 on each of 54).
    boost::unordered_flat_map<std::uint64_t, player*> accounts_;
    timer_node sample_timer_;
    bool started_ = false;
};

}  // namespace strix::chat
