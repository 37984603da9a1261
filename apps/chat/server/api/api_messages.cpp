// The server API's messages (docs/api.md): a backend posts to a room, once per idempotency key.
//
//   POST /api/v1/rooms/{room_id}/messages  {"text", "from"?, "idempotency_key"?}
//     -> 200 {"seq", "repeated"}: stored (committed) and delivered to the room's members as any
//        chat_msg; repeated = true when an earlier post with the key made it (nothing delivered
//        again). The room's owner shard decides (room_posts.hpp).
//   POST /api/v1/users/{user}/messages     {"from", "text", "idempotency_key"?}
//     -> 200 {"room_id", "seq", "repeated"}: a direct message from account `from` to `user`, as
//        direct_req sends it: the pair's direct room is found or made (the database decides, the
//        blocks and room limits apply), both accounts' sessions go in when it is new (in cluster
//        mode on every node), then the message is posted there like the above.
#include "api_server.hpp"

#include "apps/chat/server/net/names.hpp"
#include "apps/chat/server/rooms/room_host.hpp"
#include "apps/chat/server/rooms/room_posts.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>

#include <memory>

namespace strix::chat {
namespace {

using nlohmann::json;

constexpr std::size_t max_text = 60000;  // chat_req's limit
constexpr std::size_t max_key = 128;

void post_message(api_server& api, http::request& req, api_call call) {
    const auto room = room_param(req, call);
    if (!room) return;
    const auto body = json_body(req, call);
    if (!body) return;
    body_refusal why;
    const auto text = string_field(*body, "text", true, max_text, why);
    const auto from = string_field(*body, "from", false, 64, why);
    const auto key = string_field(*body, "idempotency_key", false, max_key, why);
    if (!why.reason.empty()) return call.fail(why.status, "bad_request", why.reason);
    if (text->empty()) return call.fail(400, "bad_request", "\"text\" must not be empty");
    if (from && !valid_account_name(*from))
        return call.fail(400, "bad_request", "\"from\" is an account name (1-64 bytes of A-Z a-z 0-9 _ . - @ : |)");
    if (key && key->empty()) return call.fail(400, "bad_request", "\"idempotency_key\" must not be empty");

    post_request pr{room_id(*room), from.value_or(""), *text, key.value_or("")};
    auto held = std::make_shared<api_call>(std::move(call));
    api_server* a = &api;
    const unsigned owner = pr.room.owner(api.services().size());
    api.services().invoke_on(owner, [a, held, pr = std::move(pr)](chat_service& svc) mutable {
        svc.posts().post(std::move(pr), [a, held](const post_outcome& out) {
            a->back_on(held->shard(), [held, out] {
                if (out.status == 200)
                    held->reply({{"seq", out.seq}, {"repeated", out.repeated}});
                else
                    held->fail(out.status, out.error, out.reason);
            });
        });
    });
}

// Posts pr on the room's owner shard (this one) and answers the call on its shard.
void post_and_answer(api_server* a, std::shared_ptr<api_call> held, chat_service& owner, post_request pr) {
    const std::uint64_t room = pr.room.value();
    owner.posts().post(std::move(pr), [a, held, room](const post_outcome& out) {
        a->back_on(held->shard(), [held, out, room] {
            if (out.status == 200)
                held->reply({{"room_id", room}, {"seq", out.seq}, {"repeated", out.repeated}});
            else
                held->fail(out.status, out.error, out.reason);
        });
    });
}

// The database's answer to the pair's room: held on its owner shard, entered by the pair's
// sessions when new, then the message posted. The sessions' joins reach the owner before a round
// trip through every shard comes back (FIFO per pair of shards), so they get the message live.
void direct_room_ready(api_server* a, std::shared_ptr<api_call> held, chat_service& owner, direct_result r,
                       account from, post_request pr) {
    const stored_room info = room_host::direct_room_info(r.room_id, from, r.peer);
    owner.host().adopt_direct(info, r.created);
    if (!r.created && !r.joined_peer) return post_and_answer(a, held, owner, std::move(pr));
    owner.host().enter_everywhere(pr.room, {from.id, r.peer.id});
    // Cluster mode: the other nodes' sessions of the pair go in too (a chat:ctl signal, sent on
    // the connection the message is published on, so it reaches Redis first).
    owner.host().sequencer().direct_opened(info, r.created);
    chat_service* o = &owner;
    owner.container().gather([](chat_service&) { return 0; },
                             [a, held, o, pr = std::move(pr)](std::vector<int>) mutable {
                                 post_and_answer(a, held, *o, std::move(pr));
                             });
}

void post_direct(api_server& api, http::request& req, api_call call) {
    std::string to(req.param("user"));
    const auto body = json_body(req, call);
    if (!body) return;
    body_refusal why;
    const auto text = string_field(*body, "text", true, max_text, why);
    const auto from = string_field(*body, "from", true, 64, why);
    const auto key = string_field(*body, "idempotency_key", false, max_key, why);
    if (!why.reason.empty()) return call.fail(why.status, "bad_request", why.reason);
    if (text->empty()) return call.fail(400, "bad_request", "\"text\" must not be empty");
    if (!valid_account_name(to) || !valid_account_name(*from))
        return call.fail(400, "bad_request",
                         "user and \"from\" are account names (1-64 bytes of A-Z a-z 0-9 _ . - @ : |)");
    if (to == *from) return call.fail(400, "bad_request", "a direct message goes to another account");
    if (key && key->empty()) return call.fail(400, "bad_request", "\"idempotency_key\" must not be empty");
    auto held = std::make_shared<api_call>(std::move(call));
    api_server* a = &api;
    // A new room would be the call's shard's, like one a session there makes.
    const room_id fresh = api.services().on(held->shard()).host().allocate_id();
    const std::size_t limit = api.ctx().options.max_rooms_per_account;
    post_request pr{room_id(), *from, *text, key.value_or("")};
    const bool queued = api.ctx().pool.try_submit([a, held, fresh, limit, to,
                                                   pr = std::move(pr)](chat_store& store) mutable {
        std::optional<account> sender;
        direct_result r;
        bool failed = false;
        try {
            sender = store.find_account(pr.from);
            if (sender) r = store.open_direct(sender->id, to, fresh.value(), wall_clock_us(), limit);
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "api: direct message to {} failed: {}", to, e.what());
            failed = true;
        }
        using status = direct_result::status;
        if (failed || !sender || r.outcome != status::ok) {
            a->back_on(held->shard(), [held, failed, found = sender.has_value(), r, to, from = pr.from] {
                if (failed) return held->fail(503, "database_unavailable", "the database is unavailable; retry later");
                if (!found) return held->fail(404, "unknown_account", "no account is called " + from);
                switch (r.outcome) {
                    case status::unknown_account:
                        return held->fail(404, "unknown_account", "no account is called " + to);
                    case status::blocked:
                        return held->fail(403, "blocked", to + " does not take " + from + "'s direct messages");
                    case status::room_limit:
                        return held->fail(409, "room_limit", "an account of the pair is in as many rooms as it may be");
                    default: return held->fail(400, "bad_request", "a direct message goes to another account");
                }
            });
            return;
        }
        pr.room = room_id(r.room_id);
        const unsigned owner = pr.room.owner(a->services().size());
        a->services().invoke_on(owner, [a, held, r, s = *sender, pr = std::move(pr)](chat_service& svc) mutable {
            direct_room_ready(a, held, svc, r, s, std::move(pr));
        });
    });
    if (!queued) held->fail(503, "server_busy", "the database queue is full; retry later", {{"Retry-After", "1"}});
}

}  // namespace

void add_message_posts(api_server& api) {
    api.add("POST", "/api/v1/rooms/{room_id}/messages",
            [&api](http::request& req, api_call call) { post_message(api, req, std::move(call)); });
    api.add("POST", "/api/v1/users/{user}/messages",
            [&api](http::request& req, api_call call) { post_direct(api, req, std::move(call)); });
}

}  // namespace strix::chat
