#pragma once
// chat_server: the whole strix-chat-server process as one object. It opens the database, builds
// the engine, the network server with one chat_service per shard, and the metrics endpoint, and
// shuts them down in the order that keeps every acknowledged message:
//
//   signal -> engine stops (sessions flush, no more messages are accepted)
//          -> chat_log_writer::stop() writes everything queued
//          -> db_pool::stop() finishes queued jobs
//
// A message is acknowledged (the sender gets its chat_msg) only after the writer committed it
// (--ack stored, the default: the writer reports each committed batch through committed()), or
// with --ack early once the writer accepted it; either way, after a clean exit every acknowledged
// message is in the database, and with --ack stored after a crash too.

#include "apps/chat/server/login/jwt.hpp"
#include "apps/chat/server/login/jwt_login_queue.hpp"
#include "apps/chat/server/hooks/chat_hooks.hpp"
#include "apps/chat/server/api/api_server.hpp"
#include "apps/chat/server/login/login_throttle.hpp"
#include "apps/chat/server/options/chat_options.hpp"
#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/server/service/chat_ws.hpp"

#include <strix/core/engine.hpp>
#include <strix/core/metrics_registry.hpp>
#include <strix/net/metrics_endpoint.hpp>
#include <strix/net/server.hpp>
#include "apps/chat/storage/chat_log_writer.hpp"
#include "apps/chat/storage/chat_retention.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace strix::chat {

class chat_server {
public:
    /// Opens the database, binds the ports. Throws std::runtime_error (or std::system_error) with
    /// one sentence naming the cause and the fix. The main thread, with SIGINT and SIGTERM
    /// already blocked (see main.cpp).
    explicit chat_server(chat_options opts);
    /// Stops whatever still runs, in the order above.
    ~chat_server();
    chat_server(const chat_server&) = delete;
    chat_server& operator=(const chat_server&) = delete;

    /// Serves until SIGINT or SIGTERM, then shuts down gracefully; SIGHUP meanwhile reloads the
    /// certificate (--tls-cert, reload_tls()) and the JWT keys (--jwt-key, reload_jwt()). Returns
    /// the number of chat log entries that could not be written (0 normally). The main thread,
    /// with SIGHUP blocked too when either is on.
    std::uint64_t run();

    /// Reads --tls-cert and --tls-key again (blocking file reads: never on a shard). Connections
    /// accepted from now on get the new certificate, open ones keep theirs. When the files are
    /// unusable the old certificate stays and the file and reason are logged. Returns whether the
    /// new one is in use. Any thread but a shard's.
    bool reload_tls();
    /// Reads --jwt-key again (blocking: never on a shard): logins and refreshes from now on are
    /// verified with the new keys; when the file is unusable the old keys stay and the reason is
    /// logged. Returns whether the new keys are in use. Any thread but a shard's.
    bool reload_jwt();
    /// Whether the TCP port speaks TLS. Any thread.
    bool tls() const noexcept { return tls_ != nullptr; }

    /// In-process use (tests, embedding): starts serving and returns; stop() shuts down as
    /// run() does after a signal and returns the same count.
    void start();
    std::uint64_t stop() { return shutdown(); }

    /// The sharded chat service (one per shard). Call an instance's functions on its shard.
    sharded<chat_service>& services() noexcept { return *services_; }
    engine& eng() noexcept { return *engine_; }

    std::uint16_t port() const noexcept { return server_->port(); }
    /// The WebSocket port (--ws-port; 0 when off). Any thread.
    std::uint16_t ws_port() const noexcept { return ws_server_ ? ws_server_->port() : 0; }
    std::uint16_t metrics_port() const noexcept { return metrics_ ? metrics_->port() : 0; }
    /// The server API's port (--api-port; 0 when off). Any thread.
    std::uint16_t api_port() const noexcept { return api_ ? api_->port() : 0; }
    unsigned shard_count() const noexcept { return engine_->shard_count(); }
    /// The shards' I/O backend after any fallback: "epoll" or "io_uring".
    const char* io_name() const noexcept { return engine_->io_name(); }

    /// The Prometheus text the metrics endpoint serves. Any thread.
    std::string render_metrics() const;

private:
    void begin();
    std::uint64_t shutdown();
    void committed(std::span<const std::uint64_t> tags);
    void register_metrics();
    void make_ws_server(const server_config& base);

    chat_options opts_;
    metrics_registry metrics_registry_;  // outlives every registration below
    std::unique_ptr<jwt_login_queue> jwt_logins_;  // JWT logins' batches; declared before pool_,
                                                   // whose last jobs (at its stop) still use it
    std::unique_ptr<db_pool> pool_;
    std::unique_ptr<chat_log_writer> writer_;
    std::unique_ptr<chat_retention> retention_;  // only with a retention policy
    std::unique_ptr<engine> engine_;
    std::unique_ptr<login_throttle> throttle_;
    std::unique_ptr<jwt_auth> jwt_;  // --jwt-key; null: JWT logins off
    std::unique_ptr<chat_hooks> hooks_;  // --webhook-url / --publish-hook-url; stopped after the shards
    std::unique_ptr<chat_context> ctx_;
    std::unique_ptr<sharded<chat_service>> services_;
    std::shared_ptr<tls_server> tls_;  // the TCP listeners' identity; nullptr = plain
    std::unique_ptr<server> server_;  // TCP (with TLS when tls_), and the Unix socket when plain
    std::unique_ptr<server> unix_server_;  // the Unix socket beside a TLS port: it stays plain
    std::vector<std::unique_ptr<chat_ws>> ws_apps_;  // per shard, beside services_; outlive ws_server_
    std::unique_ptr<server> ws_server_;  // --ws-port: WebSocket (wss:// when tls_) and the web page
    std::unique_ptr<api_server> api_;  // --api-port: the server API (HTTPS when tls_)
    std::unique_ptr<metrics_endpoint> metrics_;
    std::vector<metrics_registry::registration> metric_regs_;  // dropped first
    bool shut_down_ = false;
    std::mutex ack_mu_;  // committed() against shutdown()
    bool acks_open_ = true;  // guarded by ack_mu_: the shards still run
};

}  // namespace strix::chat
