// The server API's room actions (docs/api.md): a room made by the application, and moderation
// with the owner's authority (the conversations' rules: never on the room's owner, not in a
// direct room).
//
//   POST /api/v1/rooms                    {"name", "owner"?}          -> 201 {id, name, kind, members}
//   DELETE /api/v1/rooms/{room_id}                                    -> 204: every session in it gets
//                                                                        leave_room_res
//   POST /api/v1/rooms/{room_id}/kick     {"user"}                    -> 204
//   POST /api/v1/rooms/{room_id}/ban      {"user", "duration_s"?}     -> 204 (0 or absent: no end)
//   POST /api/v1/rooms/{room_id}/mute     {"user", "duration_s"}      -> 204 (1 .. 31536000)
//
// Accounts are looked up on a database worker (with_account); a create runs on the call's shard
// (the room's owner, as a client's create does), moderation and delete on the room's owner shard.
// Each is answered once its changes are committed. In cluster mode the owner shard holds the room
// for the call (read from the database when nobody on this node is in it); moderation's notice
// reaches the other nodes through Redis in the room's order, as a session's does, and a delete
// reaches them as a chat:ctl signal once stored (room_host::delete_for).
#include "api_server.hpp"

#include "apps/chat/server/net/names.hpp"

#include <memory>

namespace strix::chat {
namespace {

using nlohmann::json;
using proto::error_code;
using proto::mod_action;

constexpr std::uint32_t max_sanction_seconds = 31'536'000;

void create_room(api_server& api, http::request& req, api_call call) {
    const auto body = json_body(req, call);
    if (!body) return;
    body_refusal why;
    const auto name = string_field(*body, "name", true, 64, why);
    const auto owner = string_field(*body, "owner", false, 64, why);
    if (!why.reason.empty()) return call.fail(why.status, "bad_request", why.reason);
    if (!valid_room_name(*name))
        return call.fail(400, "bad_request", "room names are 1-64 bytes of UTF-8 without control characters");
    if (owner && !valid_account_name(*owner))
        return call.fail(400, "bad_request", "\"owner\" is an account name (1-64 bytes of A-Z a-z 0-9 _ . - @ : |)");
    api_server* a = &api;
    auto make = [a, name = *name](std::shared_ptr<api_call> held, std::uint64_t owner_id, std::string owner_name) {
        room_host& host = a->services().on(held->shard()).host();
        const room_id id = host.allocate_id();
        const std::uint32_t members = owner_id != 0 ? 1 : 0;
        host.create_for(id, name, owner_id, std::move(owner_name), [held, id, name, members](bool ok) {
            if (!ok) return held->fail(503, "server_busy", "the database queue is full; retry later");
            held->reply({{"id", id.value()}, {"name", name}, {"kind", "group"}, {"members", members}}, 201);
        });
    };
    if (!owner) return make(std::make_shared<api_call>(std::move(call)), 0, {});
    with_account(api, std::move(call), *owner,
                 [make](std::shared_ptr<api_call> held, account acct) { make(held, acct.id, acct.name); });
}

void delete_room(api_server& api, http::request& req, api_call call) {
    const auto room = room_param(req, call);
    if (!room) return;
    auto held = std::make_shared<api_call>(std::move(call));
    api_server* a = &api;
    api.services().invoke_on(room_id(*room).owner(api.services().size()), [a, held, id = *room](chat_service& svc) {
        svc.host().delete_for(room_id(id), [a, held](int status, const char* reason) {
            a->back_on(held->shard(), [held, status, why = std::string(reason ? reason : "")] {
                if (status != 204)
                    return held->fail(status,
                                      status == 404   ? "unknown_room"
                                      : status == 403 ? "forbidden"
                                                      : "server_busy",
                                      why);
                http::response r;
                r.status = 204;
                held->send(std::move(r));
            });
        });
    });
}

int status_of(error_code code) {
    switch (code) {
        case error_code::none: return 204;
        case error_code::unknown_room:
        case error_code::not_in_room: return 404;
        case error_code::forbidden: return 403;
        case error_code::server_busy: return 503;
        default: return 400;
    }
}

void moderate(api_server& api, http::request& req, api_call call, mod_action action) {
    const auto room_opt = room_param(req, call);
    if (!room_opt) return;
    const std::uint64_t room = *room_opt;
    const auto body = json_body(req, call);
    if (!body) return;
    body_refusal why;
    const auto user = string_field(*body, "user", true, 64, why);
    if (!why.reason.empty()) return call.fail(why.status, "bad_request", why.reason);
    std::uint64_t seconds = 0;
    if (const auto d = body->find("duration_s"); d != body->end() && !d->is_null()) {
        if (!d->is_number_unsigned() || d->get<std::uint64_t>() > max_sanction_seconds)
            return call.fail(400, "bad_request", "\"duration_s\" is a whole number of seconds, at most 31536000");
        seconds = d->get<std::uint64_t>();
    }
    if (action == mod_action::mute && seconds == 0)
        return call.fail(400, "bad_request", "a mute needs \"duration_s\" (1-31536000)");
    api_server* a = &api;
    with_account(api, std::move(call), *user, [a, room, action, seconds](std::shared_ptr<api_call> held, account acct) {
        room_host::moderation m;
        m.room = room_id(room);
        m.actor = member{0, room_id(room).owner(a->services().size()), 0, {}};
        m.action = action;
        m.target = acct.id;
        m.seconds = static_cast<std::uint32_t>(seconds);
        m.application = true;
        m.answer = [a, held](error_code code, std::string_view reason) {
            a->back_on(held->shard(), [held, code, reason = std::string(reason)] {
                if (code == error_code::none) {
                    http::response r;
                    r.status = 204;
                    return held->send(std::move(r));
                }
                held->fail(status_of(code), proto::EnumNameerror_code(code), reason);
            });
        };
        a->services().invoke_on(m.actor.shard, [m = std::move(m)](chat_service& svc) mutable {
            svc.host().moderate_for_api(std::move(m));
        });
    });
}

}  // namespace

void add_room_actions(api_server& api) {
    api.add("POST", "/api/v1/rooms",
            [&api](http::request& req, api_call call) { create_room(api, req, std::move(call)); });
    api.add("DELETE", "/api/v1/rooms/{room_id}",
            [&api](http::request& req, api_call call) { delete_room(api, req, std::move(call)); });
    const std::pair<const char*, mod_action> actions[] = {
        {"/api/v1/rooms/{room_id}/kick", mod_action::kick},
        {"/api/v1/rooms/{room_id}/ban", mod_action::ban},
        {"/api/v1/rooms/{room_id}/mute", mod_action::mute},
    };
    for (const auto& [path, action] : actions)
        api.add("POST", path,
                [&api, action](http::request& req, api_call call) { moderate(api, req, std::move(call), action); });
}

}  // namespace strix::chat
