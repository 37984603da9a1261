#pragma once
// jwt_sessions: what a JWT login leaves behind on the session's shard (docs/protocol.md, "JWT
// logins"): the token's expiry and `rooms` claim, a refresh_req that replaces them, and the
// session's end when its token expires without one.
//
//   login (exp E) ── E: token_expired{E, grace} ── E + grace: error_res token_expired, closed
//                       └─ refresh_req (same sub) ── refresh_res{E'}: watched again until E'
//
// One per chat_service; every function runs on its shard.

#include "chat_counters.hpp"
#include "player.hpp"
#include "apps/chat/server/login/jwt.hpp"

#include <cstdint>
#include <map>
#include <vector>
#include <span>
#include <string_view>
#include <utility>

namespace strix::chat {

class chat_service;
struct chat_context;

class jwt_sessions {
public:
    jwt_sessions(chat_service& svc, chat_context& ctx, chat_counters& counters) noexcept
        : svc_(svc), ctx_(ctx), counters_(counters) {}

    /// A JWT login succeeded: p takes the token's expiry and rooms, and is watched until exp.
    void logged_in(player& p, const jwt_claims& claims);
    /// refresh_req: the token is verified on a database worker (the session's later requests
    /// wait), then replaces the session's (refreshed).
    void handle_refresh(player& p, std::span<const std::byte> frame);
    /// Whether p's token lets it join room `id` (a create: `name`); else the error is sent and
    /// counted. Always true for sessions that did not log in with a JWT, or whose token has no
    /// `rooms` claim.
    bool may_join(player& p, std::uint64_t id);
    bool may_create(player& p, std::string_view name);
    /// Tells the sessions whose token expired, and closes those whose grace ran out. Called each
    /// second (chat_service::sample).
    void tick(std::int64_t now_s);

private:
    void refreshed(std::uint64_t session_id, jwt_verdict v);
    void watch(const player& p, std::int64_t at_s);
    void expire(std::uint64_t session_id, std::int64_t exp, std::int64_t now_s, std::int64_t grace);
    bool permits(const player& p, std::string_view entry) const;

    chat_service& svc_;
    chat_context& ctx_;
    chat_counters& counters_;
    // when -> (session id, the session's jwt_exp then), one bucket per second: tokens minted
    // together expire together, so an entry costs 16 bytes in a vector rather than a tree node
    // (64 with malloc's header, at a million sessions 48 MB). An entry is stale once the session
    // closed or refreshed (its jwt_exp moved on).
    std::map<std::int64_t, std::vector<std::pair<std::uint64_t, std::int64_t>>> deadlines_;
};

}  // namespace strix::chat
