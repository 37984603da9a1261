// The server API's users (docs/api.md): an account's presence, and its sessions closed.
//
//   GET  /api/v1/users/{user}/presence    -> {"user", "online", "sessions"}: this node's sessions
//   POST /api/v1/users/{user}/disconnect  -> {"user", "closed"}: every session of the account on
//                                            this node gets error_res{none, forbidden} and is closed
//                                            (`closed` counts them); in cluster mode the other
//                                            nodes close theirs on a chat:ctl signal
//
// The account is looked up on a database worker (404 when there is none); the sessions are
// counted or closed by every shard (sharded::gather) from the call's shard.
#include "api_server.hpp"

#include "apps/chat/server/net/names.hpp"

#include <memory>
#include <numeric>

namespace strix::chat {
namespace {

// each_shard(svc, account id) on every shard, then answer(call, account, the sum) on the call's
// shard.
void over_sessions(api_server& api, http::request& req, api_call call,
                   std::function<std::size_t(chat_service&, std::uint64_t)> each_shard,
                   std::function<void(api_call&, const account&, std::size_t)> answer) {
    std::string user(req.param("user"));
    if (!valid_account_name(user))
        return call.fail(400, "bad_request", "user is an account name (1-64 bytes of A-Z a-z 0-9 _ . - @ : |)");
    api_server* a = &api;
    with_account(api, std::move(call), user, [a, each_shard, answer](std::shared_ptr<api_call> held, account acct) {
        a->services().gather([id = acct.id, each_shard](chat_service& svc) { return each_shard(svc, id); },
                             [held, acct, answer](std::vector<std::size_t> parts) {
                                 answer(*held, acct, std::accumulate(parts.begin(), parts.end(), std::size_t{0}));
                             });
    });
}

}  // namespace

void add_user_calls(api_server& api) {
    api.add("GET", "/api/v1/users/{user}/presence", [&api](http::request& req, api_call call) {
        over_sessions(
            api, req, std::move(call), [](chat_service& svc, std::uint64_t id) { return svc.sessions_of(id); },
            [](api_call& c, const account& u, std::size_t n) {
                c.reply({{"user", u.name}, {"online", n != 0}, {"sessions", n}});
            });
    });
    api.add("POST", "/api/v1/users/{user}/disconnect", [&api](http::request& req, api_call call) {
        api_server* a = &api;
        over_sessions(
            api, req, std::move(call), [](chat_service& svc, std::uint64_t id) { return svc.disconnect(id); },
            [a](api_call& c, const account& u, std::size_t n) {
                // In cluster mode the other nodes close theirs when the signal reaches them.
                a->services().on(c.shard()).host().sequencer().disconnected(u);
                c.reply({{"user", u.name}, {"closed", n}});
            });
    });
}

}  // namespace strix::chat
