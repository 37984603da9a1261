// login_requests (login_requests.hpp): the steps of a login on the session's shard, the job
// queued for a database worker, and the verdict brought back.

#include "login_requests.hpp"

#include "chat_service.hpp"
#include "hook_events.hpp"

#include "apps/chat/server/login/jwt_login_queue.hpp"
#include "apps/chat/server/login/login_job.hpp"
#include "apps/chat/server/login/login_throttle.hpp"
#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/server/net/names.hpp"

#include <strix/net/admission.hpp>
#include "apps/chat/storage/db_pool.hpp"

#include <algorithm>
#include <memory>
#include <span>
#include <string>

namespace strix::chat {
namespace {

using proto::error_code;
using proto::msg_type;

constexpr std::size_t max_password = 1024;
// login_req.version: 1 (or 0, absent) one room at a time; 2 many rooms (docs/protocol.md).
constexpr std::uint32_t max_protocol_version = 2;

}  // namespace

void login_requests::handle(player& p, std::span<const std::byte> frame) {
    STRIX_ASSERT_OWNER(svc_.home(), "login_requests::handle");
    const std::optional<credentials> c = validate(p, frame);
    if (!c) return;
    login_slot slot = admit(p);
    if (!slot) return;
    std::string address(admission::address_of(p.sess->peer()));
    // A token's signature cannot be guessed, so JWT logins skip the failed-login throttle; the
    // login queue bounds what verifying them costs.
    if (c->jwt.empty() && !throttle(p, *c, address)) return;
    hash(p, *c, std::move(address), std::move(slot));
}

std::optional<login_requests::credentials> login_requests::validate(player& p, std::span<const std::byte> frame) {
    auto* req = svc_.decode<proto::login_req>(p, frame, msg_type::login_req, "malformed login_req");
    if (!req) return std::nullopt;
    session& s = *p.sess;
    if (p.login != player::login_state::anonymous) {
        svc_.send_error(s, msg_type::login_req, error_code::already_logged_in, "this session is already logged in");
        return std::nullopt;
    }
    if (req->version() > max_protocol_version) {
        bump(counters_.bad_requests);
        svc_.send_error(s, msg_type::login_req, error_code::bad_request,
                        "this server speaks protocol versions 1 and 2 (login_req.version)");
        return std::nullopt;
    }
    p.version = req->version() >= 2 ? 2 : 1;
    credentials c;
    if (req->jwt() && req->jwt()->size() != 0) {
        if (!ctx_.jwt) {
            bump(counters_.bad_requests);
            svc_.send_error(s, msg_type::login_req, error_code::bad_request,
                            "JWT logins are off on this server (it has no --jwt-key)");
            return std::nullopt;
        }
        c.jwt = req->jwt()->string_view();
        return c;
    }
    if (!ctx_.options.jwt.passwords()) {
        bump(counters_.bad_requests);
        svc_.send_error(s, msg_type::login_req, error_code::bad_request,
                        "this server takes JWT logins only (login_req.jwt)");
        return std::nullopt;
    }
    c.name = req->name() ? req->name()->string_view() : std::string_view{};
    c.password = req->password() ? req->password()->string_view() : std::string_view{};
    if (!valid_player_name(c.name)) {
        svc_.send_error(s, msg_type::login_req, error_code::invalid_name, "names are 1-32 bytes of A-Z a-z 0-9 _ . -");
        return std::nullopt;
    }
    // A resume token stands in for the password (docs/protocol.md, "Resume tokens").
    if (const auto* t = req->resume_token(); t != nullptr && t->size() != 0) {
        device_token token;
        if (!device_token_from(std::as_bytes(std::span(t->data(), t->size())), token)) {
            bump(counters_.bad_requests);
            svc_.send_error(s, msg_type::login_req, error_code::bad_request, "a resume token is 32 bytes");
            return std::nullopt;
        }
        if (ctx_.options.resume_token_ttl.count() > 0) c.resume = hash_device_token(token);
    }
    if ((c.password.empty() && !c.resume) || c.password.size() > max_password) {
        bump(counters_.bad_requests);
        svc_.send_error(s, msg_type::login_req, error_code::bad_request,
                        c.password.empty() && req->resume_token() && req->resume_token()->size() != 0
                            ? "resume tokens are off on this server: log in with the password"
                            : "passwords are 1-1024 bytes");
        return std::nullopt;
    }
    // An empty vector is no token (a client may always send the field).
    if (const auto* t = req->device_token(); t != nullptr && t->size() != 0) {
        device_token token;
        if (!device_token_from(std::as_bytes(std::span(t->data(), t->size())), token)) {
            bump(counters_.bad_requests);
            svc_.send_error(s, msg_type::login_req, error_code::bad_request, "a device token is 32 bytes");
            return std::nullopt;
        }
        // With device tokens off a presented one is ignored: the login is an ordinary one.
        if (ctx_.options.device_token_ttl.count() > 0) c.token = hash_device_token(token);
    }
    return c;
}

// Bounded hashing: at most login_queue logins queued or running over all shards. Asked before
// the throttle, whose admission holds keys until the attempt's verdict.
login_slot login_requests::admit(player& p) {
    login_slot slot = login_slot::try_take(ctx_.logins_in_flight, ctx_.options.login_queue);
    if (!slot) {
        bump(counters_.server_busy);
        bump(counters_.login_queue_full);
        svc_.send_error(*p.sess, msg_type::login_req, error_code::server_busy,
                        "too many logins in progress; retry later");
    }
    return slot;
}

// The failed-login throttle, answered here without hashing anything: under the name, or under
// the device token's own key when one is presented (the worker falls back to the name if the
// token does not hold). An allowed attempt holds its keys until the worker reports its verdict
// (or hash abandons it).
bool login_requests::throttle(player& p, const credentials& c, const std::string& address) {
    const login_throttle::verdict v = ctx_.throttle->check(c.throttle_key(), address);
    if (v.allowed) return true;
    refuse_throttled(p, v, c.token.has_value() || c.resume.has_value());
    return false;
}

std::string login_requests::credentials::throttle_key() const {
    if (resume) return login_throttle::device_key(resume->bytes);
    if (token) return login_throttle::device_key(token->bytes);
    return std::string(name);
}

void login_requests::refuse_throttled(player& p, const login_throttle::verdict& v, bool device) {
    bump(counters_.login_throttled);
    const auto secs = (v.retry_after.count() + 999) / 1000;
    const char* whose = !v.by_account ? "from this address" : device ? "with this device token" : "for this account";
    svc_.send_error(*p.sess, msg_type::login_req, error_code::rate_limited,
                    std::string("too many failed logins ") + whose + "; retry in " + std::to_string(secs) + " s");
}

// The password check (or a JWT's, batched with others: jwt_login_queue), on a database worker;
// the session's later requests wait for its verdict.
void login_requests::hash(player& p, const credentials& c, std::string address, login_slot slot) {
    p.login = player::login_state::pending;
    p.pending = player::pending_op::login;
    sharded<chat_service>* services = &svc_.container();
    chat_context* ctx = &ctx_;
    const unsigned shard_index = svc_.shard_id();
    const std::uint64_t sid = p.sess->id();
    if (!c.jwt.empty()) {
        if (ctx_.jwt_logins->submit({std::string(c.jwt), shard_index, sid, std::move(slot)})) return;
        p.login = player::login_state::anonymous;
        p.pending = player::pending_op::none;
        bump(counters_.server_busy);
        svc_.send_error(*p.sess, msg_type::login_req, error_code::server_busy,
                        "the database queue is full; retry later");
        return;
    }
    const std::string held_key = c.throttle_key();
    // std::function copies the job it holds, so the copies share the request and the slot; the
    // slot goes back once, after the verdict, or when a job that never ran (refused here) is
    // destroyed.
    auto req = std::make_shared<login_request>(
        login_request{std::string(c.name), std::string(c.password), std::move(address), c.token, c.resume});
    bool queued = ctx_.pool.try_submit([services, ctx, shard_index, sid, req,
                                        slot = std::make_shared<login_slot>(std::move(slot))](chat_store& store) {
        login_verdict v = run_login_job(store, *ctx, *req);
        slot->release();
        services->invoke_on(shard_index, [sid, v = std::move(v)](chat_service& svc) mutable {
            svc.logins().done(sid, std::move(v));
        });
    });
    if (!queued) {
        ctx_.throttle->abandoned(held_key, req->address);
        p.login = player::login_state::anonymous;
        p.pending = player::pending_op::none;
        bump(counters_.server_busy);
        svc_.send_error(*p.sess, msg_type::login_req, error_code::server_busy,
                        "the database queue is full; retry later");
    }
}

void login_requests::refuse_jwt(player& p, const jwt_verdict& v) {
    bump(counters_.login_failures);
    bump(counters_.jwt_refused[static_cast<std::size_t>(v.refusal)]);
    svc_.send_error(*p.sess, msg_type::login_req, error_code::invalid_token, "JWT refused: " + v.reason);
}

void login_requests::done(std::uint64_t session_id, login_verdict verdict) {
    STRIX_ASSERT_OWNER(svc_.home(), "login_requests::done");
    player* p = svc_.find(session_id);
    if (!p) return;  // the session closed while the database worked
    finish(*p, std::move(verdict));
    svc_.complete(*p, player::pending_op::login);
}

// login_res, then the session goes back in the account's rooms: with protocol version 2 every
// room it belongs to (listed in login_res; the oldest joins first when the database holds more
// than the limit), with version 1 the one it joined last.
void login_requests::rejoin_rooms(player& p, const login_result& result, const login_verdict& v) {
    const bool created = result.outcome == login_outcome::created;
    const device_token* token = v.new_token ? &*v.new_token : nullptr;
    const device_token* resume = v.new_resume_token ? &*v.new_resume_token : nullptr;
    const std::string_view display = v.jwt ? std::string_view(v.jwt->claims->name) : std::string_view{};
    const auto expires = static_cast<std::uint64_t>(p.jwt_exp);
    if (p.version < 2) {
        svc_.send(*p.sess, frames::login_res(p.player_id, p.name, created, token, resume, nullptr, display, expires));
        if (result.room_id != 0) svc_.rejoin(p, room_id(result.room_id));
        return;
    }
    const std::span<const account_room> rooms(result.rooms.data(),
                                              std::min(result.rooms.size(), ctx_.options.max_rooms_per_account));
    svc_.send(*p.sess, frames::login_res(p.player_id, p.name, created, token, resume, &rooms, display, expires));
    for (const account_room& r : rooms) svc_.rejoin(p, room_id(r.room_id), r.last_read_seq);
}

void login_requests::finish(player& pl, login_verdict v) {
    player* p = &pl;
    session& s = *p->sess;
    if (v.token == token_use::ignored) bump(counters_.device_tokens_ignored);
    if (v.token == token_use::unknown) bump(counters_.device_tokens_unknown);
    if (v.resume == token_use::accepted) bump(counters_.resume_token_logins);
    if (v.resume == token_use::ignored || v.resume == token_use::unknown) bump(counters_.resume_tokens_refused);
    if (v.invalid_resume_token) {
        p->login = player::login_state::anonymous;
        bump(counters_.login_failures);
        svc_.send_error(s, msg_type::login_req, error_code::invalid_token,
                        "the resume token is unknown, expired or revoked; log in with the password");
        return;
    }
    if (v.jwt && !v.jwt->claims) {
        p->login = player::login_state::anonymous;
        refuse_jwt(*p, *v.jwt);
        return;
    }
    if (v.refused) {
        // The token did not hold and the name (or the address) waits: as if none was presented.
        p->login = player::login_state::anonymous;
        refuse_throttled(*p, *v.refused, false);
        return;
    }
    if (!v.result) {
        p->login = player::login_state::anonymous;
        bump(counters_.login_failures);
        svc_.send_error(s, msg_type::login_req, error_code::internal_error, "the database is unavailable; retry later");
        return;
    }
    const login_result& result = *v.result;
    switch (result.outcome) {
        case login_outcome::ok:
        case login_outcome::created:
            p->login = player::login_state::logged_in;
            p->player_id = result.acct.id;
            p->name = result.acct.name;
            svc_.logged_in(*p);
            s.set_max_frame(p->ws ? chat_service::ws_frame_limit(chat_service::max_frame_logged_in)
                                  : chat_service::max_frame_logged_in);
            s.handshake_done();  // the login timeout no longer applies
            bump(counters_.logins);
            bump(counters_.players);
            if (v.token == token_use::accepted) bump(counters_.device_token_logins);
            if (v.jwt) {
                bump(counters_.jwt_logins);
                svc_.jwt().logged_in(*p, *v.jwt->claims);
            }
            hook_events::session_up(svc_, ctx_, p->player_id, p->name);
            rejoin_rooms(*p, result, v);
            return;
        case login_outcome::wrong_password:
            p->login = player::login_state::anonymous;
            bump(counters_.login_failures);
            svc_.send_error(s, msg_type::login_req, error_code::wrong_password, "wrong password");
            return;
        case login_outcome::password_account:
            p->login = player::login_state::anonymous;
            bump(counters_.login_failures);
            bump(counters_.jwt_refused[static_cast<std::size_t>(jwt_refusal::bad_subject)]);
            svc_.send_error(s, msg_type::login_req, error_code::invalid_token,
                            "the token's sub names an account that logs in with a password");
            return;
        case login_outcome::unknown_account:
            p->login = player::login_state::anonymous;
            bump(counters_.login_failures);
            svc_.send_error(s, msg_type::login_req, error_code::unknown_account,
                            "no such account (registration is off)");
            return;
    }
}

}  // namespace strix::chat
