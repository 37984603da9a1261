// zap_client: a server socket's DEALER to the ZAP handler socket (the picture is in zap_client.hpp).
#include "link/security/zap_client.hpp"

#include "link/transport/inproc.hpp"

#include <strix/core/shard.hpp>
#include <strix/link/zmtp.hpp>

#include <charconv>

namespace strix::link::detail {
namespace {

constexpr std::string_view handler_name = "zeromq.zap.01";
constexpr std::string_view handler_address = "inproc://zeromq.zap.01";

bool valid_status(const std::string& s) {
    return s.size() == 3 && s[0] >= '2' && s[0] <= '5' && s[1] == '0' && s[2] == '0';
}

}  // namespace

zap_client::~zap_client() { *alive_ = false; }

std::uint64_t zap_client::ask(const zap_request& r, std::string_view server_id, zap_waiter& w) {
    if (!inproc_bound(sh_.owner(), handler_name)) return 0;
    if (!dealer_) {
        socket_options o;
        o.sndhwm = 0;  // libzmq's ZAP pipe has no high-water mark either
        o.rcvhwm = 0;
        o.linger = std::chrono::milliseconds(0);
        dealer_ = std::make_unique<socket>(sh_, socket_type::dealer, std::move(o));
        dealer_->on_message([this](message_view m) { received(m); });
    }
    // A handler that closed takes its connection along; one bound since gets a new one.
    if (dealer_->peers() == 0) dealer_->connect(handler_address);
    const std::uint64_t id = ++last_id_;
    message m;
    m.add(bytes_view{});  // the envelope's delimiter
    m.add(r.version).add(std::to_string(id)).add(r.domain).add(r.address).add(server_id).add(r.mechanism);
    for (auto& c : r.credentials) m.add(c);
    if (dealer_->send(m)) return 0;  // no connection after all (the handler went meanwhile)
    waiting_.emplace(id, &w);
    return id;
}

// Replies are handed on from the loop, not from inside the DEALER's delivery: a handshake that
// completes may call into the application, which may close the server (and this client).
void zap_client::received(message_view m) {
    std::vector<std::string> reply;
    reply.reserve(m.size());
    for (auto p : m) reply.emplace_back(as_text(p));
    replies_.push_back(std::move(reply));
    if (replies_.size() > 1) return;
    sh_.post_local([this, alive = alive_] {
        if (*alive) dispatch();
    });
}

void zap_client::dispatch() {
    auto replies = std::move(replies_);
    replies_.clear();
    const auto alive = alive_;
    for (auto& r : replies) {
        if (!*alive) return;  // an answer's handshake closed the server
        answer(r);
    }
}

// The handshake a reply is for: the one with its request id; or, for an id this client never
// issued, the oldest one waiting (libzmq, with a pipe per connection, reports a wrong id to the
// connection that asked). An id issued earlier whose handshake ended is a late answer: none.
zap_waiter* zap_client::waiter_for(const std::string& id, std::uint64_t& key) {
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
    const bool issued = ec == std::errc() && end == id.data() + id.size() && n > 0 && n <= last_id_;
    if (issued) {
        const auto it = waiting_.find(n);
        if (it == waiting_.end()) return nullptr;
        key = n;
        return it->second;
    }
    if (waiting_.empty()) return nullptr;
    key = waiting_.begin()->first;
    return waiting_.begin()->second;
}

void zap_client::answer(const std::vector<std::string>& r) {
    std::uint64_t key = 0;
    zap_waiter* w = waiter_for(r.size() > 2 ? r[2] : std::string(), key);
    if (!w) return;
    const bool id_ok = r.size() > 2 && r[2] == std::to_string(key);
    waiting_.erase(key);  // answered, one way or the other
    const char* bad = nullptr;
    if (r.size() != 7)
        bad = "malformed";
    else if (!r[0].empty())
        bad = "unspecified";
    else if (r[1] != "1.0")
        bad = "bad version";
    else if (!id_ok)
        bad = "bad request id";
    else if (!valid_status(r[3]))
        bad = "invalid status code";
    zap_reply rep;
    if (!bad) {
        rep.status_code = r[3];
        rep.status_text = r[4];
        rep.user_id = r[5];
        const bool meta_ok = zmtp::for_each_property(as_bytes(r[6]), [&](std::string_view name, bytes_view value) {
            rep.metadata.emplace_back(std::string(name), std::string(as_text(value)));
        });
        if (!meta_ok) bad = "invalid metadata";
    }
    if (bad)
        w->zap_failed(link_errc::zap_bad_reply, bad);
    else
        w->zap_answered(rep);
}

}  // namespace strix::link::detail
