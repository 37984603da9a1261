// The WebSocket upgrade (RFC 6455 section 4), both sides, and plain HTTP answers on the same
// port (ws_options::on_http).
#include "net/ws/ws_protocol_impl.hpp"

#include <strix/net/net_errc.hpp>

#include "net/ws/ws_http.hpp"

#include <stdexcept>
#include <string>

namespace strix {

using detail::ws_conn;

std::string_view http_request::header(std::string_view name) const noexcept {
    for (auto& [k, v] : headers)
        if (detail::iequals(k, name)) return v;
    return {};
}

namespace {

std::string_view as_text(std::span<const std::byte> b) noexcept {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

std::span<const std::byte> as_bytes(const std::string& s) noexcept {
    return std::as_bytes(std::span(s.data(), s.size()));
}

bool is_upgrade(const detail::http_head& h) noexcept {
    return detail::header_has_token(h.header("Upgrade"), "websocket") &&
           detail::header_has_token(h.header("Connection"), "upgrade");
}

}  // namespace

void ws_protocol::impl::refuse(session& s, int status, bool version_hint) {
    http_response r;
    r.status = status;
    r.content_type.clear();
    if (version_hint) r.headers.emplace_back("Sec-WebSocket-Version", "13");
    s.send(as_bytes(detail::http_reply(r)));
    s.close(std::error_code(status, ws_category()));
}

void ws_protocol::impl::upgraded(session& s, ws_conn& c, const framer& frames) {
    c.open = true;
    s.set_framer(frames);
    s.set_max_frame(s.group().limits().max_frame);
    if (self.opts_.upgrade_ends_handshake) s.handshake_done();
    bump(s.group().counters().ws_handshakes);
    self.app_.on_open(s);
}

void ws_protocol::impl::on_request(session& s, ws_conn& c, std::span<const std::byte> bytes) {
    const ws_options& o = self.opts_;
    auto& counters = s.group().counters();
    detail::http_head h;
    if (!detail::parse_http_head(as_text(bytes), h) || !h.c.starts_with("HTTP/1.")) {
        bump(counters.ws_handshakes_refused);
        return refuse(s, 400, false);
    }
    std::string_view path = h.b.substr(0, h.b.find('?'));
    const bool on_path = o.path.empty() || path == o.path;
    if (!is_upgrade(h)) {
        // A plain request: the application's page, or why there is none.
        bump(counters.ws_http_requests);
        if (o.on_http && (h.a == "GET" || h.a == "HEAD")) {
            http_request req{h.a, h.b, path, h.headers};
            const http_response r = o.on_http(req);
            s.send(as_bytes(detail::http_reply(r, h.a == "HEAD")));
            s.close();
            return;
        }
        return refuse(s, on_path ? 426 : 404, on_path);
    }
    int status = 0;
    if (h.a != "GET" || h.c != "HTTP/1.1" || h.header("Host").empty()) {
        status = 400;
    } else if (!on_path) {
        status = 404;
    } else if (h.header("Sec-WebSocket-Version") != "13") {
        status = 426;
    } else if (!detail::ws_key_valid(h.header("Sec-WebSocket-Key"))) {
        status = 400;
    } else if (!o.origins.empty()) {
        const std::string_view origin = h.header("Origin");
        bool ok = false;
        for (auto& allowed : o.origins) ok = ok || origin == allowed;
        if (!ok) status = 403;
    }
    if (status) {
        bump(counters.ws_handshakes_refused);
        return refuse(s, status, status == 426);
    }
    // The first of our subprotocols the client offers. Extensions (permessage-deflate) are
    // declined by not answering them.
    const std::string_view offered = h.header("Sec-WebSocket-Protocol");
    for (auto& p : o.subprotocols)
        if (detail::header_has_token(offered, p)) {
            c.subprotocol = p;
            break;
        }
    std::string reply =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ";
    reply.append(detail::ws_accept_key(h.header("Sec-WebSocket-Key"))).append("\r\n");
    if (!c.subprotocol.empty()) reply.append("Sec-WebSocket-Protocol: ").append(c.subprotocol).append("\r\n");
    reply.append("\r\n");
    s.send(as_bytes(reply));
    upgraded(s, c, ws_server_framer());
}

void ws_protocol::impl::send_upgrade(session& s, ws_conn& c) {
    auto it = targets.find(s.origin());
    // A connect that completed at once reaches here before connect() filed its target.
    const detail::ws_target& t = it != targets.end() ? it->second.second : connecting;
    const ws_options& o = self.opts_;
    c.key = detail::ws_new_key();
    std::string req = "GET ";
    req.append(t.path).append(" HTTP/1.1\r\nHost: ").append(t.host).append("\r\n");
    req.append("Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ");
    req.append(c.key).append("\r\n");
    if (!o.origin.empty()) req.append("Origin: ").append(o.origin).append("\r\n");
    if (!o.subprotocols.empty()) {
        req.append("Sec-WebSocket-Protocol: ");
        for (std::size_t i = 0; i < o.subprotocols.size(); ++i) req.append(i ? ", " : "").append(o.subprotocols[i]);
        req.append("\r\n");
    }
    req.append("\r\n");
    s.send(as_bytes(req));
}

void ws_protocol::impl::on_response(session& s, ws_conn& c, std::span<const std::byte> bytes) {
    detail::http_head h;
    std::error_code ec;
    if (!detail::parse_http_head(as_text(bytes), h) || h.b != "101" || !is_upgrade(h)) {
        ec = ws_errc::handshake_refused;
    } else if (h.header("Sec-WebSocket-Accept") != detail::ws_accept_key(c.key)) {
        ec = ws_errc::bad_accept;
    } else {
        // The server may pick one of ours, or none; anything else is a refusal.
        const std::string_view picked = h.header("Sec-WebSocket-Protocol");
        bool ok = picked.empty();
        for (auto& p : self.opts_.subprotocols) ok = ok || picked == p;
        if (!ok || !h.header("Sec-WebSocket-Extensions").empty()) ec = ws_errc::handshake_refused;
        c.subprotocol = std::string(picked);
    }
    if (ec) {
        bump(s.group().counters().ws_handshakes_refused);
        c.failure_told = true;
        self.app_.on_connect_failed(*s.origin(), ec);
        s.abort(ec);
        return;
    }
    upgraded(s, c, ws_client_framer());
}

connection_ptr ws_protocol::connect(session_group& g, std::string_view url, const connect_options& opts) {
    const bool secure = url.starts_with("wss://");
    if (!secure && !url.starts_with("ws://"))
        throw std::invalid_argument("ws url '" + std::string(url) + "': not ws:// or wss://");
    if (secure && !opts.tls)
        throw std::invalid_argument("ws url '" + std::string(url) + "': wss:// needs connect_options::tls");
    std::string_view rest = url.substr(secure ? 6 : 5);
    const auto slash = rest.find('/');
    const std::string_view authority = rest.substr(0, slash);
    detail::ws_target t{std::string(authority),
                        slash == std::string_view::npos ? "/" : std::string(rest.substr(slash))};
    const endpoint ep = endpoint::parse("tcp://" + std::string(authority));
    for (auto it = impl_->targets.begin(); it != impl_->targets.end();) {
        if (it->second.first->state() == connection::status::closed)
            it = impl_->targets.erase(it);
        else
            ++it;
    }
    impl_->connecting = t;
    connection_ptr c = g.connect(ep, opts);
    impl_->targets[c.get()] = {c, std::move(t)};
    return c;
}

}  // namespace strix
