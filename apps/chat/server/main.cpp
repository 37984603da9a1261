// strix-chat-server: rooms and chat over strix frames (docs/protocol.md), with accounts and chat
// logs in SQLite or PostgreSQL, Prometheus metrics, TLS on the TCP port (--tls-cert, reloaded on
// SIGHUP), and a graceful shutdown on SIGTERM/SIGINT.
#include "chat_server.hpp"
#include "apps/chat/server/options/chat_options.hpp"

#include "apps/chat/storage/chat_store.hpp"

#include <strix/core/format.hpp>

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <exception>
#include <string>

namespace {

// Some causes arrive with line breaks (libpq's connection errors do); an operator gets one line.
std::string one_line(const std::string& s) {
    std::string out;
    bool space = false;
    for (char c : s) {
        bool ws = c == '\n' || c == '\r' || c == '\t' || c == ' ';
        if (ws) {
            space = !out.empty();
            continue;
        }
        if (space) out += ' ';
        space = false;
        out += c;
    }
    return out;
}

// --revoke-device-tokens NAME: one database connection, no engine. Revokes the account's device
// and resume tokens.
int revoke_device_tokens(const strix::chat::chat_options& o) {
    using namespace strix::chat;
    // The policy only matters for new password hashes, and none is made here.
    auto store = open_chat_store(o.db, password_policy::interactive());
    const auto acct = store->find_account(o.revoke_device_tokens);
    if (!acct) {
        strix::print(stderr, "strix-chat-server: no account called '{}' in {}; check the name and --db\n",
                     o.revoke_device_tokens, redact_url(o.db));
        return 1;
    }
    const std::size_t n = store->revoke_device_tokens(acct->id);
    strix::print(stdout, "strix-chat-server: revoked {} device token{} of {}\n", n, n == 1 ? "" : "s",
                 o.revoke_device_tokens);
    // Resume tokens log in without the password: after a leak they must go too.
    const std::size_t r = store->revoke_device_tokens(acct->id, token_kind::resume);
    strix::print(stdout, "strix-chat-server: revoked {} resume token{} of {}\n", r, r == 1 ? "" : "s",
                 o.revoke_device_tokens);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // Block the stop signals before any thread exists (database workers, shards, metrics), so
    // every thread inherits the mask and engine::run_until_signal() receives them.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);

    auto parsed = strix::chat::parse_options(argc, argv);
    if (!parsed.options) return parsed.exit_code;
    const auto& o = *parsed.options;
    // With a certificate or JWT keys, SIGHUP reloads them (chat_server::run); blocked before any
    // thread exists for the same reason. Without either it keeps its default (the process ends).
    if (!o.tls.cert_file.empty() || o.jwt.enabled()) {
        sigaddset(&set, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &set, nullptr);
    }
    try {
        if (!o.revoke_device_tokens.empty()) return revoke_device_tokens(o);
        strix::chat::chat_server srv(o);
        const std::string also_unix = o.server.unix_path.empty()
                                          ? std::string()
                                          : " and unix:" + o.server.unix_path + (srv.tls() ? " (plain)" : "");
        const std::string metrics =
            srv.metrics_port() ? strix::format("http://127.0.0.1:{}/metrics", srv.metrics_port()) : std::string("off");
        strix::print(stdout,
                     "strix-chat-server: listening on {}:{} ({}){} with {} shards ({}); database {}; metrics {}\n",
                     o.server.host, srv.port(), srv.tls() ? "TLS" : "plain TCP", also_unix, srv.shard_count(),
                     srv.io_name(), strix::chat::redact_url(o.db), metrics);
        if (o.insecure_plaintext && !strix::chat::is_loopback_host(o.server.host))
            strix::print(stderr,
                         "strix-chat-server: warning: --insecure-plaintext: passwords and device tokens reach {}:{} "
                         "in clear\n",
                         o.server.host, srv.port());
        if (srv.ws_port() != 0) {
            const char* s = srv.tls() ? "s" : "";
            strix::print(stdout, "strix-chat-server: web chat page http{}://{}:{}/ (WebSocket ws{}://{}:{}{})\n", s,
                         o.server.host, srv.ws_port(), s, o.server.host, srv.ws_port(), o.ws.path);
        }
        if (srv.api_port() != 0)
            strix::print(stdout, "strix-chat-server: server API http{}://{}:{}/api/v1/ (docs/api.md)\n",
                         srv.tls() ? "s" : "", o.server.host, srv.api_port());
        std::fflush(stdout);
        std::uint64_t lost = srv.run();
        std::printf("strix-chat-server: stopped\n");
        if (lost) {
            strix::print(stderr, "strix-chat-server: {} chat messages could not be written to the database\n", lost);
            return 1;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strix-chat-server: %s\n", one_line(e.what()).c_str());
        return 1;
    }
    return 0;
}
