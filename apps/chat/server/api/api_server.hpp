#pragma once
// api_server: the chat server's server API (docs/api.md), HTTP/1.1 + JSON on --api-port, served
// by the shards through strix::http (one http::protocol per shard, the chat port's host, TLS and
// connection caps). A backend calls it with a bearer key from --api-keys:
//
//   request -> http::protocol (limits, timeouts, pipelining)
//           -> serve(): route (404/405) -> key (401) -> rate limit per key (429 + Retry-After)
//           -> the endpoint's handler with an api_call, on the connection's shard
//           -> reads: a database worker (ctx.pool) or the room's owner shard, then back here
//           -> api_call::reply: counted per endpoint (requests, errors, microseconds), sent in
//              request order
//
// GET /api/v1/openapi.json (the OpenAPI document, docs/openapi.json embedded at build time) needs
// no key. Endpoints are added with add(); api_rooms.cpp has the rooms' read endpoints.
// Thread contract: built and started on the main thread before the engine runs; handlers run on
// the shards; stats are read by the metrics scrape on any thread.

#include "api_json.hpp"
#include "api_keys.hpp"

#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"

#include <nlohmann/json.hpp>
#include <strix/core/metrics_registry.hpp>
#include <strix/core/sharded.hpp>
#include <strix/net/http_router.hpp>
#include <strix/net/http_server.hpp>
#include <strix/net/server.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace strix::chat {

/// One endpoint's counters on one shard (single writer: the shard; summed at scrape).
struct api_endpoint_stats {
    std::atomic<std::uint64_t> requests{0};     // answered
    std::atomic<std::uint64_t> errors{0};       // answered with a status of 400 or more
    std::atomic<std::uint64_t> duration_us{0};  // from the request's arrival to its answer, summed
};

/// One shard's API counters.
struct api_shard_stats {
    explicit api_shard_stats(std::size_t n) : endpoints(n) {}
    std::vector<api_endpoint_stats> endpoints;
    std::atomic<std::uint64_t> unauthorized{0};  // 401: no key, or not one of --api-keys
    std::atomic<std::uint64_t> rate_limited{0};  // 429
    std::atomic<std::uint64_t> unrouted{0};      // 404 and 405 from routing
};

class api_server;

/// One request being answered: its responder, its endpoint and shard, and when it came. Replying
/// counts it. Move-only; dropped unanswered, the client gets 500 (strix::http). The shard it was
/// made on only (workers post back there: api_server::back_on).
class api_call {
public:
    api_call(http::responder res, api_shard_stats* stats, int endpoint, unsigned shard, std::string key_name);
    api_call(api_call&&) noexcept = default;
    api_call& operator=(api_call&&) noexcept = default;

    /// Answers with JSON (status 200 unless given).
    void reply(const nlohmann::json& body, int status = 200);
    /// Answers {"error": error, "reason": reason} with `status`, plus extra headers.
    void fail(int status, std::string_view error, std::string_view reason,
              std::vector<std::pair<std::string, std::string>> headers = {});
    /// Answers with a response as built.
    void send(http::response r);
    /// reply(body) for status 200, else fail(status, body["error"], body["reason"]).
    void answer(int status, const nlohmann::json& body);

    unsigned shard() const noexcept { return shard_; }
    const std::string& key_name() const noexcept { return key_name_; }

private:
    http::responder res_;
    api_shard_stats* stats_;
    int endpoint_;
    unsigned shard_;
    std::string key_name_;
    std::chrono::steady_clock::time_point start_;
};

class api_server {
public:
    using handler = std::function<void(http::request& req, api_call call)>;

    /// Loads the keys (throws std::runtime_error with one sentence) and registers the endpoints.
    /// `base` is the chat port's server_config (host, TLS, caps); the API listens on
    /// ctx.options.api.port. Main thread, before the engine starts.
    api_server(engine& eng, sharded<chat_service>& services, chat_context& ctx, server_config base);
    ~api_server();
    api_server(const api_server&) = delete;
    api_server& operator=(const api_server&) = delete;

    /// Adds an endpoint: method, path pattern with {params}, its handler. Main thread, before
    /// start().
    void add(std::string_view method, std::string_view pattern, handler h);
    /// Binds the port. Throws std::runtime_error naming the port. Main thread.
    void start();
    /// The port bound (after start). Any thread.
    std::uint16_t port() const noexcept { return server_ ? server_->port() : 0; }
    /// Exposes the API's counters and its port's connection counters in r. Main thread.
    void register_metrics(metrics_registry& r);

    /// Runs fn on shard `shard` (from a database worker or another shard): how an answer gets back
    /// to the connection's shard. Any thread.
    void back_on(unsigned shard, std::function<void()> fn);

    engine& eng() noexcept { return engine_; }
    sharded<chat_service>& services() noexcept { return services_; }
    chat_context& ctx() noexcept { return ctx_; }

private:
    void serve(unsigned shard, http::request& req, http::responder res);

    engine& engine_;
    sharded<chat_service>& services_;
    chat_context& ctx_;
    server_config cfg_;
    api_keys keys_;
    http::router router_;
    std::vector<handler> handlers_;  // by route index
    std::vector<std::unique_ptr<api_shard_stats>> stats_;
    std::vector<http::protocol*> protocols_;  // per shard, owned by server_
    std::unique_ptr<server> server_;
    std::vector<metrics_registry::registration> regs_;
};

/// The body of req as a JSON object (api_json.hpp), or nullopt after answering 400 or 415 through
/// call. The call's shard.
std::optional<nlohmann::json> json_body(const http::request& req, api_call& call);

/// The path's {room_id}: a positive decimal number, or nullopt after answering 400. The call's
/// shard.
std::optional<std::uint64_t> room_param(const http::request& req, api_call& call);

/// Finds account `name` on a database worker, then runs then(call, account) on the call's
/// shard; an unknown account is answered 404 unknown_account, a failing or full database 503.
/// The call's shard.
void with_account(api_server& api, api_call call, std::string name,
                  std::function<void(std::shared_ptr<api_call>, account)> then);

/// The OpenAPI document served at /api/v1/openapi.json (docs/openapi.json, embedded at build
/// time). Any thread.
std::string_view openapi_document() noexcept;

/// Adds GET /api/v1/rooms, GET /api/v1/rooms/{room_id} and GET /api/v1/rooms/{room_id}/history
/// (api_rooms.cpp). Main thread.
void add_room_reads(api_server& api);

/// Adds POST /api/v1/rooms/{room_id}/messages (api_messages.cpp). Main thread.
void add_message_posts(api_server& api);

/// Adds GET /api/v1/users/{user}/presence and POST /api/v1/users/{user}/disconnect
/// (api_users.cpp). Main thread.
void add_user_calls(api_server& api);

/// Adds POST /api/v1/rooms and POST /api/v1/rooms/{room_id}/kick, /ban, /mute
/// (api_room_actions.cpp). Main thread.
void add_room_actions(api_server& api);

}  // namespace strix::chat
