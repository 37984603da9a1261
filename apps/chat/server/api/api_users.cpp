// The server API's users (docs/api.md): an account's presence, and its sessions closed.
//
//   GET  /api/v1/users/{user}/presence    -> {"user", "online", "sessions"}: this node's sessions
//   POST /api/v1/users/{user}/disconnect  -> {"user", "closed"}: every session of the account on
//                                            this node gets error_res{none, forbidden} and is closed
//
// The account is looked up on a database worker (404 when there is none); the sessions are
// counted or closed by every shard (sharded::gather) from the call's shard.
#include "api_server.hpp"

#include "apps/chat/server/net/names.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>

#include <memory>
#include <numeric>

namespace strix::chat {
namespace {

using nlohmann::json;

// Finds the path's account on a database worker, then runs each_shard on every shard and
// answer(total) on the call's shard; a missing account is 404.
void over_sessions(api_server& api, http::request& req, api_call call,
                   std::function<std::size_t(chat_service&, const std::string&)> each_shard,
                   std::function<void(api_call&, const std::string&, std::size_t)> answer) {
    std::string user(req.param("user"));
    if (!valid_account_name(user))
        return call.fail(400, "bad_request", "user is an account name (1-64 bytes of A-Z a-z 0-9 _ . - @ : |)");
    auto held = std::make_shared<api_call>(std::move(call));
    api_server* a = &api;
    const bool queued = api.ctx().pool.try_submit([a, held, user, each_shard, answer](chat_store& store) {
        int status = 200;
        try {
            if (!store.find_account(user)) status = 404;
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "api: looking up account {} failed: {}", user, e.what());
            status = 503;
        }
        a->back_on(held->shard(), [a, held, user, status, each_shard, answer] {
            if (status == 404) return held->fail(404, "unknown_account", "no account is called " + user);
            if (status != 200)
                return held->fail(503, "database_unavailable", "the database is unavailable; retry later");
            a->services().gather([user, each_shard](chat_service& svc) { return each_shard(svc, user); },
                                 [held, user, answer](std::vector<std::size_t> parts) {
                                     const std::size_t total =
                                         std::accumulate(parts.begin(), parts.end(), std::size_t{0});
                                     answer(*held, user, total);
                                 });
        });
    });
    if (!queued) held->fail(503, "server_busy", "the database queue is full; retry later", {{"Retry-After", "1"}});
}

}  // namespace

void add_user_calls(api_server& api) {
    api.add("GET", "/api/v1/users/{user}/presence", [&api](http::request& req, api_call call) {
        over_sessions(
            api, req, std::move(call), [](chat_service& svc, const std::string& u) { return svc.sessions_of(u); },
            [](api_call& c, const std::string& u, std::size_t n) {
                c.reply({{"user", u}, {"online", n != 0}, {"sessions", n}});
            });
    });
    api.add("POST", "/api/v1/users/{user}/disconnect", [&api](http::request& req, api_call call) {
        over_sessions(
            api, req, std::move(call), [](chat_service& svc, const std::string& u) { return svc.disconnect(u); },
            [](api_call& c, const std::string& u, std::size_t n) {
                c.reply({{"user", u}, {"closed", n}});
            });
    });
}

}  // namespace strix::chat
