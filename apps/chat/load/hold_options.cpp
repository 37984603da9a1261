#include "hold_options.hpp"

#include <CLI/CLI.hpp>

#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>

namespace strix::chat {
namespace {

[[noreturn]] void bad(const std::string& why) {
    std::fprintf(stderr, "strix-chat-hold: %s (see --help)\n", why.c_str());
    std::exit(2);
}

void check(hold_options& o) {
    if (o.connections == 0 || o.connections > 4'000'000) bad("--connections must be 1-4000000");
    if (o.jwt_key.empty()) bad("--jwt-key is required: logins are JWTs the tool signs");
    if (o.broadcast > 63) bad("--broadcast is at most 63 messages (--reconnect posts one more)");
    if (o.broadcast > 0 && o.hold_room.empty()) bad("--broadcast needs --hold-room");
    if (o.broadcast_bytes < 16 || o.broadcast_bytes > 60000) bad("--broadcast-bytes must be 16-60000");
    if (o.threads == 0 || o.threads > 64) bad("--threads must be 1-64");
    if (o.in_flight == 0) bad("--in-flight must be at least 1");
    if (o.per_source == 0) bad("--per-source must be at least 1");
    if (!(o.read_every_us >= 0 && o.read_every_us <= 100'000)) bad("--read-every must be 0-100000 microseconds");
    if (!(o.ping_interval_s >= 0.1) && o.ping_interval_s != 0) bad("--ping-interval must be 0 (off) or at least 0.1 s");
    in_addr a{};
    if (::inet_pton(AF_INET, o.source_base.c_str(), &a) != 1 || (ntohl(a.s_addr) >> 24) != 127)
        bad("--source-base must be an address in 127.0.0.0/8");
    const std::uint64_t last = ntohl(a.s_addr) + (o.connections - 1ull) / o.per_source;
    if (last > 0x7FFFFFFEull) bad("--source-base plus connections / --per-source runs past 127.255.255.254");
    if (o.name_prefix.empty() || o.name_prefix.size() > 20) bad("--name-prefix must be 1-20 characters");
    if (o.control_port == 0) o.control_port = o.port;
    if (o.room_members == 0 || o.room_members > o.connections) o.room_members = o.connections;
    if (o.jwt_ttl_s <= 0) o.jwt_ttl_s = o.ramp_timeout_s + o.hold_s + 3600;
}

}  // namespace

hold_options parse_hold_options(int argc, char** argv) {
    hold_options o;
    CLI::App app{"strix-chat-hold: holds N idle logged-in connections to strix-chat-server.\n"
                 "Each connection logs in with a JWT signed with --jwt-key (account PREFIX<i>), from\n"
                 "source address --source-base + i / --per-source, optionally joins --hold-room, and\n"
                 "pings every --ping-interval. With --broadcast K a control connection posts K messages\n"
                 "in the room once all are held, and the tool times each to every member and verifies\n"
                 "it (once each, in seq order, content as sent). Prints a JSON summary; exit status 0\n"
                 "only when all N were held to the end and nothing was lost, duplicated, reordered or\n"
                 "corrupted.",
                 "strix-chat-hold"};
    app.add_option("--host", o.host, "server IPv4 address")->capture_default_str();
    app.add_option("--port", o.port, "the server's TCP port (the control connection's)")->capture_default_str();
    app.add_option("--control-port", o.control_port, "the control connection's port (default: --port)");
    app.add_option("--ws-port", o.ws_port, "hold WebSockets to this --ws-port instead of TCP");
    app.add_option("--ws-path", o.ws_path, "the server's --ws-path")->capture_default_str();
    app.add_option("-n,--connections", o.connections, "connections to hold")->capture_default_str();
    app.add_option("--name-prefix", o.name_prefix, "account names PREFIX0, PREFIX1, ...")->capture_default_str();
    app.add_option("--jwt-key", o.jwt_key, "HS256 secret file (the server's --jwt-key)");
    app.add_option("--jwt-audience", o.jwt_audience, "aud claim (the server's --jwt-audience)");
    app.add_option("--jwt-issuer", o.jwt_issuer, "iss claim (the server's --jwt-issuer)");
    app.add_option("--jwt-ttl", o.jwt_ttl_s, "token lifetime in seconds (default: the run plus an hour)");
    app.add_option("--hold-room", o.hold_room, "room every held connection joins (created when missing)");
    app.add_option("--room-members", o.room_members, "only the first M connections join it (default: all)");
    app.add_option("--broadcast", o.broadcast, "messages to post in --hold-room once all are held (<= 64)")
        ->capture_default_str();
    app.add_option("--broadcast-bytes", o.broadcast_bytes, "text length of each")->capture_default_str();
    app.add_option("--broadcast-timeout", o.broadcast_timeout_s, "seconds to wait for one to reach all")
        ->capture_default_str();
    app.add_option("--hold-seconds", o.hold_s, "seconds to hold once all are in")->capture_default_str();
    app.add_option("--ramp-timeout", o.ramp_timeout_s, "seconds allowed for connecting")->capture_default_str();
    app.add_option("--rate", o.rate, "new connections per second, 0: unpaced")->capture_default_str();
    app.add_option("--in-flight", o.in_flight, "connects and logins in progress at once")->capture_default_str();
    app.add_option("--ping-interval", o.ping_interval_s, "seconds between a connection's pings (0: none)")
        ->capture_default_str();
    app.add_option("--source-base", o.source_base, "first loopback source address")->capture_default_str();
    app.add_option("--per-source", o.per_source, "connections per source address")->capture_default_str();
    app.add_option("--threads", o.threads, "event loops")->capture_default_str();
    app.add_option("--read-every", o.read_every_us,
                   "microseconds: once all are held, a worker reads its sockets at most this often, so "
                   "deliveries queue without waking it each time (0: at once)")
        ->capture_default_str();
    app.add_option("--json", o.json, "write the summary to this file too");
    app.add_flag("--reconnect", o.reconnect,
                 "connect, log in and rejoin again when the server closes a held connection (a restart), "
                 "timing until all are back and checking that the room's last seq is the last one seen");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        std::exit(app.exit(e));
    }
    check(o);
    return o;
}

}  // namespace strix::chat
