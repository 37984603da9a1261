#include "apps/chat/cluster/redis_link.hpp"

#include "apps/chat/cluster/redis_errc.hpp"
#include "apps/chat/cluster/resp_framer.hpp"

#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>
#include <strix/net/net_errc.hpp>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string>

namespace strix::chat {

endpoint parse_redis_url(std::string_view url) {
    constexpr std::string_view redis = "redis://";
    constexpr std::string_view unix_scheme = "unix://";
    if (url.starts_with(unix_scheme)) return endpoint::unix_socket(std::string(url.substr(unix_scheme.size())));
    if (!url.starts_with(redis)) {
        throw std::invalid_argument("Redis URL '" + std::string(url) +
                                    "' must look like redis://host:port or unix:///path");
    }
    std::string_view rest = url.substr(redis.size());
    if (const auto slash = rest.find('/'); slash != std::string_view::npos) rest = rest.substr(0, slash);
    std::string_view host = rest;
    std::uint16_t port = 6379;
    if (const auto colon = rest.rfind(':');
        colon != std::string_view::npos && rest.find(']') == std::string_view::npos) {
        host = rest.substr(0, colon);
        const auto p = rest.substr(colon + 1);
        unsigned v = 0;
        const auto r = std::from_chars(p.data(), p.data() + p.size(), v);
        if (r.ec != std::errc{} || r.ptr != p.data() + p.size() || v == 0 || v > 65535) {
            throw std::invalid_argument("Redis URL '" + std::string(url) + "' has a bad port '" + std::string(p) + "'");
        }
        port = static_cast<std::uint16_t>(v);
    }
    if (host.empty()) throw std::invalid_argument("Redis URL '" + std::string(url) + "' names no host");
    if (host == "localhost") host = "127.0.0.1";
    return endpoint::tcp(std::string(host), port);
}

namespace detail {
namespace {

session_group_config link_config(const redis_options& o) {
    session_group_config c;
    c.framing = &resp_framer();
    c.limits.max_frame = o.max_reply;
    c.limits.recv_buffer = 64 * 1024;
    // Pipelined commands queue here while Redis is slow; max_pending bounds them, not the
    // session's slow-consumer limit meant for chat clients.
    c.limits.high_water = 16u << 20;
    c.limits.low_water = 4u << 20;
    c.limits.max_queued = 256u << 20;
    c.limits.stall_timeout = o.command_timeout * 2;
    c.limits.close_linger = std::chrono::milliseconds(100);
    return c;
}

}  // namespace

redis_link::redis_link(shard& sh, redis_options opts)
    : opts_(std::move(opts)), group_(sh, *this, link_config(opts_)), timer_([this] { tick(); }) {
    // Deadlines are checked a few times per command timeout (and at least every 100 ms).
    const auto period =
        std::clamp(opts_.command_timeout / 4, std::chrono::milliseconds(1), std::chrono::milliseconds(100));
    period_ticks_ = std::max<std::uint64_t>(1, sh.ticks_for(period));
}

redis_link::~redis_link() {
    stopped_ = true;
    if (timer_.armed()) owner().timers().cancel(timer_);
}

void redis_link::start() {
    connect_options co;
    co.timeout = opts_.connect_timeout;
    co.reconnect = true;
    co.reconnect_initial = opts_.reconnect_initial;
    co.reconnect_max = opts_.reconnect_max;
    co.keepalive = tcp_keepalive{1, 10, 5, 3};
    conn_ = group_.connect(opts_.target, co);
    owner().timers().schedule(timer_, period_ticks_);
}

void redis_link::stop() {
    if (stopped_) return;
    stopped_ = true;
    if (timer_.armed()) owner().timers().cancel(timer_);
    if (conn_) conn_->close();
    group_.abort_all(redis_errc::closed);  // on_close -> on_down while the owner is still whole
    conn_.reset();
}

void redis_link::send(std::string_view bytes) {
    if (up_ != nullptr) up_->send(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

void redis_link::reset(std::error_code reason) {
    if (up_ != nullptr) up_->abort(reason);
}

std::uint64_t redis_link::deadline_in(std::chrono::milliseconds d) const noexcept {
    return owner().now_tick() + std::max<std::uint64_t>(1, owner().ticks_for(d));
}

std::uint64_t redis_link::now() const noexcept { return owner().now_tick(); }

void redis_link::on_open(session& s) {
    if (stopped_) {
        s.abort(redis_errc::closed);
        return;
    }
    up_ = &s;
    ++connects_;
    if (connects_ > 1) log(log_level::info, "Redis at {} reachable again", opts_.target.to_string());
    on_up();
}

void redis_link::on_frame(session& s, std::span<const std::byte> frame) {
    if (const auto ec = reader_.parse(frame, reply_)) {
        log_limited(log_level::warn, "Redis at {}: unreadable reply ({}); reconnecting", opts_.target.to_string(),
                    reader_.last_error());
        s.abort(ec);
        return;
    }
    on_reply(reply_);
}

void redis_link::on_protocol_error(session&, std::error_code ec) {
    log_limited(log_level::warn, "Redis at {}: {}; reconnecting", opts_.target.to_string(), ec);
}

void redis_link::on_close(session& s, std::error_code ec) {
    if (up_ != &s) return;
    up_ = nullptr;
    last_error_ = ec;
    if (!stopped_) log_limited(log_level::info, "Redis at {} lost: {} (reconnecting)", opts_.target.to_string(), ec);
    on_down(ec);
}

void redis_link::on_connect_failed(connection&, std::error_code ec) {
    ++failures_;
    last_error_ = ec;
    // Said once when Redis cannot be reached (at start or after a loss), then every 30th try
    // (about every 30 s at the 1 s backoff cap): the node keeps serving and keeps retrying.
    if (failures_ == 1 || failures_ % 30 == 0)
        log_limited(log_level::error,
                    "Redis at {} unreachable: {}; retrying (attempt {}; is redis-server running there?)",
                    opts_.target.to_string(), ec, failures_);
    on_attempt_failed(ec);
}

void redis_link::tick() {
    if (stopped_) return;
    owner().timers().schedule(timer_, period_ticks_);
    on_tick();
}

}  // namespace detail
}  // namespace strix::chat
