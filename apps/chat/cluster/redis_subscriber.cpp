#include "apps/chat/cluster/redis_subscriber.hpp"

#include "apps/chat/cluster/redis_errc.hpp"

#include <strix/core/log.hpp>

#include <vector>

namespace strix::chat {

namespace {
// Channels per SUBSCRIBE after a reconnect: one command per room would be thousands of tiny
// commands; one for all of them could be a reply burst the framer has to hold at once.
constexpr std::size_t subscribe_batch = 256;
}  // namespace

redis_subscriber::redis_subscriber(shard& sh, redis_options opts, events ev)
    : redis_link(sh, std::move(opts)), ev_(std::move(ev)) {
    start();
}

redis_subscriber::~redis_subscriber() { close(); }

void redis_subscriber::close() { stop(); }

void redis_subscriber::expect(std::size_t n) {
    const auto d = deadline_in(options().command_timeout);
    for (std::size_t i = 0; i < n; ++i) acks_.push_back(d);
}

void redis_subscriber::subscribe(const std::string& channel) {
    if (stopped() || !wanted_.emplace(channel, false).second) return;
    if (!is_up()) return;  // on_up subscribes it
    out_.clear();
    append_command(out_, {"SUBSCRIBE", channel});
    send(out_);
    ++changing_[channel];
    expect(1);
}

void redis_subscriber::unsubscribe(const std::string& channel) {
    if (wanted_.erase(channel) == 0 || !is_up()) return;
    out_.clear();
    append_command(out_, {"UNSUBSCRIBE", channel});
    send(out_);
    ++changing_[channel];
    expect(1);
}

bool redis_subscriber::is_subscribed(const std::string& channel) const {
    const auto it = wanted_.find(channel);
    return it != wanted_.end() && it->second;
}

void redis_subscriber::on_up() {
    next_ping_ = deadline_in(options().ping_interval);
    out_.clear();
    std::vector<std::string_view> args;
    args.reserve(subscribe_batch + 1);
    for (auto& [ch, confirmed] : wanted_) {
        confirmed = false;
        ++changing_[ch];
        if (args.empty()) args.push_back("SUBSCRIBE");
        args.push_back(ch);
        if (args.size() == subscribe_batch + 1) {
            append_command(out_, args);
            args.clear();
        }
    }
    if (!args.empty()) append_command(out_, args);
    expect(wanted_.size());
    if (!out_.empty()) send(out_);
    if (ev_.connection) ev_.connection(true);
}

void redis_subscriber::protocol_error(const resp_reply& r) {
    log_limited(log_level::warn, "Redis pub/sub at {}: unexpected reply {}; reconnecting", options().target.to_string(),
                r.describe());
    reset(redis_errc::protocol_error);
}

void redis_subscriber::on_reply(resp_reply& r) {
    // Outside subscribed mode (no channel left) a PING is answered +PONG.
    if (r.type == resp_reply::kind::status && r.str == "PONG") {
        if (acks_.empty()) return protocol_error(r);
        acks_.pop_front();
        return;
    }
    if (r.type != resp_reply::kind::array || r.elements.size() < 2 || r.elements[0].type != resp_reply::kind::string) {
        return protocol_error(r);
    }
    const std::string& kind = r.elements[0].str;
    if (kind == "message" && r.elements.size() == 3) {
        const std::string& ch = r.elements[1].str;
        // A message already on its way when we unsubscribed: nobody wants it.
        if (ev_.message && wanted_.contains(ch)) ev_.message(ch, r.elements[2].str);
        return;
    }
    if (acks_.empty()) return protocol_error(r);
    if (kind == "pong") {
        acks_.pop_front();
        return;
    }
    if (kind == "subscribe" || kind == "unsubscribe") {
        acks_.pop_front();
        const std::string& ch = r.elements[1].str;
        if (const auto c = changing_.find(ch); c != changing_.end() && --c->second == 0) {
            changing_.erase(c);
            const auto it = wanted_.find(ch);
            if (kind == "subscribe" && it != wanted_.end() && !it->second) {
                it->second = true;
                if (ev_.subscribed) ev_.subscribed(ch);
            }
        }
        return;
    }
    protocol_error(r);
}

void redis_subscriber::on_down(std::error_code) {
    acks_.clear();
    changing_.clear();
    for (auto& [ch, confirmed] : wanted_) confirmed = false;
    if (ev_.connection && !stopped()) ev_.connection(false);
}

void redis_subscriber::on_tick() {
    if (!is_up()) return;
    const auto t = now();
    if (!acks_.empty() && acks_.front() <= t) {
        log_limited(log_level::warn, "Redis pub/sub at {}: no answer in {} ms; reconnecting",
                    options().target.to_string(), options().command_timeout.count());
        reset(redis_errc::timed_out);
        return;
    }
    if (t >= next_ping_) {
        next_ping_ = deadline_in(options().ping_interval);
        out_.clear();
        append_command(out_, {"PING"});
        send(out_);
        expect(1);
    }
}

}  // namespace strix::chat
