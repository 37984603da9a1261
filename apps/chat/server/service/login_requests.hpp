#pragma once
// login_requests: login_req, the one request a session sends before it is anyone. Four steps on
// the session's shard, each answering the session itself when it refuses, then the password
// check on a database worker (login_job.hpp; a JWT's in a batch with others, jwt_login_queue.hpp),
// whose verdict comes back to the shard (done).
//
//   handle: validate ─ admit ─ throttle ─ hash ══> worker: run_login_job ══> done: finish
//           (well-     (--login- (name or    (queue                              (logged in, or
//           formed)    queue)    token key,   the job)                            the refusal)
//                                address)
//
// One per chat_service (its shard); every function runs there.

#include "chat_context.hpp"
#include "chat_counters.hpp"
#include "player.hpp"
#include "apps/chat/server/login/login_job.hpp"
#include "apps/chat/server/login/login_slot.hpp"
#include "apps/chat/server/login/login_throttle.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace strix::chat {

class chat_service;

class login_requests {
public:
    login_requests(chat_service& svc, chat_context& ctx, chat_counters& counters) noexcept
        : svc_(svc), ctx_(ctx), counters_(counters) {}

    /// login_req (request_table.cpp). Later requests of the session wait until the verdict.
    void handle(player& p, std::span<const std::byte> frame);

    /// The database worker's verdict on a login of session_id, posted back to this shard (by the
    /// job itself, or by jwt_login_queue's reply).
    void done(std::uint64_t session_id, login_verdict verdict);

private:
    struct credentials {
        std::string_view name;  // views into the request frame
        std::string_view password;
        std::optional<device_token_hash> token;   // the presented device token's hash
        std::optional<device_token_hash> resume;  // the presented resume token's hash
        std::string_view jwt;  // a JWT login's token (then nothing above is used)
        // The key the attempt is throttled under: the resume token's, else the device token's,
        // else the name.
        std::string throttle_key() const;
    };
    std::optional<credentials> validate(player& p, std::span<const std::byte> frame);
    login_slot admit(player& p);
    bool throttle(player& p, const credentials& c, const std::string& address);
    void refuse_throttled(player& p, const login_throttle::verdict& v, bool device);
    void refuse_jwt(player& p, const jwt_verdict& v);
    void hash(player& p, const credentials& c, std::string address, login_slot slot);
    void finish(player& p, login_verdict v);
    void rejoin_rooms(player& p, const login_result& result, const login_verdict& v);

    chat_service& svc_;
    chat_context& ctx_;
    chat_counters& counters_;
};

}  // namespace strix::chat
