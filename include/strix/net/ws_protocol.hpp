#pragma once
// ws_protocol: WebSocket (RFC 6455) for any strix server or client. It is the session_handler of
// a server (or session_group) and hands whole messages to the application's ws_handler:
//
//   socket -> session -> http framer (request head) -> ws_protocol: upgrade, or on_http reply
//                     -> ws frame framer (one frame) -> ws_protocol: unmask, check, reassemble
//                                                    -> ws_handler::on_message(text|binary)
//   ws_handler -> ws_send / ws_encode + session::send -> the turn's gather write
//
// Two framers cut the stream (strix/net/framer.hpp): the request head up to "\r\n\r\n" while the
// session is HTTP, then one WebSocket frame at a time, sized from its header and refused there
// (length above the limit, 2^63 lengths, RSV bits, unknown opcodes, unmasked client frames, long
// or fragmented control frames) before any payload is buffered. set_framer() switches at the
// upgrade. docs/websocket.md has the decisions.
//
//     struct echo : strix::ws_handler {
//         void on_message(strix::session& s, strix::ws_opcode op, std::span<const std::byte> m) override {
//             strix::ws_send(s, op, m);
//         }
//     };
//     strix::server_config cfg{.port = 8080};
//     strix::ws_options wo{.path = "/ws"};
//     wo.apply(cfg);   // framer and limits for the HTTP phase and the frames
//     strix::server srv(eng, cfg, [&](strix::shard&) {
//         return std::make_unique<strix::ws_protocol>(std::make_unique<echo>(), wo);   // one per shard
//     });
//
// wss:// is the same server with server_config::tls set: TLS sits below the session.
// Thread contract: like every handler, a ws_protocol and its ws_handler belong to one shard.

#include <strix/net/connection.hpp>
#include <strix/net/session.hpp>
#include <strix/net/session_group.hpp>
#include <strix/net/session_handler.hpp>
#include <strix/net/websocket.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strix {

struct server_config;

/// A request that is not a WebSocket upgrade (e.g. GET / for the page that opens the socket).
/// The views are valid during the ws_options::on_http call only.
struct http_request {
    std::string_view method;  // "GET"
    std::string_view target;  // "/index.html?x=1"
    std::string_view path;    // "/index.html"
    std::vector<std::pair<std::string_view, std::string_view>> headers;
    /// The value of header `name` (case-insensitive), empty when absent.
    std::string_view header(std::string_view name) const noexcept;
};

/// The application's answer to an http_request; sent with Content-Length and Connection: close.
struct http_response {
    int status = 404;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Cache-Control, ...)
};

struct ws_options {
    std::string path = "/";                 // the upgrade is served here only (else 404); "" = any path
    std::vector<std::string> origins;       // allowed Origin values (exact); empty = any (and none)
    std::vector<std::string> subprotocols;  // server: accepted, in preference order; client: offered
    std::uint32_t max_message = 64 * 1024;  // largest message (and frame payload); above: close 1009
    std::uint32_t max_fragments = 1024;     // frames of one message; above: close 1009
    std::uint32_t max_handshake = 8 * 1024;  // request (or response) head; above: 431 and close
    std::chrono::milliseconds handshake_timeout{10000};  // upgrade not complete by then: closed; 0 = never
    // With true the upgrade completes the session's handshake (session::handshake_done); with
    // false the application calls handshake_done() itself (after its own login), and
    // handshake_timeout covers upgrade and login together.
    bool upgrade_ends_handshake = true;
    std::uint32_t max_pings_per_second = 200;  // above: close 1008 (a ping flood); 0 = no limit
    // Answers requests that are not upgrades; unset = 404 (426 on the WebSocket path). The
    // session's shard calls it.
    std::function<http_response(const http_request&)> on_http;
    // Client: the Origin header sent (empty = none).
    std::string origin;

    /// Sets cfg's framing to the HTTP framer, and its limits so that a frame of max_message and
    /// a request head of max_handshake fit, with handshake_timeout. The owning thread.
    void apply(server_config& cfg) const;
    /// The same for a session group (clients, or a hand-made server).
    void apply(session_group_config& cfg) const;
};

/// What the application implements: whole, checked messages of WebSocket sessions.
class ws_handler {
public:
    virtual ~ws_handler() = default;
    /// The upgrade completed (server: 101 sent; client: 101 received and checked). ws_send works.
    virtual void on_open(session&) {}
    /// One whole message: text (valid UTF-8) or binary, reassembled from its fragments and
    /// unmasked. Valid until this call returns.
    virtual void on_message(session& s, ws_opcode op, std::span<const std::byte> payload) = 0;
    /// A session that heard on_open is gone: ec is ws_close_reason(code) for a close handshake
    /// (either side), a ws_errc for a protocol failure, or a net_errc / system error.
    virtual void on_close(session&, std::error_code) {}
    /// After session::notify_when_drained(): the peer took everything queued.
    virtual void on_drained(session&) {}
    /// An open session broke the protocol or missed a deadline (ec: a ws_errc close code, or
    /// net_errc::handshake_timeout / frame_timeout); a close frame follows, then on_close.
    /// What this sends is flushed first.
    virtual void on_protocol_error(session&, std::error_code) {}
    /// Client: a connection attempt failed (refused, timed out, or the upgrade was refused).
    virtual void on_connect_failed(connection&, std::error_code) {}
};

/// The WebSocket session_handler, one per shard (server factory) or per group. Both roles: it
/// serves the sessions a listener accepted and upgrades the ones its group connected (connect()).
class ws_protocol final : public session_handler {
public:
    /// app must outlive this. The owning thread.
    ws_protocol(ws_handler& app, ws_options opts);
    /// Owns app (a server factory: make_unique<ws_protocol>(make_unique<my_app>(), opts)).
    ws_protocol(std::unique_ptr<ws_handler> app, ws_options opts);
    ~ws_protocol() override;

    /// Connects to url ("ws://127.0.0.1:8080/chat", or "wss://..." with opts.tls set) through
    /// group g, whose handler must be this ws_protocol and whose config ws_options::apply made.
    /// The app hears on_open after the upgrade, or on_connect_failed. Throws
    /// std::invalid_argument for a malformed url. g's shard (or before it runs).
    connection_ptr connect(session_group& g, std::string_view url, const connect_options& opts = {});

    /// The subprotocol agreed for s (empty: none). The session's shard.
    std::string_view subprotocol(const session& s) const noexcept;

    const ws_options& options() const noexcept { return opts_; }

    // session_handler
    void on_open(session& s) override;
    void on_frame(session& s, std::span<const std::byte> frame) override;
    void on_protocol_error(session& s, std::error_code ec) override;
    void on_close(session& s, std::error_code ec) override;
    void on_drained(session& s) override;
    void on_connect_failed(connection& c, std::error_code ec) override;

    struct impl;

private:
    std::unique_ptr<ws_handler> owned_;
    ws_handler& app_;
    const ws_options opts_;
    std::unique_ptr<impl> impl_;
};

/// The framer of the HTTP phase: one request (or response) head, up to and including the empty
/// line. A head longer than the session's max_frame is refused (frame_too_large).
const framer& ws_http_framer() noexcept;
/// One WebSocket frame from a client (masked, else ws_errc::protocol_error) / from a server
/// (unmasked).
const framer& ws_server_framer() noexcept;
const framer& ws_client_framer() noexcept;

}  // namespace strix
