#pragma once
// room_posts: messages a backend posts to a room through the server API (POST
// /api/v1/rooms/{room_id}/messages, docs/api.md), on the room's owner shard. Such a message is
// numbered, stored and delivered like a member's, and answered with its seq once it is committed
// (--ack stored). With an idempotency key it is posted once: a retry gets the first message's
// seq and nothing is delivered again, whether the first is still in flight (it waits for it),
// done (remembered here), or stored before a restart (found in the database, where the key is
// part of the message's row). In cluster mode the same key may reach several nodes: Redis's
// chat_publish keeps each published key for a day (room_backplane.hpp) and answers a repeat
// with the first message's seq, atomically with sequencing, so two nodes posting one key at
// the same moment still make one message.
//
//   post ─ room held? (cluster: read from the database) ── no: 404
//        ─ key in flight or remembered here? ── answer with its seq (repeated)
//        └ database worker: `from`'s account, the key's stored seq ── stored: answer (repeated)
//          └ sequencer.chat ─ taken (seq; cluster: or Redis knew the key) ─ commit ─ answer
//
// A cluster node holds a room only while a session of it is in the room; a post holds it
// (room_host::hold_for_api) from the first step to the answer, and the message reaches the
// members on every node through Redis, this node's too.
// One per chat_service; every function runs on its shard.

#include "room_id.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace strix::chat {

class chat_service;
struct chat_context;
struct account;

struct post_request {
    room_id room;
    std::string from;  // the sender's account name; "" for the application itself (sender id 0)
    std::string text;
    std::string key;   // idempotency key; "" for none
};

struct post_outcome {
    int status = 200;      // HTTP status: 200, 404, 503
    std::string error;     // the error's name when status is not 200
    std::string reason;
    std::uint64_t seq = 0;
    bool repeated = false;  // an earlier post with this key made the message
};

class room_posts {
public:
    using done_fn = std::function<void(const post_outcome&)>;

    room_posts(chat_service& svc, chat_context& ctx) noexcept : svc_(svc), ctx_(ctx) {}

    /// Posts req to its room (this shard must own it); `done` runs here once with the outcome.
    void post(post_request req, done_fn done);

    /// Keys remembered once done (the database answers for older ones).
    static constexpr std::size_t remembered_keys = 10000;

private:
    struct pending {
        std::optional<std::uint64_t> seq;  // set once done
        std::vector<done_fn> waiters;      // posts of this key waiting for the first
    };
    // The room is held for the post (room_host::hold_for_api) until finish().
    void held(post_request req, done_fn done);
    void looked_up(post_request req, done_fn done, std::optional<account> sender, std::optional<std::uint64_t> stored,
                   bool failed);
    void release(const post_request& req);
    void publish(post_request req, std::uint64_t sender_id, done_fn done);
    // Answers the post (and every post waiting on its key) and settles the key.
    void finish(const post_request& req, done_fn& done, const post_outcome& out);
    static std::string key_of(const post_request& req) { return std::to_string(req.room.value()) + ":" + req.key; }

    chat_service& svc_;
    chat_context& ctx_;
    std::unordered_map<std::string, pending> keys_;
    std::deque<std::string> done_keys_;  // oldest first: forgotten beyond remembered_keys
};

}  // namespace strix::chat
