#include "apps/chat/cluster/redis_client.hpp"

#include "apps/chat/cluster/redis_errc.hpp"

#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>

namespace strix::chat {

namespace {
const resp_reply& no_reply() {
    static const resp_reply nil;
    return nil;
}
}  // namespace

redis_client::redis_client(shard& sh, redis_options opts, std::vector<std::vector<std::string>> on_connect)
    : redis_link(sh, std::move(opts)), on_connect_(std::move(on_connect)) {
    start();
}

redis_client::~redis_client() { close(); }

void redis_client::close() {
    if (stopped()) return;
    stop();  // on_down fails what was in flight
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& w : waiting) w.cb(redis_errc::closed, no_reply());
}

void redis_client::fail_later(redis_callback cb, std::error_code ec) {
    owner().post_local([cb = std::move(cb), ec] { cb(ec, no_reply()); });
}

void redis_client::command(std::span<const std::string_view> args, redis_callback cb) {
    if (stopped()) {
        fail_later(std::move(cb), redis_errc::closed);
        return;
    }
    if (in_flight_.size() + waiting_.size() >= options().max_pending) {
        fail_later(std::move(cb), redis_errc::queue_full);
        return;
    }
    const auto deadline = deadline_in(options().command_timeout);
    if (is_up()) {
        out_.clear();
        append_command(out_, args);
        send(out_);
        in_flight_.push_back({std::move(cb), deadline});
        return;
    }
    std::string wire;
    append_command(wire, args);
    waiting_.push_back({std::move(wire), std::move(cb), deadline});
}

void redis_client::on_up() {
    out_.clear();
    const auto deadline = deadline_in(options().command_timeout);
    for (const auto& c : on_connect_) {
        std::vector<std::string_view> args(c.begin(), c.end());
        append_command(out_, args);
        // A failed setup command (a function that does not compile) is a deployment error: say
        // so loudly; the commands that need it fail with Redis's own message.
        in_flight_.push_back({[what = c.empty() ? std::string() : c[0]](std::error_code ec, const resp_reply& r) {
                                  if (ec)
                                      log(log_level::error, "Redis setup command {} failed: {} {}", what, ec, r.str);
                              },
                              deadline});
    }
    while (!waiting_.empty()) {
        auto& w = waiting_.front();
        out_ += w.wire;
        in_flight_.push_back({std::move(w.cb), w.deadline});
        waiting_.pop_front();
    }
    send(out_);
    if (on_connection_) on_connection_(true);
}

void redis_client::on_reply(resp_reply& r) {
    if (in_flight_.empty()) {
        log_limited(log_level::warn, "Redis at {} sent a reply nobody asked for: {}", options().target.to_string(),
                    r.describe());
        reset(redis_errc::protocol_error);
        return;
    }
    auto cb = std::move(in_flight_.front().cb);
    in_flight_.pop_front();
    cb(r.is_error() ? std::error_code(redis_errc::server_error) : std::error_code(), r);
}

void redis_client::on_down(std::error_code reason) {
    auto lost = std::move(in_flight_);
    in_flight_.clear();
    const std::error_code ec = reason ? reason : std::error_code(redis_errc::closed);
    for (auto& p : lost) p.cb(ec, no_reply());
    if (on_connection_ && !stopped()) on_connection_(false);
}

void redis_client::on_tick() {
    const auto t = now();
    if (!in_flight_.empty() && in_flight_.front().deadline <= t) {
        log_limited(log_level::warn, "Redis at {}: no reply in {} ms; reconnecting", options().target.to_string(),
                    options().command_timeout.count());
        reset(redis_errc::timed_out);
    }
    while (!waiting_.empty() && waiting_.front().deadline <= t) {
        auto cb = std::move(waiting_.front().cb);
        waiting_.pop_front();
        cb(redis_errc::not_connected, no_reply());
    }
}

}  // namespace strix::chat
