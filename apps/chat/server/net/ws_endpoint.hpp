#pragma once
// ws_endpoint: what --ws-port, --ws-path and --ws-origins make of strix::ws_options for the chat
// server's WebSocket listener: the upgrade path, the origin allow list, the message limit, the
// login timeout, and the web chat page (web_assets.hpp) answered to plain GETs on the same port.
//
// The origin default (no --ws-origins): the page's own origin only, i.e. scheme://host:port of
// this listener (scheme https with --tls-cert; on a loopback --host also the names localhost,
// 127.0.0.1 and [::1]), and requests without an Origin header, which browsers always send, so
// that only programs omit it. A page elsewhere cannot open a socket with its visitors' browsers.

#include "apps/chat/server/options/chat_options.hpp"

#include <strix/net/ws_protocol.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace strix::chat {

/// The Origin values allowed on `port` (see above); "*" in --ws-origins allows any. Any thread.
std::vector<std::string> ws_origins(const chat_options& o, std::uint16_t port, bool tls);

/// The listener's ws_options for port (the one it binds), with the page served at / and
/// /index.html (told the WebSocket path) and /app.js. Main thread, before the server starts.
ws_options chat_ws_options(const chat_options& o, std::uint16_t port, bool tls);

/// A TCP port free on host now, for --ws-port 0: the default origins name the port, so it is
/// chosen before the listener binds. Throws std::runtime_error when none can be bound. Main thread.
std::uint16_t pick_free_port(const std::string& host);

}  // namespace strix::chat
