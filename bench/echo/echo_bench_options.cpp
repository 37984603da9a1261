// strix-echo-bench's command line: every option, its checks, and the usage errors (exit 2).

#include "echo_bench_options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>

#include "echo_args.hpp"
#include "echo_stats.hpp"
#include "echo_wire.hpp"
#include "echo_ws.hpp"

namespace strix {

echo_bench_options parse_echo_bench_options(int argc, char** argv) {
    echo_bench_options o;
    CLI::App app{"strix-echo-bench: the load tool of the echo shoot-out; verifies every echoed byte "
                 "and the order of the echoes",
                 "strix-echo-bench"};
    app.footer("MB/s counts wire bytes (header + body), 1 MB = 10^6 bytes; with --tls the echo protocol's bytes "
               "(TLS plaintext), not the records on the socket.");
  // A repeated option keeps its last value, so a wrapper script can override what it passed.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_option("--host", o.host, "numeric IPv4 address of the echo server")->capture_default_str();
    app.add_option("--port", o.port, "server port")->required()->check(CLI::Range(1, 65535));
    app.add_option("--connections", o.connections, "TCP connections")
        ->capture_default_str()
        ->check(CLI::Range(1, 100000));
    app.add_option("--size", o.size, "body bytes per message; on the wire 4 + B")
        ->capture_default_str()
        ->check(CLI::Range(0, 16 << 20));
    app.add_option("--depth", o.depth, "messages kept in flight per connection")
        ->capture_default_str()
        ->check(CLI::Range(1, 1 << 20));
    app.add_option("--duration", o.duration_s, "measured seconds after the warmup")
        ->capture_default_str()
        ->check(CLI::Range(1, 86400));
    app.add_option("--warmup", o.warmup_s, "seconds run before measuring")
        ->capture_default_str()
        ->check(CLI::Range(0, 3600));
    app.add_option("--server-pid", o.server_pid, "report the server's CPU % and RSS from /proc/PID")
        ->check(CLI::Range(0LL, 1LL << 31));
    app.add_option("--json", o.json, "write the summary as JSON to FILE");
    app.add_option("--mode", o.mode,
                   "single: one thread, one epoll loop for every connection, sampling between loop turns; "
                   "multi: --threads worker threads with a slice of the connections each, sampled by the "
                   "main thread")
        ->capture_default_str()
        ->check(CLI::IsMember({"single", "multi"}));
    app.add_option("--threads", o.threads, "client worker threads in --mode multi")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    app.add_option("--drain-timeout", o.drain_timeout_s, "how long to wait for outstanding echoes at the end, seconds")
        ->capture_default_str()
        ->check(CLI::Range(1, 3600));
    app.add_flag("--tls", o.tls.enabled,
                 "TLS 1.2/1.3 over every connection (OpenSSL); the server's certificate is verified only with "
                 "--ca: WITHOUT --ca NOTHING IS VERIFIED");
    app.add_option("--ca", o.tls.ca,
                   "with --tls: PEM file of the CA(s) the server's chain must verify against; the certificate must "
                   "also name --host (an IP SAN) or --server-name");
    app.add_option("--server-name", o.tls.server_name,
                   "with --tls: the name sent as SNI and, with --ca, verified (default: no SNI, verify the IP)");
    app.add_option("--alpn", o.tls.alpn, "with --tls: offer this ALPN protocol; the server must select it");
    app.add_option("--tls-max", o.tls.max_version, "with --tls: the highest TLS version offered (the lowest is 1.2)")
        ->capture_default_str()
        ->check(CLI::IsMember({"1.2", "1.3"}));
    app.add_flag("--handshakes", o.handshakes,
                 "with --tls: measure handshakes instead of echoes; --connections slots over --threads threads each "
                 "connect, complete a handshake, echo one --size message, close and start over; reports handshakes/s");
    app.add_flag("--resume", o.resume,
                 "with --handshakes: offer each slot's last session (ticket) so the server can resume it; the run "
                 "fails when under 90 % of the measured handshakes were resumed");
    app.add_flag("--ws", o.ws,
                 "WebSocket (RFC 6455): an HTTP/1.1 upgrade per connection, then each message is one binary frame "
                 "of --size payload bytes, masked with a new key per frame; every echo must come back as a binary "
                 "message with the same bytes, in order");
    app.add_option("--ws-path", o.ws_path, "with --ws: the request path of the upgrade")->capture_default_str();
    app.add_flag("--broadcast", o.broadcast,
                 "with --ws: the server sends every message to every client (a broadcast server); each connection "
                 "keeps --depth of its own messages in flight, and every connection must receive every "
                 "connection's messages, each sender's in order; msgs/s counts deliveries (--size >= 12)");
    echo_parse_args(app, argc, argv);
    if (app.count("--ws-path") + app.count("--broadcast") > 0 && !o.ws)
        echo_usage_error(app, "--ws-path and --broadcast need --ws");
    if (o.ws && o.tls.enabled) echo_usage_error(app, "--ws over --tls (wss://) is not supported yet; drop one");
    if (o.ws_path.empty() || o.ws_path[0] != '/') echo_usage_error(app, "--ws-path must start with '/'");
    if (o.broadcast && o.size < 12)
        echo_usage_error(app, "--broadcast needs --size 12 or more (the sender's id and sequence ride in the body)");
    o.tls.host = o.host;
    const bool tls_only = app.count("--ca") + app.count("--server-name") + app.count("--alpn") +
                              app.count("--tls-max") + app.count("--handshakes") >
                          0;
    if (tls_only && !o.tls.enabled)
        echo_usage_error(app, "--ca, --server-name, --alpn, --tls-max and --handshakes need --tls");
    if (o.resume && !o.handshakes) echo_usage_error(app, "--resume needs --handshakes");
    if (o.handshakes && app.count("--depth") > 0)
        echo_usage_error(app, "--handshakes sends one message per connection; drop --depth");
    if (o.handshakes && o.mode == "single")
        echo_usage_error(app, "--handshakes runs --threads threads; drop --mode single");
    if (o.mode == "single") {
        if (app.count("--threads") > 0 && o.threads != 1)
            echo_usage_error(app, "--mode single runs one thread; drop --threads");
        o.threads = 1;
    }
    o.threads = std::min(o.threads, o.connections);
    if (static_cast<double>(o.depth) * static_cast<double>(echo_client_wire_size(o)) > double(1 << 30)) {
        echo_usage_error(app, "--depth x (4 + --size) must stay under 1 GiB in flight per connection");
    }
    if (o.server_pid != 0 && !read_proc(o.server_pid).ok) {
        echo_usage_error(app, "cannot read /proc/" + std::to_string(o.server_pid) + "/stat: is --server-pid right?");
    }
    return o;
}

std::size_t echo_client_wire_size(const echo_bench_options& o) noexcept {
    return o.ws ? ws_header_size(o.size, true) + o.size : echo_header_size + o.size;
}

}  // namespace strix
