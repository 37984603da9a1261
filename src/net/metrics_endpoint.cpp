#include <strix/net/metrics_endpoint.hpp>

#include <strix/core/shard.hpp>
#include <strix/net/endpoint.hpp>
#include <strix/net/net_errc.hpp>
#include <strix/net/session.hpp>

#include <cstring>
#include <stdexcept>
#include <string_view>

namespace strix {
namespace {

// The request head ends at its first empty line. Nothing else of HTTP is parsed here: the
// response depends on the request line alone, and every response closes the connection.
class http_head final : public framer {
public:
    frame_cut cut(std::span<const std::byte> bytes, std::size_t max_frame) const noexcept override {
        const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        const std::size_t crlf = text.find("\r\n\r\n");
        const std::size_t lf = text.find("\n\n");
        std::size_t end = std::string_view::npos;
        if (crlf != std::string_view::npos) end = crlf + 4;
        if (lf != std::string_view::npos && (end == std::string_view::npos || lf + 2 < end)) end = lf + 2;
        if (end != std::string_view::npos) return {end, {}};
        // No end yet: a head already as long as the limit can only be longer.
        if (bytes.size() >= max_frame) return {max_frame + 1, {}};
        return {0, {}};
    }
    const char* name() const noexcept override { return "http-head"; }
};

const http_head http_head_instance;

std::string response(std::string_view status, std::string_view type, const std::string& body) {
    std::string out;
    out.reserve(body.size() + 160);
    out.append("HTTP/1.0 ").append(status).append("\r\nContent-Type: ").append(type);
    out.append("\r\nContent-Length: ").append(std::to_string(body.size())).append("\r\nConnection: close\r\n\r\n");
    out.append(body);
    return out;
}

void send_text(session& s, const std::string& text) {
    s.send(std::span(reinterpret_cast<const std::byte*>(text.data()), text.size()));
}

}  // namespace

const framer& http_head_framer() noexcept { return http_head_instance; }

std::string http_response_for(std::string_view head, const std::function<std::string()>& render) {
    if (head.starts_with("GET /metrics ") || head.starts_with("GET /metrics?") || head.starts_with("GET /metrics\r"))
        return response("200 OK", "text/plain; version=0.0.4; charset=utf-8", render());
    if (head.starts_with("GET "))
        return response("404 Not Found", "text/plain; charset=utf-8", "metrics are at /metrics\n");
    return response("400 Bad Request", "text/plain; charset=utf-8", "GET /metrics\n");
}

class metrics_endpoint::handler final : public session_handler {
public:
    explicit handler(renderer r) : render_(std::move(r)) {}

    void on_frame(session& s, std::span<const std::byte> head) override {
        send_text(s, http_response_for(std::string_view(reinterpret_cast<const char*>(head.data()), head.size()),
                                       render_));
        s.close();  // flushes the response (within close_linger), reads nothing more
    }

    void on_protocol_error(session& s, std::error_code ec) override {
        if (ec == net_errc::frame_timeout || ec == net_errc::handshake_timeout)
            send_text(s,
                      response("408 Request Timeout", "text/plain; charset=utf-8", "request not complete in time\n"));
        else if (ec == net_errc::frame_too_large)
            send_text(s, response("431 Request Header Fields Too Large", "text/plain; charset=utf-8",
                                  "request head over 8 KiB\n"));
    }

private:
    renderer render_;
};

metrics_endpoint::metrics_endpoint(shard& sh, std::uint16_t port, renderer render, limits lim)
    : handler_(std::make_unique<handler>(std::move(render))),
      caps_(std::make_unique<admission>(admission_limits{lim.max_connections, 0})) {
    session_group_config cfg;
    cfg.framing = &http_head_framer();
    cfg.admit = caps_.get();
    cfg.limits.max_frame = lim.max_head;
    cfg.limits.recv_buffer = lim.max_head;
    cfg.limits.max_queued = 16 * 1024 * 1024;  // one response per connection; the text is what it is
    cfg.limits.handshake_timeout = lim.request_timeout;  // the head never completes: nothing ever calls handshake_done
    cfg.limits.frame_timeout = lim.request_timeout;
    cfg.limits.close_linger = lim.request_timeout;
    cfg.limits.stall_timeout = lim.request_timeout;
    group_ = std::make_unique<session_group>(sh, *handler_, cfg);
    try {
        port_ = group_->listen(endpoint::tcp("127.0.0.1", port), 64).port;
    } catch (const std::system_error& e) {
        throw std::runtime_error(std::string("cannot listen for metrics: ") + e.what());
    }
}

metrics_endpoint::metrics_endpoint(shard& sh, std::uint16_t port, metrics_registry& r, limits lim)
    : metrics_endpoint(
          sh, port, [&r] { return r.render(); }, lim) {
    const net_counters& c = group_->counters();
    metric_regs_.push_back(r.add_counter("strix_metrics_requests_total",
                                         "requests to the metrics endpoint before this one",
                                         [&c] { return c.frames_in.value(); }));
    metric_regs_.push_back(r.add_counter("strix_metrics_timeouts_total",
                                         "metrics connections closed for an incomplete request",
                                         [&c] { return c.frame_timeouts.value() + c.handshake_timeouts.value(); }));
}

metrics_endpoint::~metrics_endpoint() = default;

}  // namespace strix
