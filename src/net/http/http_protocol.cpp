#include "http_connection.hpp"

#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>
#include <strix/net/framer.hpp>
#include <strix/net/server.hpp>
#include <strix/net/session_group.hpp>

#include <exception>

namespace strix::http {
namespace {

using detail::connection_state;
using detail::timer_phase;

std::span<const std::byte> as_bytes(std::string_view s) noexcept {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// Status codes whose responses carry no body and no Content-Length (RFC 9110 8.6).
bool bodiless(int status) noexcept { return status < 200 || status == 204 || status == 304; }

// A header an application built from outside data must not split the response.
bool header_safe(std::string_view s) noexcept { return s.find_first_of("\r\n") == std::string_view::npos; }

}  // namespace

void options::apply(server_config& cfg) const {
    cfg.framing = &raw_framer();
    session_group_config g;
    g.limits = cfg.limits;
    apply(g);
    cfg.limits = g.limits;
}

void options::apply(session_group_config& cfg) const {
    cfg.framing = &raw_framer();
    cfg.limits.max_frame = read_size;
    cfg.limits.recv_buffer = std::max<std::size_t>(cfg.limits.recv_buffer, read_size);
    // The parser keeps the request's state, so the session's own deadlines do not apply: the
    // raw framer never leaves a frame incomplete, and nothing calls handshake_done() late.
    cfg.limits.frame_timeout = std::chrono::milliseconds(0);
    cfg.limits.handshake_timeout = std::chrono::milliseconds(0);
    cfg.limits.idle_timeout = std::chrono::milliseconds(0);
}

protocol::protocol(handler_fn handler, options opts) : handler_(std::move(handler)), opts_(std::move(opts)) {}

protocol::~protocol() = default;

void protocol::on_open(session& s) {
    s.handshake_done();
    auto c = std::make_shared<connection_state>(*this, s, detail::parser_limits{opts_.max_head, opts_.max_body});
    s.emplace_state<std::shared_ptr<connection_state>>(c);
    update_timer(s, *c);
}

void protocol::on_frame(session& s, std::span<const std::byte> bytes) {
    auto* held = s.state<std::shared_ptr<connection_state>>();
    if (!held) return;
    const std::shared_ptr<connection_state> c = *held;  // kept alive even if the handler closes s
    if (c->done) return;
    const std::span<const char> data(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (!c->pending.empty()) {
        // Reading was suspended with bytes left over; anything more waits behind them.
        c->pending.append(data.data(), data.size());
        return;
    }
    parse(s, *c, data);
}

void protocol::on_close(session& s, std::error_code) {
    if (auto* held = s.state<std::shared_ptr<connection_state>>()) {
        connection_state& c = **held;
        c.closed = true;
        c.done = true;
        s.owner().timers().cancel(c.timer);
        c.slots.clear();
    }
}

// Parses until the data is used up, the connection owes max_pipelined answers (the rest waits in
// `pending` and reading stops), or a request ends the connection.
void protocol::parse(session& s, connection_state& c, std::span<const char> data) {
    c.parsing = true;
    std::size_t off = 0;
    while (off < data.size() && !c.done && s.is_open()) {
        if (c.slots.size() >= opts_.max_pipelined) {
            c.pending.assign(data.data() + off, data.size() - off);
            if (!c.waiting) {
                c.waiting = true;
                bump(stats_.read_waits);
                s.suspend_reading(true);
            }
            break;
        }
        const detail::parse_result r = c.parser.feed(data.subspan(off));
        off += r.used;
        if (r.event == detail::parse_event::head) {
            on_head(s, c);
        } else if (r.event == detail::parse_event::message) {
            dispatch(s, c);
        } else if (r.event == detail::parse_event::error) {
            const int status = c.parser.error_status();
            bump(status == 413 || status == 414 || status == 431 ? stats_.too_large : stats_.bad_requests);
            fail(s, c, status, c.parser.error_reason());
            break;
        } else if (r.used == 0) {
            break;
        }
    }
    c.parsing = false;
    if (!c.closed) update_timer(s, c);
}

void protocol::on_head(session& s, connection_state& c) {
    // The interim answer only when it is next in line: before an earlier request's answer it
    // would be taken for that one's.
    if (c.parser.expects_continue() && c.slots.empty() && c.parser.current().version_minor >= 1)
        s.send(as_bytes("HTTP/1.1 100 Continue\r\n\r\n"));
    update_timer(s, c);
}

void protocol::dispatch(session& s, connection_state& c) {
    request req = c.parser.take();
    bump(stats_.requests);
    ++c.dispatched;
    detail::slot sl;
    sl.head_only = req.method == "HEAD";
    sl.close = !req.keep_alive;
    sl.version_minor = req.version_minor;
    c.slots.push_back(std::move(sl));
    const std::uint64_t seq = c.first_seq + c.slots.size() - 1;
    if (!req.keep_alive) {
        // The last request of this connection: what follows it is not read.
        c.done = true;
        s.suspend_reading(true);
    }
    try {
        handler_(req, responder(session_ptr(&s), seq));
    } catch (const std::exception& e) {
        // The responder was destroyed unanswered on the way out: the client has its 500.
        log_limited(log_level::warn, "http {} {}: handler threw: {}", req.method, req.target, e.what());
    }
}

void protocol::fail(session& s, connection_state& c, int status, std::string_view reason) {
    if (c.done && !c.slots.empty() && c.slots.back().close) return;  // already ending
    detail::slot sl;
    sl.close = true;
    sl.done = true;
    sl.bytes = serialize(json_error(status, reason), false, true, 1);
    c.slots.push_back(std::move(sl));
    c.done = true;
    c.pending.clear();
    s.suspend_reading(true);
    flush(s, c);
}

void protocol::complete(session& s, std::uint64_t seq, response r, bool dropped) {
    auto* held = s.state<std::shared_ptr<connection_state>>();
    if (!held || !s.is_open()) return;
    const std::shared_ptr<connection_state> c = *held;
    if (seq < c->first_seq || seq - c->first_seq >= c->slots.size()) return;
    detail::slot& sl = c->slots[seq - c->first_seq];
    if (sl.done) return;
    if (dropped) {
        bump(stats_.unanswered);
        r = json_error(500, "the request was not answered");
    }
    sl.bytes = serialize(r, sl.head_only, sl.close, sl.version_minor);
    sl.done = true;
    flush(s, *c);
}

// Sends the answers at the front of the queue that are ready, in order; a closing one closes.
void protocol::flush(session& s, connection_state& c) {
    while (!c.slots.empty() && c.slots.front().done && !c.closed) {
        detail::slot sl = std::move(c.slots.front());
        c.slots.pop_front();
        ++c.first_seq;
        s.send(as_bytes(sl.bytes));
        if (sl.close) {
            c.done = true;
            s.close();
            return;
        }
    }
    if (c.closed) return;
    if (c.waiting && c.slots.size() < opts_.max_pipelined) resume(s, c);
    if (!c.closed && !c.parsing) update_timer(s, c);
}

// Room for another request: the bytes that waited are parsed, then reading goes on.
void protocol::resume(session& s, connection_state& c) {
    if (c.parsing) return;  // the parse under way sees the room itself
    c.waiting = false;
    const std::string rest = std::move(c.pending);
    c.pending.clear();
    parse(s, c, rest);
    if (!c.waiting && !c.done && !c.closed && s.is_open()) s.suspend_reading(false);
}

void protocol::update_timer(session& s, connection_state& c) {
    timer_phase want = timer_phase::none;
    if (c.done || c.waiting || c.closed) {
        want = timer_phase::none;
    } else if (c.parser.in_head()) {
        want = timer_phase::head;
    } else if (c.parser.in_body()) {
        want = timer_phase::body;
    } else if (c.slots.empty()) {
        want = timer_phase::idle;
    }
    // The same phase of the same request keeps its deadline; a new request's head gets its own.
    if (want == c.timer_for && c.dispatched == c.timer_request) return;
    c.timer_for = want;
    c.timer_request = c.dispatched;
    timing_wheel& wheel = s.owner().timers();
    wheel.cancel(c.timer);
    std::chrono::milliseconds d{0};
    if (want == timer_phase::head) d = opts_.head_timeout;
    if (want == timer_phase::body) d = opts_.body_timeout;
    if (want == timer_phase::idle) d = opts_.keepalive_timeout;
    if (d.count() > 0) wheel.schedule(c.timer, s.owner().ticks_for(d));
}

void protocol::timer_fired(session& s) {
    auto* held = s.state<std::shared_ptr<connection_state>>();
    if (!held || !s.is_open()) return;
    const std::shared_ptr<connection_state> c = *held;
    const timer_phase was = c->timer_for;
    c->timer_for = timer_phase::none;
    if (was == timer_phase::idle) {
        bump(stats_.idle_closed);
        c->done = true;
        s.close();
    } else if (was == timer_phase::head || was == timer_phase::body) {
        bump(stats_.timeouts);
        fail(s, *c, 408,
             was == timer_phase::head ? "request head not complete in time" : "request body not complete in time");
    }
}

std::string protocol::serialize(const response& r, bool head_only, bool close, unsigned version_minor) const {
    const bool no_body = bodiless(r.status);
    std::string out;
    out.reserve(160 + (head_only || no_body ? 0 : r.body.size()));
    out.append("HTTP/1.1 ").append(std::to_string(r.status)).append(" ").append(status_text(r.status)).append("\r\n");
    if (!opts_.server_name.empty()) out.append("Server: ").append(opts_.server_name).append("\r\n");
    if (!no_body) {
        if (!r.content_type.empty() && header_safe(r.content_type))
            out.append("Content-Type: ").append(r.content_type).append("\r\n");
        out.append("Content-Length: ").append(std::to_string(r.body.size())).append("\r\n");
    }
    for (const auto& [k, v] : r.headers)
        if (header_safe(k) && header_safe(v) && !k.empty()) out.append(k).append(": ").append(v).append("\r\n");
    if (close)
        out.append("Connection: close\r\n");
    else if (version_minor == 0)
        out.append("Connection: keep-alive\r\n");
    out.append("\r\n");
    if (!head_only && !no_body) out.append(r.body);
    return out;
}

// --- responder ------------------------------------------------------------------------------------

namespace {
void answer(session_ptr s, std::uint64_t seq, response r, bool dropped) {
    if (!s->is_open()) return;
    auto* held = s->state<std::shared_ptr<connection_state>>();
    if (!held) return;
    (*held)->proto.complete(*s, seq, std::move(r), dropped);
}
}  // namespace

responder& responder::operator=(responder&& o) noexcept {
    if (this != &o) {
        if (sess_) answer(std::move(sess_), seq_, {}, true);
        sess_ = std::move(o.sess_);
        seq_ = o.seq_;
    }
    return *this;
}

responder::~responder() {
    if (sess_) answer(std::move(sess_), seq_, {}, true);
}

void responder::send(response r) {
    if (sess_) answer(std::move(sess_), seq_, std::move(r), false);
}

std::string_view responder::peer() const noexcept {
    return sess_ ? std::string_view(sess_->peer()) : std::string_view();
}

}  // namespace strix::http
