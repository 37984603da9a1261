// strix-echo-server: the Echo server shoot-out's echo server on the strix engine.
// Wire format: 4-byte little-endian total length (header included), then the body.
// The handler sends each message back with its own send() call; the engine coalesces them.
// With --ws it speaks WebSocket (RFC 6455) instead and echoes every message with its opcode
// (the Autobahn conformance runs and the WebSocket echo shoot-out use it).
#include <strix/core/engine.hpp>
#include <strix/core/format.hpp>
#include <strix/net/server.hpp>
#include <strix/net/tls.hpp>
#include <strix/net/ws_protocol.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>

namespace {

class echo_handler final : public strix::session_handler {
public:
    void on_frame(strix::session& s, std::span<const std::byte> frame) override { s.send(frame); }
};

class ws_echo final : public strix::ws_handler {
public:
    void on_message(strix::session& s, strix::ws_opcode op, std::span<const std::byte> m) override {
        strix::ws_send(s, op, m);
    }
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"strix-echo-server: echoes length-prefixed messages (the Echo server shoot-out's method)"};
    strix::engine_config ecfg;
    strix::server_config scfg;
    scfg.port = 7001;
    std::int64_t idle_ms = 0, frame_ms = 0;
    app.add_option("--host", scfg.host, "address to listen on")->capture_default_str();
    app.add_option("--port", scfg.port, "TCP port (0 = any free port)")->capture_default_str();
    app.add_option("--shards", ecfg.shards, "shards (threads); 0 = one per online CPU")->capture_default_str();
    app.add_option("--unix", scfg.unix_path, "also listen on this Unix socket path");
    app.add_option("--max-frame", scfg.limits.max_frame, "largest message accepted, bytes")->capture_default_str();
    app.add_option("--max-queued", scfg.limits.max_queued, "queued output that disconnects a slow consumer, bytes")
        ->capture_default_str();
    app.add_option("--idle-timeout-ms", idle_ms, "close connections idle this long (0 = never)")->capture_default_str();
    app.add_option("--frame-timeout-ms", frame_ms,
                   "close connections whose frame is not complete this long after its "
                   "first byte (0 = never)")
        ->capture_default_str();
    std::string io = "auto";
    app.add_option("--io", io,
                   "I/O backend: auto (STRIX_IO, else io_uring where the kernel allows it, else epoll), uring or epoll")
        ->check(CLI::IsMember({"auto", "epoll", "uring"}))
        ->capture_default_str();
    std::string tls_cert, tls_key;
    app.add_option("--tls-cert", tls_cert, "serve TLS with this PEM certificate chain (needs --tls-key)");
    app.add_option("--tls-key", tls_key, "the PEM private key of --tls-cert");
    bool pin = ecfg.pin_threads;
    app.add_flag("--pin,!--no-pin", pin, "pin shard i to the i-th allowed CPU (docs/architecture.md, \"Pinning\")")
        ->capture_default_str();
    bool ws = false;
    strix::ws_options wo;
    wo.path.clear();  // any path
    app.add_flag("--ws", ws, "speak WebSocket (RFC 6455): echo every message with its opcode");
    app.add_option("--ws-path", wo.path, "with --ws: serve the upgrade at this path only (default: any)");
    app.add_option("--max-message", wo.max_message, "with --ws: largest message, bytes (above: close 1009)")
        ->capture_default_str();
    app.add_option("--max-fragments", wo.max_fragments, "with --ws: most frames in one message")->capture_default_str();
    std::int64_t ws_handshake_ms = wo.handshake_timeout.count();
    app.add_option("--ws-handshake-timeout-ms", ws_handshake_ms,
                   "with --ws: close connections not upgraded by then (0 = never)")
        ->capture_default_str();
    app.add_option("--max-pings-per-second", wo.max_pings_per_second,
                   "with --ws: above this, close 1008 (0 = no limit)")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    ecfg.io = io == "uring"   ? strix::io_backend::uring
              : io == "epoll" ? strix::io_backend::epoll
                              : strix::io_backend::automatic;
    ecfg.pin_threads = pin;
    scfg.limits.idle_timeout = std::chrono::milliseconds(idle_ms);
    scfg.limits.frame_timeout = std::chrono::milliseconds(frame_ms);

    if (tls_cert.empty() != tls_key.empty()) {
        std::fprintf(stderr, "strix-echo-server: --tls-cert and --tls-key go together\n");
        return 2;
    }

    try {
        if (!tls_cert.empty()) scfg.tls = strix::tls_server::load({.cert_file = tls_cert, .key_file = tls_key});
        strix::engine eng(ecfg);
        wo.handshake_timeout = std::chrono::milliseconds(ws_handshake_ms);
        if (ws) wo.apply(scfg);
        strix::server srv(eng, scfg, [&](strix::shard&) -> std::unique_ptr<strix::session_handler> {
            if (ws) return std::make_unique<strix::ws_protocol>(std::make_unique<ws_echo>(), wo);
            return std::make_unique<echo_handler>();
        });
        srv.start();
        strix::print(stdout, "strix-echo-server: listening on {}:{} with {} shards ({}{})\n", scfg.host, srv.port(),
                     eng.shard_count(), eng.io_name(),
                     std::string(scfg.tls ? ", TLS" : "") + (ws ? ", WebSocket" : ""));
        std::fflush(stdout);
        eng.run_until_signal();
        auto st = srv.stats();
        strix::print(stdout,
                     "strix-echo-server: stopped; {} connections, {} messages in, {} bytes out, "
                     "{} frame errors, {} slow consumers\n",
                     st.accepted.value(), st.frames_in.value(), st.bytes_out.value(), st.frame_errors.value(),
                     st.slow_consumers.value());
        if (ws)
            strix::print(
                stdout,
                "strix-echo-server: websocket: {} handshakes, {} refused, {} handshake timeouts, {} messages in; "
                "closes: {} handshake, {} protocol, {} invalid payload, {} too big, {} policy\n",
                st.ws_handshakes.value(), st.ws_handshakes_refused.value(), st.handshake_timeouts.value(),
                st.ws_messages_in.value(), st.ws_closes_normal.value(), st.ws_closes_protocol.value(),
                st.ws_closes_utf8.value(), st.ws_closes_too_big.value(), st.ws_closes_policy.value());
        for (unsigned i = 0; i < eng.shard_count(); ++i) {
            const auto& ss = eng.at(i).stats();
            strix::print(stdout, "  shard {}: {} loop turns, {} I/O events, {} wake-ups by other threads\n", i,
                         ss.turns.value(), ss.io_events.value(), ss.wakeups.value());
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strix-echo-server: %s\n", e.what());
        return 1;
    }
    return 0;
}
