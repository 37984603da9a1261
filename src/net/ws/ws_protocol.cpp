// ws_protocol: the WebSocket session_handler (strix/net/ws_protocol.hpp). The upgrade lives in
// ws_upgrade.cpp; this file has the per-session state, the frames and the close handshake.
#include "net/ws/ws_protocol_impl.hpp"

#include <strix/core/shard.hpp>
#include <strix/net/net_errc.hpp>
#include <strix/net/server.hpp>

#include "net/ws/ws_frame.hpp"

#include <algorithm>
#include <cstring>

namespace strix {

using detail::ws_conn;

void ws_options::apply(session_group_config& cfg) const {
    cfg.framing = &ws_http_framer();
    // One ring holds a whole frame (payload, plus a header of at most 14 bytes) or a whole head.
    const std::uint64_t frame = static_cast<std::uint64_t>(max_message) + 14;
    cfg.limits.max_frame =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(frame, max_handshake), UINT32_MAX));
    cfg.limits.recv_buffer = std::max<std::size_t>(cfg.limits.recv_buffer, cfg.limits.max_frame);
    // An echo (or a reply as large as the request) must fit in the output a session may queue.
    cfg.limits.max_queued = std::max<std::size_t>(cfg.limits.max_queued, 2 * std::size_t{cfg.limits.max_frame});
    cfg.limits.handshake_timeout = handshake_timeout;
}

void ws_options::apply(server_config& cfg) const {
    session_group_config g;
    g.limits = cfg.limits;
    apply(g);
    cfg.framing = g.framing;
    cfg.limits = g.limits;
}

ws_protocol::ws_protocol(ws_handler& app, ws_options opts)
    : app_(app), opts_(std::move(opts)), impl_(std::make_unique<impl>(*this)) {}

ws_protocol::ws_protocol(std::unique_ptr<ws_handler> app, ws_options opts)
    : owned_(std::move(app)), app_(*owned_), opts_(std::move(opts)), impl_(std::make_unique<impl>(*this)) {}

ws_protocol::~ws_protocol() = default;

std::string_view ws_protocol::subprotocol(const session& s) const noexcept {
    auto it = impl_->conns.find(&s);
    return it == impl_->conns.end() ? std::string_view{} : std::string_view(it->second.subprotocol);
}

void ws_protocol::on_open(session& s) {
    ws_conn& c = impl_->conns[&s];
    // The HTTP phase reads one head of at most max_handshake; frames get the larger limit at
    // the upgrade.
    s.set_max_frame(opts_.max_handshake);
    if (s.origin()) impl_->send_upgrade(s, c);
}

void ws_protocol::on_frame(session& s, std::span<const std::byte> frame) {
    // A read brings a session's frames in runs: the last lookup is kept (map nodes do not move;
    // on_close forgets it before the erase).
    ws_conn* found = impl_->last_session == &s ? impl_->last_conn : nullptr;
    if (!found) {
        auto it = impl_->conns.find(&s);
        if (it == impl_->conns.end()) return;
        found = &it->second;
        impl_->last_session = &s;
        impl_->last_conn = found;
    }
    ws_conn& c = *found;
    if (!c.open) {
        if (s.origin())
            impl_->on_response(s, c, frame);
        else
            impl_->on_request(s, c, frame);
        return;
    }
    impl_->on_ws_frame(s, c, frame);
}

void ws_protocol::on_protocol_error(session& s, std::error_code ec) {
    auto it = impl_->conns.find(&s);
    if (it == impl_->conns.end()) return;
    ws_conn& c = it->second;
    auto& counters = s.group().counters();
    if (!c.open) {
        // The HTTP phase: a head too long gets 431; a timed-out one just the close (the session
        // counted it).
        if (ec == net_errc::frame_too_large) bump(counters.ws_handshakes_refused);
        if (s.origin()) {
            c.failure_told = true;
            app_.on_connect_failed(*s.origin(), ec);
        } else if (ec == net_errc::frame_too_large) {
            impl_->refuse(s, 431, false);
        }
        return;
    }
    // An open session: the framer refused a header (its ws_errc is the close code), or a
    // deadline passed (policy).
    std::uint16_t code = 1008;
    if (ec.category() == ws_category()) code = static_cast<std::uint16_t>(ec.value());
    if (ec == net_errc::frame_too_large) code = 1009;
    impl_->count_close(counters, code);
    app_.on_protocol_error(s, ec);
    impl_->send_close(s, code, {});
}

void ws_protocol::on_close(session& s, std::error_code ec) {
    auto it = impl_->conns.find(&s);
    if (it == impl_->conns.end()) return;
    const bool was_open = it->second.open;
    const bool told = it->second.failure_told;
    if (impl_->last_session == &s) impl_->last_session = nullptr;
    impl_->conns.erase(it);
    if (was_open) {
        app_.on_close(s, ec);
    } else if (s.origin() && !told) {
        // A client whose upgrade never completed (the server closed first): a failed attempt.
        app_.on_connect_failed(*s.origin(), ec);
    }
}

void ws_protocol::on_drained(session& s) { app_.on_drained(s); }

void ws_protocol::on_connect_failed(connection& c, std::error_code ec) { app_.on_connect_failed(c, ec); }

void ws_protocol::impl::count_close(net_counters& n, std::uint16_t code) noexcept {
    switch (code) {
        case 1002: bump(n.ws_closes_protocol); break;
        case 1007: bump(n.ws_closes_utf8); break;
        case 1008: bump(n.ws_closes_policy); break;
        case 1009: bump(n.ws_closes_too_big); break;
        default: break;
    }
}

// Queues a close frame with code (and no reason) and closes the session after the flush.
void ws_protocol::impl::send_close(session& s, std::uint16_t code, std::string_view reason) {
    std::byte body[125];
    std::size_t n = 0;
    if (code != 0) {
        body[0] = static_cast<std::byte>(code >> 8);
        body[1] = static_cast<std::byte>(code);
        n = 2 + std::min<std::size_t>(reason.size(), 123);
        if (n > 2) std::memcpy(body + 2, reason.data(), n - 2);
    }
    ws_send(s, ws_opcode::close, std::span<const std::byte>(body, n));
}

// The peer broke the protocol: count it, tell the application, send the close frame and close.
void ws_protocol::impl::fail(session& s, ws_conn& c, std::uint16_t code) {
    count_close(s.group().counters(), code);
    c.message.clear();
    const std::error_code ec = ws_close_reason(code);
    self.app_.on_protocol_error(s, ec);
    send_close(s, code, {});
    s.close(ec);
}

void ws_protocol::impl::on_ws_frame(session& s, ws_conn& c, std::span<const std::byte> frame) {
    const detail::ws_header h = detail::ws_read_header(frame);
    // The frame lives in the session's receive ring or the backend's receive buffer (writable
    // memory lent for this call): unmask it in place rather than copy it.
    auto* payload = const_cast<std::byte*>(frame.data()) + h.header_size;
    const auto len = static_cast<std::size_t>(h.length);
    if (h.masked) ws_unmask(payload, len, h.mask);
    const ws_options& o = self.opts_;
    switch (static_cast<ws_opcode>(h.opcode)) {
        case ws_opcode::text:
        case ws_opcode::binary: {
            if (c.in_message) return fail(s, c, 1002);  // a new message inside a fragmented one
            if (len > o.max_message) return fail(s, c, 1009);
            const bool text = h.opcode == static_cast<std::uint8_t>(ws_opcode::text);
            if (h.fin) {
                if (text && !detail::utf8_valid(payload, len)) return fail(s, c, 1007);
                bump(s.group().counters().ws_messages_in);
                self.app_.on_message(s, static_cast<ws_opcode>(h.opcode), std::span<const std::byte>(payload, len));
                return;
            }
            c.in_message = true;
            c.message_op = static_cast<ws_opcode>(h.opcode);
            c.fragments = 1;
            c.utf8.reset();
            if (text && !c.utf8.feed(payload, len)) return fail(s, c, 1007);
            c.message.assign(payload, payload + len);
            return;
        }
        case ws_opcode::continuation: {
            if (!c.in_message) return fail(s, c, 1002);
            if (++c.fragments > o.max_fragments) return fail(s, c, 1009);
            // Checked before the append: the reassembly buffer never grows past max_message.
            if (len > o.max_message - c.message.size()) return fail(s, c, 1009);
            const bool text = c.message_op == ws_opcode::text;
            if (text && !c.utf8.feed(payload, len)) return fail(s, c, 1007);
            c.message.insert(c.message.end(), payload, payload + len);
            if (!h.fin) return;
            if (text && !c.utf8.complete()) return fail(s, c, 1007);
            c.in_message = false;
            bump(s.group().counters().ws_messages_in);
            // Delivered from a local: the application may close or abort the session (and so
            // drop its ws_conn) from on_message.
            std::vector<std::byte> whole = std::move(c.message);
            self.app_.on_message(s, c.message_op, std::span<const std::byte>(whole));
            if (!s.is_open()) return;
            // A large message's buffer is not kept for the session's lifetime.
            if (whole.capacity() <= keep_capacity) {
                whole.clear();
                c.message = std::move(whole);
            }
            return;
        }
        case ws_opcode::ping: {
            if (o.max_pings_per_second && !ping_allowed(s, c)) return fail(s, c, 1008);
            ws_send(s, ws_opcode::pong, std::span<const std::byte>(payload, len));
            return;
        }
        case ws_opcode::pong: return;  // unsolicited pongs are allowed and ignored
        case ws_opcode::close: return on_close_frame(s, c, payload, len);
    }
}

bool ws_protocol::impl::ping_allowed(session& s, ws_conn& c) noexcept {
    shard& sh = s.owner();
    const std::uint64_t now = sh.now_tick();
    const std::uint64_t window = std::max<std::uint64_t>(1, sh.ticks_for(std::chrono::milliseconds(1000)));
    if (now - c.ping_window_start >= window) {
        c.ping_window_start = now;
        c.pings = 0;
    }
    return ++c.pings <= self.opts_.max_pings_per_second;
}

// The peer's close frame: check its code and reason, answer with the same code, and close.
void ws_protocol::impl::on_close_frame(session& s, ws_conn& c, const std::byte* p, std::size_t len) {
    if (len == 1) return fail(s, c, 1002);
    std::uint16_t code = 0;
    if (len >= 2) {
        code = static_cast<std::uint16_t>(static_cast<std::uint16_t>(p[0]) << 8 | static_cast<std::uint16_t>(p[1]));
        if (!ws_close_code_valid(code)) return fail(s, c, 1002);
        if (!detail::utf8_valid(p + 2, len - 2)) return fail(s, c, 1007);
    }
    bump(s.group().counters().ws_closes_normal);
    send_close(s, code, {});
    s.close(code ? ws_close_reason(code) : make_error_code(ws_errc::no_status));
}

}  // namespace strix
