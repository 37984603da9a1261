#pragma once
// room_host: the rooms one shard owns. Every decision about a room is made here, on its owner
// shard: who is a member, the next seq, whether a message is accepted (queued for the database).
// The outcome goes to the shards that have members as room_events (one per shard), and failures
// go back to the requesting session's shard as error replies.
//
// Room ids: (counter << 8) | owner shard, so any shard finds a room's owner as id & 0xff.

#include "chat_counters.hpp"
#include "member.hpp"
#include "member_notices.hpp"
#include "room.hpp"
#include "room_event.hpp"

#include <strix/proto/chat_generated.h>

#include <boost/unordered/unordered_flat_map.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace strix::chat {

struct chat_context;

/// A chat message on its way to the room's owner.
struct chat_request {
    std::uint64_t room_id = 0;
    member sender;
    std::string text;
    std::uint64_t client_ts = 0;
    std::uint64_t client_seq = 0;
};

/// The shard that owns room_id.
inline unsigned owner_of(std::uint64_t room_id) noexcept { return static_cast<unsigned>(room_id & 0xff); }

class room_host {
public:
    /// Rooms owned by shard `self`. Built on any thread; used on shard `self` only.
    room_host(chat_context& ctx, unsigned self, chat_counters& counters);

    /// A fresh room id owned by this shard. Owner shard only.
    std::uint64_t allocate_id() noexcept { return (next_counter_++ << 8) | self_; }

    /// Creates room `id` (from allocate_id) with `creator` as its only member; the creator's
    /// shard (this one) gets a joined event carrying create_room_res. Owner shard only.
    void create(std::uint64_t id, std::string name, member creator);

    /// Adds m to the room: join_room_res to m, member_joined to the others; unknown_room (or
    /// already_in_room) back to m's shard otherwise. Owner shard only.
    void join(std::uint64_t room_id, member m);

    /// Removes the session from the room: leave_room_res to it when `reply`, member_left to the
    /// rest; an empty room is deleted. Without `reply` (the session closed) failures are silent.
    /// Owner shard only.
    void leave(std::uint64_t room_id, std::uint64_t session_id, unsigned session_shard, bool reply);

    /// Checks membership, assigns the seq, queues the log record for the database and broadcasts
    /// the chat_msg, in that order: a message the database queue refused is neither sequenced nor
    /// sent (server_busy to the sender). Owner shard only.
    void chat(chat_request& req);

    /// Every room this shard owns. Owner shard only.
    std::vector<room_summary> summaries() const;

    /// Sends every pending member notice now. Owner shard only.
    void flush_notices();
    /// Cancels the notice timer; later notices go out at once (the shard is exiting). Owner
    /// shard only.
    void stop();
    std::size_t size() const noexcept { return rooms_.size(); }

private:
    // Sends ev to shard `to`: applied at once when `to` is this shard, else posted (FIFO per pair).
    void deliver(unsigned to, room_event ev);
    // Sends one event per shard with members of r; `subject_shard` always gets one (it may have
    // just lost its last member) with `to_subject` attached.
    void fan_out(const room& r, room_event::kind what, std::uint64_t subject, unsigned subject_shard,
                 const shared_buffer_ptr& to_subject, const shared_buffer_ptr& to_members);
    void fail(unsigned shard, std::uint64_t session_id, std::uint64_t room_id, proto::msg_type request,
              proto::error_code code, const char* reason);
    // Member notices (see member_notices.hpp): queue one, or send a room's pending ones now.
    void notify(const room& r, std::uint64_t subject, unsigned subject_shard, bool joined, shared_buffer_ptr frame);
    void flush_notices(const room& r);

    chat_context& ctx_;
    const unsigned self_;
    chat_counters& counters_;
    std::uint64_t next_counter_;
    boost::unordered_flat_map<std::uint64_t, room> rooms_;
    member_notices notices_;
    timer_node notice_timer_;  // sends what waits in notices_ after the notice delay
    bool stopped_ = false;
};

}  // namespace strix::chat
