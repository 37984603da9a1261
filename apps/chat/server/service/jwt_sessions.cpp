// jwt_sessions (jwt_sessions.hpp): refresh_req, the `rooms` claim, and expiry.

#include "jwt_sessions.hpp"

#include "chat_service.hpp"

#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <strix/net/websocket.hpp>

#include <algorithm>
#include <memory>
#include <string>

namespace strix::chat {

using proto::error_code;
using proto::msg_type;

std::string_view chat_counters::refusal_label(std::size_t i) {
    // Built once and never freed: a registry may render the labels until the process ends.
    static const auto* labels = [] {
        auto* out = new std::array<std::string, jwt_refusal_count>;
        for (std::size_t r = 0; r < jwt_refusal_count; ++r)
            (*out)[r] = "reason=\"" + std::string(jwt_refusal_name(static_cast<jwt_refusal>(r))) + "\"";
        return out;
    }();
    return (*labels)[i];
}

void jwt_sessions::logged_in(player& p, const jwt_claims& claims) {
    p.jwt_exp = claims.exp;
    p.jwt_rooms = claims.rooms ? std::make_unique<const std::vector<std::string>>(*claims.rooms) : nullptr;
    watch(p, claims.exp);
}

void jwt_sessions::watch(const player& p, std::int64_t at_s) { deadlines_[at_s].emplace_back(p.sess->id(), p.jwt_exp); }

void jwt_sessions::handle_refresh(player& p, std::span<const std::byte> frame) {
    auto* req = svc_.decode<proto::refresh_req>(p, frame, msg_type::refresh_req, "malformed refresh_req");
    if (!req) return;
    session& s = *p.sess;
    if (p.jwt_exp == 0 || !ctx_.jwt) {
        bump(counters_.bad_requests);
        svc_.send_error(s, msg_type::refresh_req, error_code::bad_request,
                        "refresh_req is for sessions that logged in with a JWT");
        return;
    }
    std::string token = req->jwt() ? req->jwt()->str() : std::string();
    sharded<chat_service>* services = &svc_.container();
    const jwt_auth* auth = ctx_.jwt;
    const unsigned shard_index = svc_.shard_id();
    const std::uint64_t sid = s.id();
    p.pending = player::pending_op::refresh;
    const bool queued = ctx_.pool.try_submit([services, auth, shard_index, sid, token = std::move(token)](chat_store&) {
        jwt_verdict v = auth->verify(token, wall_clock_us() / 1'000'000);
        services->invoke_on(shard_index, [sid, v = std::move(v)](chat_service& svc) mutable {
            svc.jwt().refreshed(sid, std::move(v));
        });
    });
    if (!queued) {
        p.pending = player::pending_op::none;
        bump(counters_.server_busy);
        svc_.send_error(s, msg_type::refresh_req, error_code::server_busy, "the database queue is full; retry later");
    }
}

void jwt_sessions::refreshed(std::uint64_t session_id, jwt_verdict v) {
    player* p = svc_.find(session_id);
    if (!p) return;
    session& s = *p->sess;
    if (!v.claims) {
        bump(counters_.jwt_refused[static_cast<std::size_t>(v.refusal)]);
        svc_.send_error(s, msg_type::refresh_req, error_code::invalid_token, "JWT refused: " + v.reason);
    } else if (v.claims->sub != p->name) {
        bump(counters_.jwt_refused[static_cast<std::size_t>(jwt_refusal::bad_subject)]);
        svc_.send_error(s, msg_type::refresh_req, error_code::invalid_token,
                        "the token is for another account (sub differs from the session's)");
    } else {
        bump(counters_.jwt_refreshes);
        p->jwt_exp = v.claims->exp;
        p->jwt_rooms =
            v.claims->rooms ? std::make_unique<const std::vector<std::string>>(std::move(*v.claims->rooms)) : nullptr;
        watch(*p, p->jwt_exp);
        svc_.send(s, frames::refresh_res(static_cast<std::uint64_t>(p->jwt_exp)));
    }
    svc_.complete(*p, player::pending_op::refresh);
}

bool jwt_sessions::permits(const player& p, std::string_view entry) const {
    return !p.jwt_rooms || std::find(p.jwt_rooms->begin(), p.jwt_rooms->end(), entry) != p.jwt_rooms->end();
}

bool jwt_sessions::may_join(player& p, std::uint64_t id) {
    if (permits(p, std::to_string(id))) return true;
    bump(counters_.jwt_room_refused);
    svc_.send_error(*p.sess, msg_type::join_room_req, error_code::forbidden,
                    "this session's token does not list room " + std::to_string(id) + " (its rooms claim)");
    return false;
}

bool jwt_sessions::may_create(player& p, std::string_view name) {
    if (permits(p, name)) return true;
    bump(counters_.jwt_room_refused);
    svc_.send_error(*p.sess, msg_type::create_room_req, error_code::forbidden,
                    "this session's token does not list a room of this name (its rooms claim)");
    return false;
}

void jwt_sessions::tick(std::int64_t now_s) {
    const auto grace = ctx_.options.jwt.grace.count();
    while (!deadlines_.empty() && deadlines_.begin()->first <= now_s) {
        const auto due = std::move(deadlines_.begin()->second);
        deadlines_.erase(deadlines_.begin());
        for (const auto& [sid, exp] : due) expire(sid, exp, now_s, grace);
    }
}

void jwt_sessions::expire(std::uint64_t sid, std::int64_t exp, std::int64_t now_s, std::int64_t grace) {
    player* p = svc_.find(sid);
    if (!p || p->jwt_exp != exp) return;  // closed, or refreshed since
    session& s = *p->sess;
    if (now_s < exp + grace) {
        svc_.send(s, frames::token_expired(static_cast<std::uint64_t>(exp), static_cast<std::uint32_t>(grace)));
        deadlines_[exp + grace].emplace_back(sid, exp);
        return;
    }
    bump(counters_.jwt_expired_closed);
    svc_.send_error(s, msg_type::none, error_code::token_expired,
                    "the session's token expired and no refresh_req came in time");
    if (p->ws)
        ws_close(s, 1008, "token expired");
    else
        s.close();
}

}  // namespace strix::chat
