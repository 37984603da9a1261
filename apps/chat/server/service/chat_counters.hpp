#pragma once
// chat_counters: what one shard's chat service counts about itself, declared as metrics
// (strix/core/metrics.hpp). Each shard writes only its own (single writer: strix::bump, no locked
// instruction); chat_server registers every shard's instance, and a scrape sums them.

#include "request_table.hpp"
#include "apps/chat/server/login/jwt.hpp"

#include <strix/core/metrics.hpp>
#include <strix/core/shard.hpp>  // room_host.hpp takes timer_node from here

#include <array>
#include <utility>

namespace strix::chat {

struct chat_counters : metric_group {
    counter app_in{*this, "strix_app_messages_in_total", "requests the chat service decoded"};
    counter app_out{*this, "strix_app_messages_out_total", "frames the chat service queued to sessions"};
    counter logins{*this, "strix_logins_total", "successful logins"};
    // Wrong password, unknown account, database error.
    counter login_failures{*this, "strix_login_failures_total", "failed logins"};
    counter errors{*this, "strix_errors_total", "error_res replies sent"};
    counter bad_requests{*this, "strix_bad_requests_total", "malformed or unknown requests"};
    counter rate_limited{*this, "strix_rate_limited_total", "chat messages refused by the rate limit"};
    counter room_rate_limited{*this, "strix_room_rate_limited_total",
                              "create/join refused by the room-change rate limit"};
    counter typing_limited{*this, "strix_typing_limited_total", "typing_req refused by the typing rate limit"};
    counter room_limited{*this, "strix_room_limited_total", "create/join refused by the rooms-per-account limit"};
    counter moderations{*this, "strix_moderations_total", "moderate_req carried out (a notice sent)"};
    counter moderation_refused{*this, "strix_moderation_refused_total",
                               "moderate_req refused (role, target, or arguments)"};
    counter directs_opened{*this, "strix_directs_opened_total", "direct rooms created by direct_req"};
    counter sends_refused{*this, "strix_sends_refused_total",
                          "chat_req refused in a room: muted, banned, or blocked by a direct peer"};
    counter login_throttled{*this, "strix_login_throttled_total",
                            "logins refused by the failed-login backoff or lockout (nothing hashed)"};
    counter device_token_logins{*this, "strix_device_token_logins_total",
                                "logins with a valid device token (the per-name wait did not apply)"};
    counter device_tokens_ignored{*this, "strix_device_tokens_ignored_total",
                                  "device tokens presented expired or for another name (an ordinary login followed)"};
    counter device_tokens_unknown{*this, "strix_device_tokens_unknown_total",
                                  "device tokens presented that the database does not know: made up, replaced or "
                                  "revoked (an ordinary login followed; a failure of the address)"};
    counter resume_token_logins{*this, "strix_resume_token_logins_total",
                                "logins with a valid resume token (no password verified)"};
    counter resume_tokens_refused{*this, "strix_resume_tokens_refused_total",
                                  "resume tokens presented that were unknown, expired or another account's"};
    counter history_requests{*this, "strix_history_requests_total", "history_req answered from the database"};
    counter resumes{*this, "strix_resumes_total", "resume_req answered complete"};
    counter resume_gaps{*this, "strix_resume_gaps_total",
                        "resume_req answered gap (beyond --resume-max or its bytes, or deleted by retention)"};
    counter resume_from_stream{*this, "strix_resume_from_stream_total",
                               "messages a resume took from Redis's stream because the database lacked them "
                               "(cluster mode; each queued for the database, insert-if-absent)"};
    counter login_queue_full{*this, "strix_login_queue_full_total",
                             "logins refused with server_busy: --login-queue hashes pending"};
    counter notices_coalesced{*this, "strix_member_notices_coalesced_total",
                              "join+leave pairs that cancelled out within --notice-delay-ms (two notices not sent)"};
    counter notices_suppressed{*this, "strix_member_notices_suppressed_total",
                               "member_joined/member_left/member_presence/typing not sent because the room is "
                               "larger than --member-list-limit (one per join, leave, presence change or typing_req)"};
    counter server_busy{*this, "strix_server_busy_total", "requests refused because a database queue was full"};
    counter chat_messages{*this, "strix_chat_messages_total",
                          "chat messages accepted (sequenced and queued for the database)"};
    counter broadcasts{*this, "strix_broadcasts_total", "room events fanned out (messages, joins, leaves)"};
    counter deliveries{*this, "strix_broadcast_deliveries_total", "frames handed to room members by broadcasts"};
    counter cross_shard_posts{*this, "strix_cross_shard_posts_total", "broadcast tasks posted to other shards"};
    counter jwt_logins{*this, "strix_jwt_logins_total", "successful logins with a JWT"};
    counter jwt_refreshes{*this, "strix_jwt_refreshes_total", "refresh_req that gave a session a fresh JWT"};
    counter jwt_room_refused{*this, "strix_jwt_room_refused_total",
                             "joins and creates refused because the session's JWT does not list the room"};
    counter jwt_expired_closed{*this, "strix_jwt_expired_closed_total",
                               "sessions closed because their JWT expired and no refresh came in the grace period"};
    gauge sessions{*this, "strix_sessions", "open sessions"};
    gauge players{*this, "strix_players", "logged-in sessions"};
    gauge rooms{*this, "strix_rooms", "rooms"};  // the rooms this shard owns
    // Output queued on sessions: the engine's strix_send_* gauges (net_counters, the idle sweep).
    // One series per row of request_table (requests[i] is row i's), labelled with its type:
    // counted when dispatched, refused ones included (an unknown type counts in bad_requests).
    std::array<counter, request_table::size> requests = per_request(std::make_index_sequence<request_table::size>());
    // One series per jwt_refusal (logins and refreshes), labelled reason="<jwt_refusal_name>".
    std::array<counter, jwt_refusal_count> jwt_refused = per_refusal(std::make_index_sequence<jwt_refusal_count>());

private:
    // Each counter is built in its place in `requests` (a prvalue, never copied: a copy would not
    // be declared), so the group finds it there.
    template <std::size_t... I>
    std::array<counter, sizeof...(I)> per_request(std::index_sequence<I...>) {
        return {counter(*this, "strix_requests_total", "client requests dispatched, by type (refused ones included)",
                        request_table::label(I))...};
    }
    template <std::size_t... I>
    std::array<counter, sizeof...(I)> per_refusal(std::index_sequence<I...>) {
        return {counter(*this, "strix_jwt_refused_total", "JWTs refused, by reason", refusal_label(I))...};
    }
    static std::string_view refusal_label(std::size_t i);
};

}  // namespace strix::chat
