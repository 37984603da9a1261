#pragma once
// chat_service: the chat application on one shard (the server makes one per shard). It owns the
// players of the sessions on this shard, hosts the rooms this shard owns (room_host), and keeps
// this shard's replica of room membership (local_rooms).
//
//   session --frame--> on_frame --login--> db_pool worker --post--> login_done (this shard)
//                              --history/resume--> db_pool worker --post--> read_done
//                              --room op--> owner shard's room_host --room_event--> member shards
//                              --ping/errors--> reply at once
//
// Every function runs on this service's shard. Other shards and the database workers reach it
// through the sharded service that holds it (container().invoke_on), which calls the "posted"
// functions below.

#include "chat_context.hpp"
#include "chat_counters.hpp"
#include "player.hpp"
#include "apps/chat/server/login/login_job.hpp"
#include "apps/chat/server/login/login_slot.hpp"
#include "apps/chat/server/login/login_throttle.hpp"
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
    /// The database worker's verdict on a login (login_job.hpp).
    void login_done(std::uint64_t session_id, login_verdict verdict);
    /// A request of this session failed on another shard (reason null: answer nothing).
    void request_failed(std::uint64_t session_id, room_id room, proto::msg_type request, proto::error_code code,
                        const char* reason);
    /// Room operations for rooms this shard owns.
    room_host& host() noexcept { return host_; }

    /// This shard's counters; read from any thread.
    const chat_counters& counters() const noexcept { return counters_; }
    unsigned shard_id() const noexcept { return self_; }

private:
    void dispatch(player& p, std::span<const std::byte> frame);
    void hold(player& p, std::span<const std::byte> frame);
    void complete(player& p, player::pending_op op);
    // handle_login's steps, in order (chat_service_login.cpp); each answers the session itself
    // when it refuses.
    struct credentials {
        std::string_view name;  // views into the request frame
        std::string_view password;
        std::optional<device_token_hash> token;   // the presented device token's hash
        std::optional<device_token_hash> resume;  // the presented resume token's hash
        // The key the attempt is throttled under: the resume token's, else the device token's,
        // else the name.
        std::string throttle_key() const;
    };
    void handle_login(player& p, std::span<const std::byte> frame);
    std::optional<credentials> validate_login(player& p, std::span<const std::byte> frame);
    login_slot admit_login(player& p);
    bool throttle_login(player& p, const credentials& c, const std::string& address);
    void refuse_throttled(player& p, const login_throttle::verdict& v, bool device);
    void hash_login(player& p, const credentials& c, std::string address, login_slot slot);
    void finish_login(player& p, login_verdict v);
    void rejoin(player& p, room_id room);
    void handle_create(player& p, std::span<const std::byte> frame);
    void handle_join(player& p, std::span<const std::byte> frame);
    void handle_leave(player& p);
    void handle_chat(player& p, std::span<const std::byte> frame);
    void handle_list(player& p);
    void handle_ping(player& p, std::span<const std::byte> frame);
    // History and resume (chat_service_history.cpp): read on a database worker, answered here.
    void handle_history(player& p, std::span<const std::byte> frame);
    void handle_resume(player& p, std::span<const std::byte> frame);
    bool submit_read(player& p, proto::msg_type request, std::function<std::vector<shared_buffer_ptr>(chat_store&)> read,
                     bool gap_counts);
    void read_done(std::uint64_t session_id, proto::msg_type request, std::vector<shared_buffer_ptr> frames, int outcome);
    // A resume reads the database's rows of the range on a worker, and when they are not all of
    // it the room sequencer completes them from what it holds (chat_service_history.cpp).
    void resume_read(player& p, std::uint64_t room, std::uint64_t from, std::uint64_t to);
    void resume_stored(std::uint64_t session_id, std::uint64_t room, std::uint64_t from, std::uint64_t to,
                       stored_range rows);
    void resume_merged(std::uint64_t session_id, std::uint64_t room, std::uint64_t from, std::uint64_t to,
                       stored_range rows);

    /// Runs fn(chat_service&) on the shard that owns `room`: now when that is this shard, else
    /// posted (FIFO per pair of shards).
    template <class F>
    void on_owner(room_id room, F&& fn) {
        container().invoke_on(room.owner(container().size()), std::forward<F>(fn));
    }
    /// The request body as T, or nullptr after a bad_request reply (counted).
    template <class T>
    const T* decode(player& p, std::span<const std::byte> frame, proto::msg_type request, const char* what);
    void send(session& s, shared_buffer_ptr frame);
    void send_error(session& s, proto::msg_type request, proto::error_code code, std::string_view reason);
    player* find(std::uint64_t session_id) noexcept;
    member as_member(const player& p) const;
    void sample();

    shard& shard_;
    chat_context& ctx_;
    const unsigned self_;
    chat_counters counters_;
    room_host host_;
    local_rooms local_;
    boost::unordered_flat_map<std::uint64_t, player*> players_;  // by session id; each session owns its player
    timer_node sample_timer_;
    bool started_ = false;
};

}  // namespace strix::chat
