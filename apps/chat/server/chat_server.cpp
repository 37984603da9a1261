#include "chat_server.hpp"

#include "apps/chat/server/net/ws_endpoint.hpp"
#include "apps/chat/server/rooms/room_id.hpp"

#include <strix/core/log.hpp>
#include <strix/net/admission.hpp>
#include "apps/chat/storage/password.hpp"

#include "apps/chat/common/certificate_text.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <ctime>
#include <filesystem>
#include <stdexcept>

namespace strix::chat {
namespace {

// SQLite wants the file's directory to exist; make it, so the default sqlite:var/strix.db works
// from a fresh checkout.
void prepare_sqlite_dir(const std::string& url) {
    if (url.rfind("sqlite:", 0) != 0) return;
    std::filesystem::path file(url.substr(7));
    auto dir = file.parent_path();
    if (dir.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw std::runtime_error("cannot create the database directory " + dir.string() + ": " + ec.message() +
                                 " (choose another --db path)");
}

}  // namespace

chat_server::chat_server(chat_options opts) : opts_(std::move(opts)) {
    // The certificate first: reading it blocks, so it happens here before any shard runs, and a
    // wrong file is reported before the database is touched.
    if (!opts_.tls.cert_file.empty()) {
        try {
            tls_ = tls_server::load(opts_.tls);
        } catch (const tls_error& e) {
            throw std::runtime_error(std::string(e.what()) + " (check --tls-cert and --tls-key)");
        }
        log(log_level::info, "TLS certificate {}", describe_certificate_file(opts_.tls.cert_file));
    }
    if (auto err = settle_jwt(opts_.jwt); !err.empty()) throw std::runtime_error(err);
    if (opts_.jwt.enabled()) {
        jwt_rules rules;
        rules.audience = opts_.jwt.audience;
        rules.issuer = opts_.jwt.issuer;
        rules.leeway = opts_.jwt.leeway;
        jwt_ = std::make_unique<jwt_auth>(opts_.jwt.key_file, std::move(rules));
        log(log_level::info, "JWT logins: {} ({})", jwt_->describe(),
            opts_.jwt.passwords() ? "password logins too" : "no password logins");
    }
    const password_policy policy =
        opts_.fast_passwords ? password_policy::fast_for_tests() : password_policy::interactive();
    prepare_sqlite_dir(opts_.db);

    // The writer's own connection also tells where room ids must resume (above every id the
    // chat log or the rooms table knows, so no id is reused) and which rooms to bring back.
    auto writer_store = open_chat_store(opts_.db, policy);
    const std::uint64_t max_room = writer_store->max_room_id();
    std::vector<stored_room> rooms = writer_store->load_rooms();

    db_pool_config pcfg;
    pcfg.url = opts_.db;
    pcfg.policy = policy;
    pcfg.workers = opts_.db_workers;
    pool_ = std::make_unique<db_pool>(pcfg);

    chat_log_writer_config wcfg;
    wcfg.capacity = opts_.db_queue;
    wcfg.commit_delay = std::chrono::microseconds(opts_.commit_delay_us);
    if (opts_.ack == ack_mode::stored)
        wcfg.committed = [this](std::span<const std::uint64_t> tags) { committed(tags); };
    writer_ = std::make_unique<chat_log_writer>(std::move(writer_store), wcfg);

    if (retention_enabled(opts_)) {
        retention_policy rp;
        rp.max_per_room = opts_.retention_max_per_room;
        rp.max_age = opts_.retention_max_age;
        rp.batch = opts_.retention_batch;
        rp.interval = opts_.retention_interval;
        retention_ = std::make_unique<chat_retention>(open_chat_store(opts_.db, policy), rp);
    }

    engine_ = std::make_unique<engine>(opts_.engine);
    throttle_ = std::make_unique<login_throttle>(opts_.login_throttle);
    // The hooks' secret is read here, before any shard runs; 60000: chat_req's text limit.
    if (opts_.hooks.webhooks() || opts_.hooks.publish())
        hooks_ = std::make_unique<chat_hooks>(opts_.hooks, engine_->shard_count(), 60000);

    ctx_ = std::unique_ptr<chat_context>(
        new chat_context{opts_, *engine_, *pool_, *writer_, room_id(max_room).counter() + 1});
    ctx_->throttle = throttle_.get();
    ctx_->jwt = jwt_.get();
    ctx_->hooks = hooks_.get();
    // What an unknown account's password is verified against: a hash of the current policy, so
    // that "no such account" takes as long to answer as "wrong password".
    ctx_->dummy_hash = hash_password("strix: no such account", policy);
    auto* ctx = ctx_.get();
    services_ = std::make_unique<sharded<chat_service>>(*engine_, [ctx](shard& sh) {
        return std::make_unique<chat_service>(sh, *ctx);
    });
    if (jwt_) {
        // Verdicts go back to the session's shard, as a password login's do.
        sharded<chat_service>* services = services_.get();
        jwt_logins_ = std::make_unique<jwt_login_queue>(
            *pool_, *jwt_, [services](unsigned shard, std::uint64_t session_id, login_verdict&& v) {
                services->invoke_on(shard, [session_id, v = std::move(v)](chat_service& svc) mutable {
                    svc.logins().done(session_id, std::move(v));
                });
            });
        ctx_->jwt_logins = jwt_logins_.get();
    }
    // Rooms come back on their owner shards, with no one present; their accounts rejoin at login.
    std::size_t memberships = 0;
    const std::size_t restored = rooms.size();
    for (auto& r : rooms) {
        memberships += r.members.size();
        services_->on(room_id(r.id).owner(engine_->shard_count())).host().restore(std::move(r));
    }
    if (restored != 0)
        log(log_level::info, "restored {} rooms with {} memberships from the database", restored, memberships);

    // The options' listeners, caps and limits (the handshake timeout is --login-timeout-ms:
    // chat_service calls handshake_done() at login), with the chat protocol's framing and frame sizes.
    server_config scfg = opts_.server;
    scfg.framing = &strix_header_framer();
    scfg.limits.max_frame = chat_service::max_frame_anonymous;
    scfg.limits.recv_buffer = chat_service::max_frame_logged_in;  // so set_max_frame can raise the limit after login
    // One count for every listener of the chat (TCP, the Unix socket, WebSocket): --max-connections
    // and --max-connections-per-address hold whichever way clients come in, and so does the memory
    // they bound (docs/protocol.md, "Limits").
    if (scfg.max_sessions || scfg.max_sessions_per_address)
        scfg.shared_caps =
            std::make_shared<admission>(admission_limits{scfg.max_sessions, scfg.max_sessions_per_address});
    if (tls_) {
        // TLS is for the TCP port. A strix::server puts its TLS on every listener it has, so the
        // Unix socket (reachable only through the file system) gets a plain server of its own,
        // with the same per-shard services, limits and caps.
        if (!scfg.unix_path.empty()) {
            server_config ucfg = scfg;
            ucfg.tcp = false;
            unix_server_ = std::make_unique<server>(*engine_, ucfg, *services_);
            scfg.unix_path.clear();
        }
        scfg.tls = tls_;
    }
    server_ = std::make_unique<server>(*engine_, scfg, *services_);
    try {
        server_->start();
        if (unix_server_) unix_server_->start();
    } catch (const std::system_error& e) {
        throw std::runtime_error(std::string(e.what()) + " (is another server running? choose another --port)");
    }
    if (opts_.ws.enabled) make_ws_server(scfg);
    if (opts_.api.enabled) {
        // The chat port's host, TLS and caps; keys are read here (a wrong file stops the start).
        // Its caps are counted apart: chat clients at the cap do not lock the backend out.
        server_config acfg = scfg;
        acfg.shared_caps.reset();
        api_ = std::make_unique<api_server>(*engine_, *services_, *ctx_, acfg);
        api_->start();
    }

    register_metrics();
    // Served by shard 0's reactor: slow or half-open scrapers cost a session each, never a wait.
    if (opts_.metrics_port != 0) {
        try {
            metrics_ = std::make_unique<metrics_endpoint>(engine_->at(0), opts_.metrics_port, metrics_registry_);
        } catch (const std::runtime_error& e) {
            throw std::runtime_error(std::string(e.what()) +
                                     " (choose another --metrics-port, or 0 to turn metrics off)");
        }
    }
}

chat_server::~chat_server() { shutdown(); }

// The WebSocket listener: the TCP listener's caps, limits and TLS, strix::ws_protocol on each
// shard in front of a chat_ws that feeds the shard's chat_service.
void chat_server::make_ws_server(const server_config& base) {
    server_config wcfg = base;
    wcfg.unix_path.clear();
    wcfg.tcp = true;
    wcfg.port = opts_.ws.port != 0 ? opts_.ws.port : pick_free_port(opts_.server.host);
    const ws_options wo = chat_ws_options(opts_, wcfg.port, tls_ != nullptr);
    wo.apply(wcfg);
    ws_apps_.resize(engine_->shard_count());
    ws_server_ = std::make_unique<server>(*engine_, wcfg, [this, &wo](shard& sh) {
        ws_apps_[sh.id()] = std::make_unique<chat_ws>(services_->on(sh.id()));
        return std::make_unique<ws_protocol>(*ws_apps_[sh.id()], wo);
    });
    try {
        ws_server_->start();
    } catch (const std::system_error& e) {
        throw std::runtime_error(std::string(e.what()) + " (is another server running? choose another --ws-port)");
    }
}

void chat_server::begin() {
    // Housekeeping timers start on each shard's own thread, once it runs.
    services_->invoke_on_all([](chat_service& svc) { svc.start(); });
}

void chat_server::start() {
    begin();
    engine_->start();
}

std::uint64_t chat_server::run() {
    begin();
    // engine::run_until_signal(), plus SIGHUP when there is a certificate to reload: the reload
    // reads files, which may block, so it runs here on the main thread while the shards serve.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    if (tls_ || jwt_) sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    engine_->start();
    timespec poll{0, 100 * 1000 * 1000};
    while (engine_->running()) {
        const int s = sigtimedwait(&set, nullptr, &poll);
        if (s == SIGHUP) {
            if (tls_) reload_tls();
            if (jwt_) reload_jwt();
        } else if (s > 0) {
            log(log_level::info, "signal {}: stopping gracefully", s);
            break;
        }
    }
    return shutdown();
}

bool chat_server::reload_tls() {
    if (!tls_) {
        log(log_level::warn, "no TLS certificate to reload: the server runs without --tls-cert");
        return false;
    }
    try {
        tls_->reload();
    } catch (const tls_error& e) {
        log(log_level::error, "TLS reload failed, new connections keep the previous certificate: {}", e.what());
        return false;
    }
    log(log_level::info, "TLS certificate reloaded for new connections (open ones keep theirs): {}",
        describe_certificate_file(opts_.tls.cert_file));
    return true;
}

bool chat_server::reload_jwt() {
    if (!jwt_) {
        log(log_level::warn, "no JWT keys to reload: the server runs without --jwt-key");
        return false;
    }
    if (auto err = jwt_->reload(); !err.empty()) {
        log(log_level::error, "JWT key reload failed, logins keep the previous keys: {}", err);
        return false;
    }
    log(log_level::info, "JWT keys reloaded: {}", jwt_->describe());
    return true;
}

std::uint64_t chat_server::shutdown() {
    if (shut_down_) return 0;
    shut_down_ = true;
    if (engine_) {
        engine_->stop();
        engine_->join();
    }
    {
        // The shards are gone: what the writer commits from now on (everything still queued)
        // is stored but acknowledged to nobody.
        std::lock_guard lk(ack_mu_);
        acks_open_ = false;
    }
    std::uint64_t lost = 0;
    if (retention_) retention_->stop();
    if (writer_) lost = writer_->stop();
    if (pool_) pool_->stop();
    // Last: the shards pushed their final events; the sender gets its drain time (--webhook-drain-ms).
    if (hooks_) hooks_->stop();
    return lost;
}

// The writer thread, after each commit (--ack stored): the highest ticket per owner shard in the
// batch, one post per shard, whatever the batch held.
void chat_server::committed(std::span<const std::uint64_t> tags) {
    const unsigned n = engine_->shard_count();
    std::array<std::uint64_t, shard_stamp::max_shards> upto{};
    for (std::uint64_t tag : tags) {
        const unsigned s = shard_stamp::shard_of(tag);
        upto[s] = std::max(upto[s], shard_stamp::counter_of(tag));
    }
    std::lock_guard lk(ack_mu_);
    if (!acks_open_) return;
    for (unsigned s = 0; s < n; ++s) {
        if (upto[s] == 0) continue;
        chat_service* svc = &services_->on(s);
        engine_->post(s, [svc, t = upto[s]] { svc->host().committed(t); });
    }
}

// What /metrics shows: the shards' loops and sessions (engine), each shard's chat service
// (chat_counters.hpp), and what the database pool, the chat log writer and the login throttle
// know, read at scrape.
void chat_server::register_metrics() {
    metrics_registry& r = metrics_registry_;
    server_->register_metrics(r);
    if (unix_server_) unix_server_->register_metrics(r);  // same names: summed with the TCP server's
    if (ws_server_) ws_server_->register_metrics(r);      // likewise
    if (api_) api_->register_metrics(r);                  // likewise, and the API's own counters
    engine_->register_metrics(r);
    for (unsigned i = 0; i < services_->size(); ++i) metric_regs_.push_back(r.add(services_->on(i).counters()));
    // The engine's session limits, in the words of this server's options.
    r.rename("strix_handshake_timeouts_total", "strix_login_timeouts_total",
             "connections closed for not logging in within --login-timeout-ms");
    r.rename("strix_idle_timeouts_total", "strix_idle_timeouts_total",
             "connections closed after --idle-timeout-ms without receiving anything");
    r.rename("strix_frame_timeouts_total", "strix_frame_timeouts_total",
             "connections closed for a frame not completed within --frame-timeout-ms of its first byte");
    r.rename("strix_connections_refused_max_total", "strix_connections_refused_max_total",
             "connections refused at accept: --max-connections open");
    r.rename("strix_connections_refused_per_address_total", "strix_connections_refused_per_address_total",
             "connections refused at accept: --max-connections-per-address open from that address");

    auto counter_fn = [&](const char* name, const char* help, metrics_registry::reader read) {
        metric_regs_.push_back(r.add_counter(name, help, std::move(read)));
    };
    auto gauge_fn = [&](const char* name, const char* help, metrics_registry::reader read) {
        metric_regs_.push_back(r.add_gauge(name, help, std::move(read)));
    };
    db_pool* pool = pool_.get();
    counter_fn("strix_job_queue_enqueued_total", "database jobs accepted", [pool] { return pool->stats().submitted; });
    counter_fn("strix_job_queue_executed_total", "database jobs run", [pool] { return pool->stats().executed; });
    counter_fn("strix_job_queue_rejected_total", "database jobs refused (queue full)",
               [pool] { return pool->stats().rejected; });
    gauge_fn("strix_job_queue_depth", "database jobs waiting", [pool] { return pool->stats().queue_depth; });
    gauge_fn("strix_job_queue_peak", "most database jobs ever waiting", [pool] { return pool->stats().queue_peak; });
    if (jwt_login_queue* q = jwt_logins_.get()) {
        counter_fn("strix_jwt_login_batches_total", "database transactions that ran JWT logins (a batch each)",
                   [q] { return q->batches(); });
        counter_fn("strix_jwt_login_batched_total", "JWT logins those batches held", [q] { return q->logins(); });
    }
    chat_log_writer* w = writer_.get();
    gauge_fn("strix_db_write_lag_us", "age of the oldest entry of the last committed chat log batch",
             [w] { return w->stats().last_lag_us; });
    gauge_fn("strix_db_write_lag_max_us", "largest chat log batch age at commit",
             [w] { return w->stats().max_lag_us; });
    gauge_fn("strix_db_queue_depth", "chat log entries waiting for the database",
             [w] { return w->stats().queue_depth; });
    gauge_fn("strix_db_queue_peak", "most chat log entries ever waiting", [w] { return w->stats().queue_peak; });
    counter_fn("strix_db_written_total", "chat log rows committed", [w] { return w->stats().written; });
    counter_fn("strix_db_room_changes_total", "room changes committed (created, deleted, joined, left)",
               [w] { return w->stats().room_changes; });
    counter_fn("strix_db_batches_total", "chat log transactions committed", [w] { return w->stats().batches; });
    counter_fn("strix_db_failures_total", "failed chat log commits (retried)", [w] { return w->stats().failures; });
    counter_fn("strix_db_rejected_total", "chat log entries refused (queue full)", [w] { return w->stats().rejected; });
    if (chat_retention* ret = retention_.get()) {
        counter_fn("strix_retention_deleted_total", "chat log rows deleted by the retention policy",
                   [ret] { return ret->stats().deleted; });
        counter_fn("strix_retention_passes_total", "retention walks over the rooms completed",
                   [ret] { return ret->stats().passes; });
        counter_fn("strix_retention_failures_total", "retention walks cut short by a database error",
                   [ret] { return ret->stats().failures; });
    }
    chat_context* ctx = ctx_.get();
    gauge_fn("strix_login_hashes_pending", "logins (password hashes) queued or running",
             [ctx] { return ctx->logins_in_flight.load(std::memory_order_relaxed); });
    if (hooks_) hooks_->register_metrics(r, metric_regs_);
    login_throttle* throttle = throttle_.get();
    gauge_fn("strix_login_throttle_keys", "account names and addresses with failed logins remembered",
             [throttle] { return throttle->tracked(); });
}

std::string chat_server::render_metrics() const { return metrics_registry_.render(); }

}  // namespace strix::chat
