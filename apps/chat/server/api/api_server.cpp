#include "api_server.hpp"

#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>

#include <charconv>
#include <stdexcept>

namespace strix::chat {
namespace {

constexpr std::string_view openapi_path = "/api/v1/openapi.json";

http::response json_response(int status, const nlohmann::json& body) {
    http::response r;
    r.status = status;
    r.content_type = "application/json";
    // Stored chat text is raw bytes: invalid UTF-8 is replaced rather than refused.
    r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return r;
}

http::response error_response(int status, std::string_view error, std::string_view reason) {
    return json_response(status, {{"error", error}, {"reason", reason}});
}

}  // namespace

// --- api_call ----------------------------------------------------------------------------------

api_call::api_call(http::responder res, api_shard_stats* stats, int endpoint, unsigned shard, std::string key_name)
    : res_(std::move(res)),
      stats_(stats),
      endpoint_(endpoint),
      shard_(shard),
      key_name_(std::move(key_name)),
      start_(std::chrono::steady_clock::now()) {}

void api_call::reply(const nlohmann::json& body, int status) { send(json_response(status, body)); }

void api_call::fail(int status, std::string_view error, std::string_view reason,
                    std::vector<std::pair<std::string, std::string>> headers) {
    http::response r = error_response(status, error, reason);
    r.headers = std::move(headers);
    send(std::move(r));
}

void api_call::answer(int status, const nlohmann::json& body) {
    if (status == 200) return reply(body);
    fail(status, body.value("error", std::string()), body.value("reason", std::string()));
}

std::optional<std::uint64_t> room_param(const http::request& req, api_call& call) {
    const std::string_view s = req.param("room_id");
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v == 0) {
        call.fail(400, "bad_request", "room_id must be a positive decimal number");
        return std::nullopt;
    }
    return v;
}

void api_call::send(http::response r) {
    if (!res_) return;
    if (stats_ && endpoint_ >= 0) {
        api_endpoint_stats& e = stats_->endpoints[static_cast<std::size_t>(endpoint_)];
        bump(e.requests);
        if (r.status >= 400) bump(e.errors);
        const auto us =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_).count();
        bump(e.duration_us, static_cast<std::uint64_t>(std::max<std::int64_t>(0, us)));
    }
    res_.send(std::move(r));
}

std::optional<nlohmann::json> json_body(const http::request& req, api_call& call) {
    body_refusal why;
    auto j = json_object_body(req, why);
    if (!j) call.fail(why.status, why.status == 415 ? "unsupported_media_type" : "bad_request", why.reason);
    return j;
}

// --- api_server --------------------------------------------------------------------------------

api_server::api_server(engine& eng, sharded<chat_service>& services, chat_context& ctx, server_config base)
    : engine_(eng),
      services_(services),
      ctx_(ctx),
      cfg_(std::move(base)),
      keys_(api_keys::load(ctx.options.api.keys_file, ctx.options.api.rate, ctx.options.api.burst)) {
    // The chat port's host, TLS, caps and slow-consumer limits; HTTP framing and deadlines.
    cfg_.unix_path.clear();
    cfg_.tcp = true;
    cfg_.port = ctx.options.api.port;
    add("GET", openapi_path, [](http::request&, api_call call) {
        http::response r;
        r.content_type = "application/json";
        r.body = std::string(openapi_document());
        call.send(std::move(r));
    });
    add_room_reads(*this);
    add_message_posts(*this);
    add_user_calls(*this);
    add_room_actions(*this);
    log(log_level::info, "server API: {} keys from {}", keys_.size(), ctx.options.api.keys_file);
}

api_server::~api_server() = default;

void api_server::add(std::string_view method, std::string_view pattern, handler h) {
    router_.add(method, pattern, {});  // dispatched by index in serve()
    handlers_.push_back(std::move(h));
}

void api_server::start() {
    const unsigned n = engine_.shard_count();
    for (unsigned i = 0; i < n; ++i) stats_.push_back(std::make_unique<api_shard_stats>(handlers_.size()));
    protocols_.assign(n, nullptr);
    http::options ho;
    ho.max_body = ctx_.options.api.max_body;
    ho.apply(cfg_);
    server_ = std::make_unique<server>(engine_, cfg_, [this, ho](shard& sh) {
        const unsigned id = sh.id();
        auto p = std::make_unique<http::protocol>([this, id](http::request& req,
                                                             http::responder res) { serve(id, req, std::move(res)); },
                                                  ho);
        protocols_[id] = p.get();
        return p;
    });
    try {
        server_->start();
    } catch (const std::system_error& e) {
        throw std::runtime_error(std::string(e.what()) + " (is another server running? choose another --api-port)");
    }
}

// Routing first (404/405 tell nothing a key would protect: the paths are documented), then the
// key, then its rate; only then does the endpoint run.
void api_server::serve(unsigned shard, http::request& req, http::responder res) {
    api_shard_stats& st = *stats_[shard];
    const http::router::match_result m = router_.match(req);
    if (m.route < 0) {
        bump(st.unrouted);
        http::response r =
            m.status == 405
                ? error_response(405, "method_not_allowed", req.method + " is not allowed here; allowed: " + m.allow)
                : error_response(404, "not_found", "no such endpoint (see " + std::string(openapi_path) + ")");
        if (m.status == 405) r.headers.emplace_back("Allow", m.allow);
        res.send(std::move(r));
        return;
    }
    std::string key_name;
    if (req.route != openapi_path) {
        const auto key = keys_.authorize(req.header("Authorization"));
        if (!key) {
            bump(st.unauthorized);
            http::response r = error_response(401, "unauthorized",
                                              req.header("Authorization").empty()
                                                  ? "send Authorization: Bearer <key> with a key from --api-keys"
                                                  : "the bearer key is not one of --api-keys");
            r.headers.emplace_back("WWW-Authenticate", "Bearer");
            res.send(std::move(r));
            return;
        }
        if (const std::uint32_t wait = keys_.take(*key)) {
            bump(st.rate_limited);
            http::response r = error_response(429, "rate_limited",
                                              "over --api-rate for this key; retry after the "
                                              "Retry-After seconds");
            r.headers.emplace_back("Retry-After", std::to_string(wait));
            res.send(std::move(r));
            return;
        }
        key_name = keys_.name(*key);
    }
    handlers_[static_cast<std::size_t>(m.route)](req,
                                                 api_call(std::move(res), &st, m.route, shard, std::move(key_name)));
}

void api_server::back_on(unsigned shard, std::function<void()> fn) {
    engine_.post(shard, [fn = std::move(fn)] { fn(); });
}

void api_server::register_metrics(metrics_registry& r) {
    server_->register_metrics(r);
    auto sum = [this](auto member) {
        return [this, member] {
            std::uint64_t total = 0;
            for (const auto& s : stats_) total += ((*s).*member).load(std::memory_order_relaxed);
            return total;
        };
    };
    regs_.push_back(r.add_counter("strix_api_unauthorized_total", "server API requests refused 401 (no or unknown key)",
                                  sum(&api_shard_stats::unauthorized)));
    regs_.push_back(r.add_counter("strix_api_rate_limited_total", "server API requests refused 429 (over --api-rate)",
                                  sum(&api_shard_stats::rate_limited)));
    regs_.push_back(r.add_counter("strix_api_unrouted_total", "server API requests for no endpoint (404, 405)",
                                  sum(&api_shard_stats::unrouted)));
    auto proto_sum = [this](auto member) {
        return [this, member] {
            std::uint64_t total = 0;
            for (const http::protocol* p : protocols_)
                if (p) total += (p->stats().*member).load(std::memory_order_relaxed);
            return total;
        };
    };
    regs_.push_back(r.add_counter("strix_api_http_refused_total",
                                  "server API requests refused before routing: malformed (400, 501, 505) or too "
                                  "large (413, 431)",
                                  [p = proto_sum(&http::protocol_stats::bad_requests),
                                   q = proto_sum(&http::protocol_stats::too_large)] { return p() + q(); }));
    regs_.push_back(r.add_counter("strix_api_http_timeouts_total", "server API requests not complete in time (408)",
                                  proto_sum(&http::protocol_stats::timeouts)));
    const auto& routes = router_.routes();
    for (std::size_t i = 0; i < routes.size(); ++i) {
        const std::string labels = "endpoint=\"" + routes[i].method + " " + routes[i].pattern + "\"";
        auto per = [this, i](std::atomic<std::uint64_t> api_endpoint_stats::*member) {
            return [this, i, member] {
                std::uint64_t total = 0;
                for (const auto& s : stats_) total += (s->endpoints[i].*member).load(std::memory_order_relaxed);
                return total;
            };
        };
        regs_.push_back(r.add({.name = "strix_api_requests_total",
                               .help = "server API requests answered, by endpoint",
                               .kind = metric_kind::counter,
                               .labels = labels},
                              per(&api_endpoint_stats::requests)));
        regs_.push_back(r.add({.name = "strix_api_errors_total",
                               .help = "server API requests answered with a status of 400 or more, by endpoint",
                               .kind = metric_kind::counter,
                               .labels = labels},
                              per(&api_endpoint_stats::errors)));
        regs_.push_back(r.add({.name = "strix_api_request_microseconds_total",
                               .help = "time from a server API request's arrival to its answer, summed, by endpoint",
                               .kind = metric_kind::counter,
                               .labels = labels},
                              per(&api_endpoint_stats::duration_us)));
    }
}

void with_account(api_server& api, api_call call, std::string name,
                  std::function<void(std::shared_ptr<api_call>, account)> then) {
    auto held = std::make_shared<api_call>(std::move(call));
    api_server* a = &api;
    const bool queued = api.ctx().pool.try_submit([a, held, name, then = std::move(then)](chat_store& store) {
        std::optional<account> found;
        bool failed = false;
        try {
            found = store.find_account(name);
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "api: looking up account {} failed: {}", name, e.what());
            failed = true;
        }
        a->back_on(held->shard(), [held, name, failed, found = std::move(found), then] {
            if (failed) return held->fail(503, "database_unavailable", "the database is unavailable; retry later");
            if (!found) return held->fail(404, "unknown_account", "no account is called " + name);
            then(held, *found);
        });
    });
    if (!queued) held->fail(503, "server_busy", "the database queue is full; retry later", {{"Retry-After", "1"}});
}

}  // namespace strix::chat
