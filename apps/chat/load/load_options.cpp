#include "load_options.hpp"

#include "conversation_layout.hpp"
#include "message_text.hpp"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace strix::chat {
namespace {

[[noreturn]] void bad(const std::string& why) {
    std::fprintf(stderr, "strix-chat-load: %s (see --help)\n", why.c_str());
    std::exit(2);
}

bool valid_name_chars(const std::string& s) {
    for (char c : s) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                        c == '.' || c == '-';
        if (!ok) return false;
    }
    return true;
}

// The conversations workload's options; sets --rooms to the group rooms it makes.
void check_conversations(load_options& o, bool rooms_given) {
    if (!(o.dm_share >= 0 && o.dm_share <= 1)) bad("--dm-share must be between 0 and 1");
    if (o.dm_share == 0) o.dm_partners = 0;
    if (o.dm_share > 0 && o.dm_partners == 0) bad("--dm-share needs --dm-partners of at least 2");
    const std::string why = conversation_layout::invalid(o.clients, o.rooms_per_client, o.room_size, o.dm_partners);
    if (!why.empty()) bad(why);
    const std::uint32_t rooms = o.clients / o.room_size * o.rooms_per_client;
    if (rooms_given && o.rooms != rooms)
        bad("--rooms with --rooms-per-client must be clients * K / --room-size (" + std::to_string(rooms) +
            "), or left out");
    o.rooms = rooms;
    if (o.reconnect) bad("--reconnect and --reconnect-share are for the single-room workload");
}

}  // namespace

load_options parse_load_options(int argc, char** argv) {
    load_options o;
    for (int i = 0; i < argc; ++i) {
        if (i > 0) o.command_line += ' ';
        o.command_line += argv[i];
    }
    CLI::App app{"strix-chat-load: the Chat server portfolio's DummyClient load test for strix-chat-server.\n"
                 "Logs in --clients accounts, makes --rooms rooms (client i joins room i % rooms), sends\n"
                 "chat at --rps per client and verifies every delivery: room seq order, text content,\n"
                 "exactly-once fan-out.\n"
                 "Exit status 0 only when nothing was lost, duplicated, reordered or corrupted and the\n"
                 "server answered no request with an error (--sweep: 0 unless a step duplicated, reordered,\n"
                 "skipped or corrupted messages, or got errors other than rate_limited / server_busy).",
                 "strix-chat-load"};
    app.add_option("--host", o.host, "server IPv4 address")->capture_default_str();
    app.add_option("--port", o.port, "server port")->capture_default_str();
    app.add_option("--unix", o.unix_path, "connect over this Unix socket path instead of --host/--port");
    app.add_option("--targets", o.targets,
                   "cluster nodes host:port,host:port,...: each room's members are spread over them in turn, "
                   "instead of --host/--port")
        ->delimiter(',')
        ->type_name("HOST:PORT,...");
    auto* tls = app.add_flag("--tls", o.tls,
                             "TLS on every connection (strix-chat-server --tls-cert), the server's certificate "
                             "verified against --ca and --host");
    app.add_option("--ca", o.ca_file, "CA certificate(s) to verify the server with (PEM; default: the system's)")
        ->type_name("FILE")
        ->needs(tls);
    app.add_option("--server-name", o.server_name,
                   "the name (or address) the server's certificate must carry, sent as SNI (default: --host)")
        ->type_name("NAME")
        ->needs(tls);
    auto* ws = app.add_flag("--ws", o.ws,
                            "WebSocket: --port is strix-chat-server's --ws-port, every frame one binary message "
                            "(wss:// with --tls)");
    app.add_option("--ws-path", o.ws_path, "the server's --ws-path")->capture_default_str()->needs(ws);
    app.add_option("--clients", o.clients, "connections, one account each")->capture_default_str();
    auto* rooms_opt =
        app.add_option("--rooms", o.rooms, "rooms; the first --rooms clients create them")->capture_default_str();
    auto* per_client = app.add_option("--rooms-per-client", o.rooms_per_client,
                                      "the conversations workload: protocol version 2, each client in K group rooms "
                                      "of --room-size members (clients * K / size rooms), a --dm-share of its "
                                      "messages direct; 0: the single-room workload")
                           ->capture_default_str();
    app.add_option("--room-size", o.room_size, "members of each group room (with --rooms-per-client)")
        ->capture_default_str()
        ->needs(per_client);
    app.add_option("--dm-share", o.dm_share, "share (0..1) of the messages sent as direct messages to a partner")
        ->capture_default_str()
        ->needs(per_client);
    app.add_option("--dm-partners", o.dm_partners,
                   "direct-message partners per client (even: i+-1 .. i+-N/2), each pair opened before the run")
        ->capture_default_str()
        ->needs(per_client);
    app.add_option("--rps", o.rps, "chat messages per second per client (start rate in --sweep)")
        ->capture_default_str();
    app.add_option("--payload-mix", o.mix_spec, "text lengths LEN:W or LO-HI:W, weights in %")->capture_default_str();
    auto* dur = app.add_option("--duration", o.duration_s, "measured seconds (per step in --sweep, default 10)")
                    ->capture_default_str();
    app.add_option("--report-every", o.report_every_s, "seconds per interval row")->capture_default_str();
    auto* warm =
        app.add_option("--warmup", o.warmup_s, "seconds of load before measuring (--sweep: per step, default 1)")
            ->capture_default_str();
    app.add_option("--json", o.json, "write the summary and interval rows as JSON to FILE");
    app.add_flag("--sweep", o.sweep, "raise --rps by --sweep-factor per step until p99 or delivery fails");
    app.add_option("--sweep-factor", o.sweep_factor, "rps multiplier per sweep step")->capture_default_str();
    app.add_option("--sweep-steps", o.sweep_steps, "most sweep steps")->capture_default_str();
    app.add_option("--sweep-p99-ms", o.sweep_p99_ms, "a step with a higher p99 ends the sweep")->capture_default_str();
    app.add_option("--password", o.password, "password of every load account")->capture_default_str();
    app.add_option("--name-prefix", o.name_prefix, "account names are PREFIX0, PREFIX1, ...")->capture_default_str();
    app.add_option("--connect-rate", o.connect_rate, "new connections per second, N or N/s (0: unlimited)")
        ->capture_default_str()
        ->transform([](std::string v) { return v.ends_with("/s") ? v.substr(0, v.size() - 2) : v; });
    app.add_option("--clients-per-source", o.clients_per_source,
                   "against a 127.x server, connect N clients from each of 127.0.0.1, 127.0.0.2, ... so a "
                   "per-address connection cap sees separate hosts (0: all from one address)")
        ->capture_default_str();
    app.add_option("--threads", o.threads, "event-loop threads, clients split among them")->capture_default_str();
    app.add_option("--drain-timeout", o.drain_timeout_s, "seconds to wait for outstanding deliveries")
        ->capture_default_str();
    app.add_option("--setup-timeout", o.setup_timeout_s, "seconds allowed for login, create and join")
        ->capture_default_str();
    app.add_option("--server-pid", o.server_pid, "report the server's CPU use per step from /proc/PID/stat");
    app.add_option("--poll-spin-us", o.poll_spin_us,
                   "after a turn with events, keep polling this many microseconds before sleeping (0 = off)")
        ->capture_default_str()
        ->check(CLI::Range(0u, 1'000'000u));
    app.add_option("--reconnect-share", o.reconnect_share,
                   "share (0..1) of clients that reset their connection once at a random moment of the run, "
                   "reconnect (next --targets node), log in with their resume token and resume; every "
                   "missed message must come back exactly once, in order")
        ->capture_default_str();
    app.add_flag("--reconnect", o.reconnect,
                 "a client whose connection is lost during the run (node killed) reconnects to the next "
                 "--targets node and resumes the same way (implied by --reconnect-share)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) std::exit(app.exit(e));  // --help: prints it, status 0
        bad(e.what());
    }
    if (o.sweep) {
        if (dur->count() == 0) o.duration_s = 10;
        if (warm->count() == 0) o.warmup_s = 1;
    }

    if (!(o.reconnect_share >= 0 && o.reconnect_share <= 1)) bad("--reconnect-share must be between 0 and 1");
    if (o.reconnect_share > 0) o.reconnect = true;

    std::string why;
    auto mix = payload_mix::parse(o.mix_spec, &why);
    if (!mix) bad("--payload-mix: " + why);
    o.mix = std::move(*mix);
    if (!(o.connect_rate >= 0)) bad("--connect-rate must be a number of connections per second, like 500 or 500/s");
    if (o.clients == 0) bad("--clients must be at least 1");
    if (o.reconnect) {
        // Stored copies (resume, history) carry no client_seq: the text's tag says which message
        // each is, so every text must hold a whole tag.
        for (const payload_band& b : o.mix.bands()) {
            if (b.weight > 0 && b.lo < message_text::max_tag)
                bad("--reconnect needs texts of at least " + std::to_string(message_text::max_tag) +
                    " bytes in --payload-mix (the tag that identifies a refilled message)");
        }
        if (o.sweep) bad("--reconnect and --reconnect-share are for a normal run, not --sweep");
        if (o.ws) bad("--reconnect with --ws is not supported yet");
    }
    if (o.tls && !o.unix_path.empty()) bad("--tls is for TCP: strix-chat-server serves its Unix socket plain");
    if (o.ws && !o.unix_path.empty()) bad("--ws is for TCP: strix-chat-server serves WebSocket on its --ws-port");
    if (!o.targets.empty() && !o.unix_path.empty()) bad("--targets and --unix exclude each other");
    for (const auto& t : o.targets) {
        const auto colon = t.rfind(':');
        unsigned long port = 0;
        if (colon != std::string::npos && colon > 0 && colon + 1 < t.size() &&
            t.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
            port = std::stoul(t.substr(colon + 1).substr(0, 6));
        }
        if (port == 0 || port > 65535) bad("--targets: '" + t + "' is not host:port");
    }
    if (o.tls && !o.targets.empty() && o.server_name.empty())
        bad("--tls with --targets needs --server-name (the name every node's certificate carries)");
    if (o.ws && !o.targets.empty()) bad("--ws with --targets is not supported yet: give one --port");
    if (o.rooms_per_client > 0) {
        check_conversations(o, rooms_opt->count() != 0);
    } else if (o.rooms == 0 || o.rooms > o.clients) {
        bad("--rooms must be between 1 and --clients");
    }
    if (!(o.rps > 0) || o.rps > 1e6) bad("--rps must be a positive number of messages per second");
    if (!(o.duration_s > 0)) bad("--duration must be positive");
    if (!(o.report_every_s > 0)) bad("--report-every must be positive");
    if (!(o.warmup_s >= 0)) bad("--warmup must not be negative");
    if (!(o.sweep_factor > 1)) bad("--sweep-factor must be greater than 1");
    if (o.sweep_steps == 0) bad("--sweep-steps must be at least 1");
    if (!(o.sweep_p99_ms > 0)) bad("--sweep-p99-ms must be positive");
    if (o.threads == 0 || o.threads > 64 || o.threads > o.clients)
        bad("--threads must be between 1 and min(64, --clients)");
    if (!(o.drain_timeout_s >= 0)) bad("--drain-timeout must not be negative");
    if (!(o.setup_timeout_s > 0)) bad("--setup-timeout must be positive");
    const std::string longest = o.name_prefix + std::to_string(o.clients - 1);
    if (o.name_prefix.empty() || longest.size() > 32 || !valid_name_chars(o.name_prefix)) {
        bad("--name-prefix must be [A-Za-z0-9_.-] and leave room for the client number in 32 bytes");
    }
    if (o.password.empty()) bad("--password must not be empty");
    if (std::ceil(o.duration_s / o.report_every_s) > 100000) bad("--report-every is too small for --duration");
    return o;
}

}  // namespace strix::chat
