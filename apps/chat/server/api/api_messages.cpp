// The server API's messages (docs/api.md): a backend posts to a room, once per idempotency key.
//
//   POST /api/v1/rooms/{room_id}/messages  {"text", "from"?, "idempotency_key"?}
//     -> 200 {"seq", "repeated"}: stored (committed) and delivered to the room's members as any
//        chat_msg; repeated = true when an earlier post with the key made it (nothing delivered
//        again). The room's owner shard decides (room_posts.hpp).
#include "api_server.hpp"

#include "apps/chat/server/net/names.hpp"
#include "apps/chat/server/rooms/room_posts.hpp"

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

}  // namespace

void add_message_posts(api_server& api) {
    api.add("POST", "/api/v1/rooms/{room_id}/messages",
            [&api](http::request& req, api_call call) { post_message(api, req, std::move(call)); });
}

}  // namespace strix::chat
