#pragma once
// login_job: the database worker's half of a login. login_requests::hash queues it once the
// session's shard has admitted the attempt (a --login-queue place, the failed-login throttle);
// its verdict goes back to that shard (login_requests::done).
//
//   no token:     verify the password ─────────────────────────────── report under the name
//   with a token: look its hash up ─ valid for this name, not expired ── verify, report under the
//                 │                                                    token's key (the name's
//                 │                                                    wait never applied)
//                 └─ unknown / expired / another name's: throttle.fall_back() → refused
//                    (rate_limited, nothing hashed) or verified as a login without a token
//
// A success stores a fresh device token for the account (replacing the one presented, if it was
// valid) and hands it to the client.
//
//   resume token: look its hash up ─ valid for this name, not expired ── logged in, no password
//                 │                                                    verified (nothing hashed)
//                 └─ not valid: with a password, an ordinary login (throttle.fall_back);
//                    without, invalid_token (a failure of the token's key and the address)
//
// Every success also stores a fresh resume token (replacing the presented one, single use).

#include "apps/chat/server/login/jwt.hpp"
#include "apps/chat/server/login/login_throttle.hpp"
#include "apps/chat/storage/chat_store.hpp"
#include "apps/chat/storage/device_token.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace strix::chat {

struct chat_context;

/// An account keeps at most this many device tokens (one per device that logs in; the oldest go
/// first), so clients that never present theirs cannot make its rows grow without end.
inline constexpr std::size_t max_device_tokens_per_account = 16;

struct login_request {
    std::string name;
    std::string password;
    std::string address;  // the client's address; empty on the Unix socket
    std::optional<device_token_hash> token;  // the presented device token's hash
    std::optional<device_token_hash> resume;  // the presented resume token's hash (replaces the password)
};

/// What became of a presented device token (counted on the shard).
enum class token_use : std::uint8_t {
    none,  // none presented (or device tokens are off)
    accepted,  // valid for this name: the name's wait did not apply
    ignored,  // expired, or another account's: an ordinary login
    unknown,  // not in the database (made up, replaced or revoked): an ordinary login, and a
              // failure of the address
};

struct login_verdict {
    std::optional<login_result> result;  // nullopt: refused, or the database failed
    std::optional<login_throttle::verdict> refused;  // the token did not hold and the name or
                                                     // address waits: rate_limited
    token_use token = token_use::none;
    std::optional<device_token> new_token;  // a success: the client's next token
    token_use resume = token_use::none;  // what became of a presented resume token
    bool invalid_resume_token = false;  // it did not hold and there is no password: invalid_token
    std::optional<device_token> new_resume_token;  // a success: the client's next resume token
    std::optional<jwt_verdict> jwt;  // a JWT login (jwt_login_queue): the token's verdict (claims, or the refusal)
};

/// Runs one admitted login against `store` and reports it to ctx.throttle (exactly once).
/// Never throws: a failing database is a verdict without result. Database worker thread.
login_verdict run_login_job(chat_store& store, chat_context& ctx, const login_request& req);

}  // namespace strix::chat
