// The rooms' read endpoints of the server API. None blocks a shard: the room list comes from the
// sequencer (the shards' rooms on one node, the shared database in a cluster), a room and its
// history from a database worker, online state from the room's owner shard.
//
//   GET /api/v1/rooms                        -> {"rooms": [{id, name, kind, members, online}]}
//   GET /api/v1/rooms/{room_id}              -> {id, name, kind, last_seq, members: [{id, name, role, online}]}
//   GET /api/v1/rooms/{room_id}/history?after_seq=&before_seq=&limit=
//                                            -> {room_id, messages: [...], more, oldest, newest}
#include "api_server.hpp"

#include "apps/chat/server/rooms/room_id.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>
#include <strix/net/http_router.hpp>

#include <charconv>
#include <memory>
#include <optional>

namespace strix::chat {
namespace {

using nlohmann::json;

constexpr std::uint64_t default_history_limit = 50;
constexpr std::uint64_t max_history_limit = 200;

const char* kind_name(std::uint8_t kind) { return kind == 1 ? "direct" : "group"; }
const char* role_name(std::uint8_t role) { return role == 2 ? "owner" : role == 1 ? "admin" : "member"; }
const char* message_kind(std::uint8_t kind) { return kind == 1 ? "notice" : kind == 2 ? "deleted" : "text"; }

std::optional<std::uint64_t> parse_u64(std::string_view s) {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

void busy(api_call& call) {
    call.fail(503, "server_busy", "the database queue is full; retry later", {{"Retry-After", "1"}});
}

void list_rooms(api_server& api, api_call call) {
    auto held = std::make_shared<api_call>(std::move(call));
    chat_service& svc = api.services().on(held->shard());
    const bool queued = svc.host().sequencer().list_rooms(chat_service::max_listed_rooms, [held](
                                                                                              std::optional<std::vector<
                                                                                                  room_summary>>
                                                                                                  rooms) {
        if (!rooms) {
            held->fail(503, "database_unavailable", "the database is unavailable; retry later", {{"Retry-After", "1"}});
            return;
        }
        json out = json::array();
        for (const room_summary& r : *rooms)
            out.push_back({{"id", r.id},
                           {"name", r.name},
                           {"kind", kind_name(r.kind)},
                           {"members", r.members},
                           {"online", r.online}});
        held->reply({{"rooms", std::move(out)}});
    });
    if (!queued) busy(*held);
}

// The room's row and members from the database, their online state from the owner shard (which
// holds the room while a session of this node is in it), then the answer on the call's shard.
void get_room(api_server& api, http::request& req, api_call call) {
    const auto id = room_param(req, call);
    if (!id) return;
    auto held = std::make_shared<api_call>(std::move(call));
    api_server* a = &api;
    const bool queued = api.ctx().pool.try_submit([a, held, id = *id](chat_store& store) {
        std::optional<stored_room> room;
        bool failed = false;
        try {
            room = store.load_room(id);
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "api: reading room {} failed: {}", id, e.what());
            failed = true;
        }
        const unsigned owner = room_id(id).owner(a->services().size());
        a->services().invoke_on(owner, [a, held, failed, room = std::move(room)](chat_service& svc) mutable {
            json body;
            int status = 200;
            if (failed) {
                status = 503;
                body = {{"error", "database_unavailable"}, {"reason", "the database is unavailable; retry later"}};
            } else if (!room) {
                status = 404;
                body = {{"error", "unknown_room"}, {"reason", "no such room (or it was deleted)"}};
            } else {
                const auto& rooms = svc.host().rooms();
                const auto here = rooms.find(chat::room_id(room->id));
                json members = json::array();
                for (std::size_t i = 0; i < room->members.size(); ++i) {
                    const std::uint64_t account = room->members[i];
                    const room_member* m = here == rooms.end() ? nullptr : here->second.account(account);
                    members.push_back({{"id", account},
                                       {"name", i < room->member_names.size() ? room->member_names[i] : ""},
                                       {"role", role_name(i < room->member_roles.size() ? room->member_roles[i] : 0)},
                                       {"online", m != nullptr && m->online()}});
                }
                const std::uint64_t last_seq = here == rooms.end() ? room->last_seq : here->second.last_seq();
                body = {{"id", room->id},
                        {"name", room->name},
                        {"kind", kind_name(room->kind)},
                        {"last_seq", last_seq},
                        {"members", std::move(members)}};
            }
            a->back_on(held->shard(), [held, status, body = std::move(body)] { held->answer(status, body); });
        });
    });
    if (!queued) busy(*held);
}

json message_json(const chat_log_entry& e) {
    return {{"seq", e.seq},
            {"sender_id", e.sender_id},
            {"sender", e.sender_name},
            {"ts_us", e.server_ts_us},
            {"kind", message_kind(e.kind)},
            {"text", e.text}};
}

void get_history(api_server& api, http::request& req, api_call call) {
    const auto id = room_param(req, call);
    if (!id) return;
    const auto q = http::parse_query(req.query());
    if (!q) return call.fail(400, "bad_request", "the query string has a malformed %-escape");
    history_query hq;
    hq.room_id = *id;
    std::uint64_t limit = default_history_limit;
    for (const auto& [k, v] : *q) {
        const auto n = parse_u64(v);
        if (k != "after_seq" && k != "before_seq" && k != "limit") continue;  // unknown parameters are ignored
        if (!n) return call.fail(400, "bad_request", k + " must be a decimal number");
        if (k == "after_seq") hq.after_seq = *n;
        if (k == "before_seq") hq.before_seq = *n;
        if (k == "limit") limit = *n;
    }
    if (hq.after_seq != 0 && hq.before_seq != 0)
        return call.fail(400, "bad_request", "give after_seq or before_seq, not both");
    if (limit == 0 || limit > max_history_limit)
        return call.fail(400, "bad_request", "limit must be between 1 and " + std::to_string(max_history_limit));
    hq.limit = static_cast<std::size_t>(limit) + 1;  // one more: whether there is more in that direction
    auto held = std::make_shared<api_call>(std::move(call));
    api_server* a = &api;
    const bool queued = api.ctx().pool.try_submit([a, held, hq, limit](chat_store& store) {
        json body;
        int status = 200;
        try {
            if (!store.load_room(hq.room_id)) {
                status = 404;
                body = {{"error", "unknown_room"}, {"reason", "no such room (or it was deleted)"}};
            } else {
                std::vector<chat_log_entry> logs = store.history_page(hq);
                const log_range range = store.room_log_range(hq.room_id);
                const bool more = logs.size() > limit;
                const bool newest_first = hq.after_seq == 0;  // the page ends at the newest (or before_seq)
                std::span<const chat_log_entry> page(logs);
                if (more) page = newest_first ? page.last(limit) : page.first(limit);
                json messages = json::array();
                for (const chat_log_entry& e : page) messages.push_back(message_json(e));
                body = {{"room_id", hq.room_id},
                        {"messages", std::move(messages)},
                        {"more", more},
                        {"oldest", range.oldest},
                        {"newest", range.newest}};
            }
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "api: history of room {} failed: {}", hq.room_id, e.what());
            status = 503;
            body = {{"error", "database_unavailable"}, {"reason", "the database is unavailable; retry later"}};
        }
        a->back_on(held->shard(), [held, status, body = std::move(body)] { held->answer(status, body); });
    });
    if (!queued) busy(*held);
}

}  // namespace

void add_room_reads(api_server& api) {
    api.add("GET", "/api/v1/rooms", [&api](http::request&, api_call call) { list_rooms(api, std::move(call)); });
    api.add("GET", "/api/v1/rooms/{room_id}",
            [&api](http::request& req, api_call call) { get_room(api, req, std::move(call)); });
    api.add("GET", "/api/v1/rooms/{room_id}/history",
            [&api](http::request& req, api_call call) { get_history(api, req, std::move(call)); });
}

}  // namespace strix::chat
