#include "chat_server.hpp"

#include "apps/chat/server/rooms/room_id.hpp"

#include <strix/core/log.hpp>
#include "apps/chat/storage/password.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <sstream>
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
    const password_policy policy = opts_.fast_passwords ? password_policy::fast_for_tests() : password_policy::interactive();
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
    if (opts_.ack == ack_mode::stored) wcfg.committed = [this](std::span<const std::uint64_t> tags) { committed(tags); };
    writer_ = std::make_unique<chat_log_writer>(std::move(writer_store), wcfg);

    engine_ = std::make_unique<engine>(opts_.engine);
    throttle_ = std::make_unique<login_throttle>(opts_.login_throttle);

    ctx_ = std::unique_ptr<chat_context>(new chat_context{opts_, *engine_, *pool_, *writer_, room_id(max_room).counter() + 1});
    ctx_->throttle = throttle_.get();
    // What an unknown account's password is verified against: a hash of the current policy, so
    // that "no such account" takes as long to answer as "wrong password".
    ctx_->dummy_hash = hash_password("strix: no such account", policy);
    auto* ctx = ctx_.get();
    services_ = std::make_unique<sharded<chat_service>>(*engine_, [ctx](shard& sh) { return std::make_unique<chat_service>(sh, *ctx); });
    // Rooms come back on their owner shards, with no one present; their accounts rejoin at login.
    std::size_t memberships = 0;
    const std::size_t restored = rooms.size();
    for (auto& r : rooms) {
        memberships += r.members.size();
        services_->on(room_id(r.id).owner(engine_->shard_count())).host().restore(std::move(r));
    }
    if (restored != 0)
        log(log_level::info, "restored %zu rooms with %zu memberships from the database", restored, memberships);

    // The options' listeners, caps and limits (the handshake timeout is --login-timeout-ms:
    // chat_service calls handshake_done() at login), with the chat protocol's framing and frame sizes.
    server_config scfg = opts_.server;
    scfg.framing = &strix_header_framer();
    scfg.limits.max_frame = chat_service::max_frame_anonymous;
    scfg.limits.recv_buffer = chat_service::max_frame_logged_in;  // so set_max_frame can raise the limit after login
    server_ = std::make_unique<server>(*engine_, scfg, *services_);
    try {
        server_->start();
    } catch (const std::system_error& e) {
        throw std::runtime_error(std::string(e.what()) + " (is another server running? choose another --port)");
    }

    // Served by shard 0's reactor: slow or half-open scrapers cost a session each, never a wait.
    if (opts_.metrics_port != 0)
        metrics_ = std::make_unique<metrics_endpoint>(engine_->at(0), opts_.metrics_port, [this] { return render_metrics(); });
}

chat_server::~chat_server() { shutdown(); }

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
    engine_->run_until_signal();
    return shutdown();
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
    if (writer_) lost = writer_->stop();
    if (pool_) pool_->stop();
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

std::string chat_server::render_metrics() const {
    std::ostringstream o;
    auto metric = [&](const char* name, const char* type, const char* help, std::uint64_t v) {
        o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n' << name << ' ' << v << '\n';
    };
    const net_stats n = server_->stats();
    std::uint64_t app_in = 0, app_out = 0, deliveries = 0, broadcasts = 0, chat = 0, cross = 0, errors = 0, bad = 0,
                  limited = 0, busy = 0, logins = 0, login_fail = 0, sessions = 0, players = 0, rooms = 0, qbytes = 0,
                  qinuse = 0, qpeak = 0, room_limited = 0, throttled = 0, login_full = 0, coalesced = 0;
    for (unsigned i = 0; i < services_->size(); ++i) {
        const auto& c = services_->on(i).counters();
        auto ld = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
        app_in += ld(c.app_in);
        app_out += ld(c.app_out);
        deliveries += ld(c.deliveries);
        broadcasts += ld(c.broadcasts);
        chat += ld(c.chat_messages);
        cross += ld(c.cross_shard_posts);
        errors += ld(c.errors);
        bad += ld(c.bad_requests);
        limited += ld(c.rate_limited);
        busy += ld(c.server_busy);
        logins += ld(c.logins);
        login_fail += ld(c.login_failures);
        sessions += ld(c.sessions);
        players += ld(c.players);
        rooms += ld(c.rooms);
        qbytes += ld(c.send_queued_bytes);
        qinuse += ld(c.send_queues_in_use);
        qpeak += ld(c.send_queues_peak);
        room_limited += ld(c.room_rate_limited);
        throttled += ld(c.login_throttled);
        login_full += ld(c.login_queue_full);
        coalesced += ld(c.notices_coalesced);
    }
    const db_pool_stats p = pool_->stats();
    const chat_log_writer_stats w = writer_->stats();

    metric("strix_io_reads_total", "counter", "read system calls that returned data", n.reads);
    metric("strix_io_writes_total", "counter", "gather write system calls that wrote data", n.writes);
    metric("strix_bytes_in_total", "counter", "bytes received from clients", n.bytes_in);
    metric("strix_bytes_out_total", "counter", "bytes sent to clients", n.bytes_out);
    metric("strix_frames_in_total", "counter", "frames received (all sessions)", n.frames_in);
    metric("strix_app_messages_in_total", "counter", "requests the chat service decoded", app_in);
    metric("strix_app_messages_out_total", "counter", "frames the chat service queued to sessions", app_out);
    metric("strix_session_sends_total", "counter", "session send calls (messages queued)", n.sends);
    metric("strix_chat_messages_total", "counter", "chat messages accepted (sequenced and queued for the database)", chat);
    metric("strix_broadcasts_total", "counter", "room events fanned out (messages, joins, leaves)", broadcasts);
    metric("strix_broadcast_deliveries_total", "counter", "frames handed to room members by broadcasts", deliveries);
    metric("strix_cross_shard_posts_total", "counter", "broadcast tasks posted to other shards", cross);
    metric("strix_errors_total", "counter", "error_res replies sent", errors);
    metric("strix_bad_requests_total", "counter", "malformed or unknown requests", bad);
    metric("strix_rate_limited_total", "counter", "chat messages refused by the rate limit", limited);
    metric("strix_server_busy_total", "counter", "requests refused because a database queue was full", busy);
    metric("strix_logins_total", "counter", "successful logins", logins);
    metric("strix_login_failures_total", "counter", "failed logins", login_fail);
    metric("strix_job_queue_enqueued_total", "counter", "database jobs accepted", p.submitted);
    metric("strix_job_queue_executed_total", "counter", "database jobs run", p.executed);
    metric("strix_job_queue_rejected_total", "counter", "database jobs refused (queue full)", p.rejected);
    metric("strix_job_queue_depth", "gauge", "database jobs waiting", p.queue_depth);
    metric("strix_job_queue_peak", "gauge", "most database jobs ever waiting", p.queue_peak);
    metric("strix_send_queued_bytes", "gauge", "output queued on sessions (sampled each second)", qbytes);
    metric("strix_send_buffers_in_use", "gauge", "sessions with output queued (sampled each second)", qinuse);
    metric("strix_send_buffers_peak", "gauge", "largest sample of sessions with output queued, summed over shards", qpeak);
    metric("strix_pool_in_use", "gauge", "receive buffers taken from the per-shard pools", n.recv_buffers_in_use);
    metric("strix_pool_peak", "gauge", "most receive buffers ever taken at once (summed over shards)", n.recv_buffers_peak);
    metric("strix_pool_allocs_total", "counter", "receive buffers taken from the per-shard pools", n.recv_buffer_takes);
    metric("strix_pool_frees_total", "counter", "receive buffers given back to the per-shard pools", n.recv_buffer_returns);
    metric("strix_db_write_lag_us", "gauge", "age of the oldest entry of the last committed chat log batch", w.last_lag_us);
    metric("strix_db_write_lag_max_us", "gauge", "largest chat log batch age at commit", w.max_lag_us);
    metric("strix_db_queue_depth", "gauge", "chat log entries waiting for the database", w.queue_depth);
    metric("strix_db_queue_peak", "gauge", "most chat log entries ever waiting", w.queue_peak);
    metric("strix_db_written_total", "counter", "chat log rows committed", w.written);
    metric("strix_db_room_changes_total", "counter", "room changes committed (created, deleted, joined, left)", w.room_changes);
    metric("strix_db_batches_total", "counter", "chat log transactions committed", w.batches);
    metric("strix_db_failures_total", "counter", "failed chat log commits (retried)", w.failures);
    metric("strix_db_rejected_total", "counter", "chat log entries refused (queue full)", w.rejected);
    metric("strix_slow_consumer_disconnects_total", "counter", "sessions closed because they did not read", n.slow_consumers);
    metric("strix_frame_errors_total", "counter", "connections closed for bad framing", n.frame_errors);
    metric("strix_connections_accepted_total", "counter", "connections accepted", n.accepted);
    metric("strix_connections_refused_max_total", "counter", "connections refused at accept: --max-connections open",
           n.refused_max_sessions);
    metric("strix_connections_refused_per_address_total", "counter",
           "connections refused at accept: --max-connections-per-address open from that address", n.refused_per_address);
    metric("strix_login_timeouts_total", "counter", "connections closed for not logging in within --login-timeout-ms",
           n.handshake_timeouts);
    metric("strix_frame_timeouts_total", "counter",
           "connections closed for a frame not completed within --frame-timeout-ms of its first byte", n.frame_timeouts);
    metric("strix_idle_timeouts_total", "counter", "connections closed after --idle-timeout-ms without receiving anything",
           n.idle_timeouts);
    metric("strix_login_throttled_total", "counter", "logins refused by the failed-login backoff or lockout (nothing hashed)",
           throttled);
    metric("strix_login_queue_full_total", "counter", "logins refused with server_busy: --login-queue hashes pending",
           login_full);
    metric("strix_login_hashes_pending", "gauge", "logins (password hashes) queued or running",
           ctx_->logins_in_flight.load(std::memory_order_relaxed));
    metric("strix_login_throttle_keys", "gauge", "account names and addresses with failed logins remembered",
           throttle_->tracked());
    metric("strix_room_rate_limited_total", "counter", "create/join refused by the room-change rate limit", room_limited);
    metric("strix_member_notices_coalesced_total", "counter",
           "join+leave pairs that cancelled out within --notice-delay-ms (two notices not sent)", coalesced);
    if (metrics_) {
        const auto& mc = metrics_->counters();
        auto ld = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
        metric("strix_metrics_requests_total", "counter", "requests to the metrics endpoint before this one",
               ld(mc.frames_in));
        metric("strix_metrics_timeouts_total", "counter", "metrics connections closed for an incomplete request",
               ld(mc.frame_timeouts) + ld(mc.handshake_timeouts));
    }
    // Event-loop turns that found work, by duration (a Prometheus histogram over all shards).
    {
        constexpr auto& bounds = shard_stats::turn_time_bounds_us;
        std::array<std::uint64_t, bounds.size() + 1> counts{};
        std::uint64_t busy_ns = 0, max_ns = 0;
        for (unsigned i = 0; i < engine_->shard_count(); ++i) {
            const shard_stats& st = engine_->at(i).stats();
            for (std::size_t b = 0; b < counts.size(); ++b) counts[b] += st.turn_time[b].load(std::memory_order_relaxed);
            busy_ns += st.busy_ns.load(std::memory_order_relaxed);
            max_ns = std::max(max_ns, st.max_turn_ns.load(std::memory_order_relaxed));
        }
        o << "# HELP strix_loop_turn_seconds event-loop turns that found work, by how long they ran (all shards)\n"
             "# TYPE strix_loop_turn_seconds histogram\n";
        std::uint64_t cumulative = 0;
        for (std::size_t b = 0; b < bounds.size(); ++b) {
            cumulative += counts[b];
            o << "strix_loop_turn_seconds_bucket{le=\"" << static_cast<double>(bounds[b]) / 1e6 << "\"} " << cumulative << '\n';
        }
        cumulative += counts.back();
        o << "strix_loop_turn_seconds_bucket{le=\"+Inf\"} " << cumulative << '\n'
          << "strix_loop_turn_seconds_sum " << static_cast<double>(busy_ns) / 1e9 << '\n'
          << "strix_loop_turn_seconds_count " << cumulative << '\n';
        metric("strix_loop_turn_max_us", "gauge", "longest event-loop turn so far (any shard)", max_ns / 1000);
    }
    metric("strix_sessions", "gauge", "open sessions", sessions);
    metric("strix_players", "gauge", "logged-in sessions", players);
    metric("strix_rooms", "gauge", "rooms", rooms);
    return o.str();
}

}  // namespace strix::chat
