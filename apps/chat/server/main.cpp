// strix-chat-server: rooms and chat over strix frames (docs/protocol.md), with accounts and chat
// logs in SQLite or PostgreSQL, Prometheus metrics, and a graceful shutdown on SIGTERM/SIGINT.
#include "chat_server.hpp"
#include "apps/chat/server/options/chat_options.hpp"

#include "apps/chat/storage/chat_store.hpp"

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
    try {
        strix::chat::chat_server srv(o);
        const std::string also_unix = o.server.unix_path.empty() ? std::string() : " and unix:" + o.server.unix_path;
        std::printf("strix-chat-server: listening on %s:%u%s with %u shards (%s); database %s; metrics %s\n",
                    o.server.host.c_str(), srv.port(), also_unix.c_str(), srv.shard_count(), srv.io_name(), strix::chat::redact_url(o.db).c_str(),
                    srv.metrics_port() ? ("http://127.0.0.1:" + std::to_string(srv.metrics_port()) + "/metrics").c_str()
                                       : "off");
        std::fflush(stdout);
        std::uint64_t lost = srv.run();
        std::printf("strix-chat-server: stopped\n");
        if (lost) {
            std::fprintf(stderr, "strix-chat-server: %llu chat messages could not be written to the database\n",
                         static_cast<unsigned long long>(lost));
            return 1;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strix-chat-server: %s\n", one_line(e.what()).c_str());
        return 1;
    }
    return 0;
}
