// webhook_event (webhook_event.hpp): the event's JSON, written with nlohmann-json.

#include "webhook_event.hpp"

#include <nlohmann/json.hpp>
#include <openssl/rand.h>

#include <chrono>
#include <stdexcept>

namespace strix::chat {

const char* webhook_type(webhook_kind k) noexcept {
    switch (k) {
        case webhook_kind::user_online: return "user.online";
        case webhook_kind::user_offline: return "user.offline";
        case webhook_kind::room_created: return "room.created";
        case webhook_kind::room_deleted: return "room.deleted";
        case webhook_kind::member_joined: return "member.joined";
        case webhook_kind::member_left: return "member.left";
        case webhook_kind::message_stored: return "message.stored";
    }
    return "unknown";
}

std::string webhook_event_json(const webhook_event& ev, const std::string& id) {
    nlohmann::json j;
    j["id"] = id;
    j["type"] = webhook_type(ev.kind);
    j["time"] = ev.time_ms;
    if (ev.room != 0) j["room"] = {{"id", ev.room}, {"name", ev.room_name}};
    if (ev.user != 0 || !ev.user_name.empty()) j["user"] = {{"id", ev.user}, {"name", ev.user_name}};
    if (ev.kind == webhook_kind::message_stored) {
        j["seq"] = ev.seq;
        j["text"] = ev.text;
    }
    // Chat text is whatever bytes a client sent: invalid UTF-8 becomes U+FFFD rather than an
    // exception on the sender's thread.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string hook_random_id() {
    unsigned char b[8] = {};
    if (RAND_bytes(b, sizeof b) != 1) throw std::runtime_error("no random bytes for webhook ids (OpenSSL RAND_bytes)");
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : b) {
        out += hex[c >> 4];
        out += hex[c & 0xf];
    }
    return out;
}

std::int64_t webhook_now_ms() noexcept {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace strix::chat
