// The socket types' rules (RFC 28-31, libzmq 4.3's behaviour where the RFCs leave room).
//
//   PUSH, DEALER   load-balance sends round-robin over peers below their high-water mark
//   PULL, DEALER   deliver whatever arrives (fair: each connection's reads take turns on the loop)
//   PAIR           one peer; later ones are turned away
//   REQ            [empty, body...] to one peer, then only that peer's reply is accepted
//   REP            one request at a time; the reply goes back with the request's envelope
//   ROUTER         incoming messages get the peer's routing id as their first part; outgoing ones
//                  are routed by it
//   PUB, XPUB      fan out to every peer subscribed to a prefix of the first part; one encoding
//                  shared by all; a peer at its mark misses the message
//   SUB, XSUB      subscriptions go to every publisher; incoming messages are filtered too
// make_pattern builds the class that a type's row of the socket-type table (socket_types.hpp) names.
#include "link/pattern/pattern.hpp"
#include "link/pattern/socket_types.hpp"
#include "link/socket_core.hpp"

#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>

#include <boost/unordered/unordered_flat_map.hpp>

#include <algorithm>
#include <random>

namespace strix::link::detail {
namespace {

// Round-robin over attached pipes, skipping full ones.
class load_balancer {
public:
    void add(pipe* p) { pipes_.push_back(p); }
    void remove(pipe* p) {
        auto it = std::find(pipes_.begin(), pipes_.end(), p);
        if (it == pipes_.end()) return;
        const auto i = static_cast<std::size_t>(it - pipes_.begin());
        pipes_.erase(it);
        if (next_ > i) --next_;
        if (next_ >= pipes_.size()) next_ = 0;
    }
    /// The next pipe with room, or nullptr: then every pipe is watched and the core told.
    pipe* pick(socket_core& core) {
        const std::size_t n = pipes_.size();
        for (std::size_t k = 0; k < n; ++k) {
            pipe* p = pipes_[next_];
            next_ = next_ + 1 == n ? 0 : next_ + 1;
            if (!p->full()) return p;
        }
        for (pipe* p : pipes_) p->watch_writable();
        core.note_would_block();
        if (n) core.event(socket_event::kind::hwm_reached, pipes_.front()->address());
        return nullptr;
    }
    bool empty() const noexcept { return pipes_.empty(); }
    std::size_t size() const noexcept { return pipes_.size(); }
    const std::vector<pipe*>& all() const noexcept { return pipes_; }

private:
    std::vector<pipe*> pipes_;
    std::size_t next_ = 0;
};

// PUSH, DEALER (both ways), PULL.
class balanced final : public pattern {
public:
    balanced(socket_core& c, bool can_send, bool can_receive) : pattern(c), send_(can_send), recv_(can_receive) {}
    void attach(pipe& p) override { lb_.add(&p); }
    void detach(pipe& p) override { lb_.remove(&p); }
    std::error_code send(std::span<const bytes_view> parts, const part* source) override {
        if (!send_) return link_errc::not_supported;
        pipe* p = lb_.pick(core_);
        if (!p) return link_errc::would_block;
        outgoing o(parts, source);
        p->write(o);
        return {};
    }
    void receive(pipe& p, std::span<const bytes_view> parts) override {
        if (recv_) core_.deliver(parts, &p.props);
    }

private:
    load_balancer lb_;
    bool send_, recv_;
};

class pair_pattern final : public pattern {
public:
    using pattern::pattern;
    void attach(pipe& p) override {
        if (peer_) {
            // PAIR talks to one peer; a second one is turned away, as libzmq does.
            p.terminate(link_errc::bad_state);
            return;
        }
        peer_ = &p;
    }
    void detach(pipe& p) override {
        if (peer_ == &p) peer_ = nullptr;
    }
    std::error_code send(std::span<const bytes_view> parts, const part* source) override {
        if (!peer_ || peer_->full()) {
            if (peer_) {
                peer_->watch_writable();
                core_.event(socket_event::kind::hwm_reached, peer_->address());
            }
            core_.note_would_block();
            return link_errc::would_block;
        }
        outgoing o(parts, source);
        peer_->write(o);
        return {};
    }
    void receive(pipe& p, std::span<const bytes_view> parts) override {
        if (&p == peer_) core_.deliver(parts, &p.props);
    }

private:
    pipe* peer_ = nullptr;
};

class req_pattern final : public pattern {
public:
    using pattern::pattern;
    void attach(pipe& p) override { lb_.add(&p); }
    void detach(pipe& p) override {
        lb_.remove(&p);
        // The peer that owed the reply is gone: the request is lost. libzmq's strict REQ would
        // then never send again; strix lets the application send the next request (as
        // ZMQ_REQ_RELAXED does) and says so in a disconnected event.
        if (waiting_ == &p) waiting_ = nullptr;
    }
    std::error_code send(std::span<const bytes_view> parts, const part* source) override {
        if (waiting_) return link_errc::bad_state;
        pipe* p = lb_.pick(core_);
        if (!p) return link_errc::would_block;
        std::vector<bytes_view> framed;
        framed.reserve(parts.size() + 1);
        framed.emplace_back();  // the empty delimiter
        framed.insert(framed.end(), parts.begin(), parts.end());
        std::vector<part> src;
        if (source) {
            src.reserve(parts.size() + 1);
            src.emplace_back();
            src.insert(src.end(), source, source + parts.size());
        }
        outgoing o(framed, source ? src.data() : nullptr);
        p->write(o);
        waiting_ = p;
        return {};
    }
    void receive(pipe& p, std::span<const bytes_view> parts) override {
        if (&p != waiting_ || parts.size() < 2 || !parts[0].empty()) {
            ++core_.stats.dropped_unroutable;  // not the reply we wait for
            return;
        }
        waiting_ = nullptr;
        core_.deliver(parts.subspan(1), &p.props);
    }

private:
    load_balancer lb_;
    pipe* waiting_ = nullptr;
};

class rep_pattern final : public pattern {
public:
    using pattern::pattern;
    void attach(pipe& p) override { pipes_.push_back(&p); }
    void detach(pipe& p) override {
        std::erase(pipes_, &p);
        if (current_ == p.id) current_ = 0;  // its reply will be dropped
        // Requests it sent before it went stay queued and are delivered (their replies dropped),
        // as libzmq's REP reads what a closed peer's pipe still holds: a REQ closed right after
        // its request loses nothing while the REP is busy with another.
    }
    std::error_code send(std::span<const bytes_view> parts, const part* source) override {
        if (!busy_) return link_errc::bad_state;
        busy_ = false;
        pipe* p = find(current_);
        if (p) {
            std::vector<bytes_view> framed;
            framed.reserve(envelope_.size() + parts.size());
            for (auto& e : envelope_) framed.push_back(e.bytes());
            framed.insert(framed.end(), parts.begin(), parts.end());
            std::vector<part> src;
            if (source) {
                src = envelope_;
                src.insert(src.end(), source, source + parts.size());
            }
            outgoing o(framed, source ? src.data() : nullptr);
            p->write(o);  // a reply is never refused for the mark: it is one message owed
        } else {
            ++core_.stats.dropped_unroutable;
        }
        if (!queue_.empty()) {
            // The next request waits for the loop rather than recursing into the handler.
            core_.owner.post_local([this, alive = alive_] {
                if (*alive) next();
            });
        }
        return {};
    }
    void receive(pipe& p, std::span<const bytes_view> parts) override {
        std::size_t d = 0;
        while (d < parts.size() && !parts[d].empty()) ++d;
        if (d == parts.size()) {
            ++core_.stats.dropped_unroutable;  // no envelope delimiter: not a request
            return;
        }
        if (busy_ || !queue_.empty()) {
            if (core_.opts.rcvhwm && queue_.size() >= core_.opts.rcvhwm) {
                ++core_.stats.dropped_hwm;
                return;
            }
            request r;
            r.pipe_id = p.id;
            for (auto b : parts) r.parts.add(b);
            r.parts.set_properties(p.props);
            r.delimiter = d;
            queue_.push_back(std::move(r));
            return;
        }
        start(p.id, parts, d, &p.props);
    }
    ~rep_pattern() override { *alive_ = false; }

private:
    struct request {
        std::uint64_t pipe_id = 0;
        message parts;
        std::size_t delimiter = 0;
    };
    pipe* find(std::uint64_t id) const {
        for (pipe* p : pipes_)
            if (p->id == id) return p;
        return nullptr;
    }
    void start(std::uint64_t pipe_id, std::span<const bytes_view> parts, std::size_t d,
               const message_properties_ptr* props) {
        busy_ = true;
        current_ = pipe_id;
        envelope_.clear();
        for (std::size_t i = 0; i <= d; ++i) envelope_.push_back(part::copy(parts[i]));
        core_.deliver(parts.subspan(d + 1), props);
    }
    void next() {
        if (busy_ || queue_.empty()) return;
        request r = std::move(queue_.front());
        queue_.pop_front();
        std::vector<bytes_view> v;
        for (auto& x : r.parts) v.push_back(x.bytes());
        start(r.pipe_id, v, r.delimiter, &r.parts.properties());
    }

    std::vector<pipe*> pipes_;
    std::deque<request> queue_;
    std::vector<part> envelope_;
    std::uint64_t current_ = 0;
    bool busy_ = false;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

class router_pattern final : public pattern {
public:
    explicit router_pattern(socket_core& c) : pattern(c), next_id_(std::random_device{}()) {}
    void attach(pipe& p) override {
        std::string id = p.peer_identity;
        if (id.empty() || by_id_.count(id)) {
            // libzmq's form: a zero byte, then a 32-bit counter.
            id.assign(5, '\0');
            const std::uint32_t n = next_id_++;
            for (int i = 0; i < 4; ++i)
                id[static_cast<std::size_t>(1 + i)] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
        }
        p.routing_id = id;
        by_id_[id] = &p;
    }
    void detach(pipe& p) override {
        auto it = by_id_.find(p.routing_id);
        if (it != by_id_.end() && it->second == &p) by_id_.erase(it);
    }
    std::error_code send(std::span<const bytes_view> parts, const part* source) override {
        if (parts.empty()) return {};
        auto it = by_id_.find(std::string(as_text(parts[0])));
        if (it == by_id_.end()) {
            if (core_.opts.router_mandatory) return link_errc::no_peer;
            ++core_.stats.dropped_unroutable;
            return {};
        }
        pipe* p = it->second;
        if (p->full()) {
            core_.event(socket_event::kind::hwm_reached, p->address());
            if (core_.opts.router_mandatory) {
                p->watch_writable();
                core_.note_would_block();
                return link_errc::would_block;
            }
            ++core_.stats.dropped_hwm;
            return {};
        }
        if (parts.size() == 1) return {};  // an id with no body: nothing to send
        outgoing o(parts.subspan(1), source ? source + 1 : nullptr);
        p->write(o);
        return {};
    }
    void receive(pipe& p, std::span<const bytes_view> parts) override {
        std::vector<bytes_view> v;
        v.reserve(parts.size() + 1);
        v.push_back(as_bytes(p.routing_id));
        v.insert(v.end(), parts.begin(), parts.end());
        core_.deliver(v, &p.props);
    }

private:
    boost::unordered_flat_map<std::string, pipe*> by_id_;
    std::uint32_t next_id_;
};

class pub_pattern final : public pattern {
public:
    pub_pattern(socket_core& c, bool xpub) : pattern(c), xpub_(xpub) {}
    void attach(pipe& p) override { pipes_.push_back(&p); }
    void detach(pipe& p) override {
        std::erase(pipes_, &p);
        if (last_ == &p) last_ = nullptr;
        trie_.remove_all(&p, [&](bytes_view topic, bool gone) {
            if (xpub_ && gone) notify(false, topic, p);
        });
        if (p.topics) --subscribers_;
        p.topics = 0;
    }
    std::error_code send(std::span<const bytes_view> parts, const part* source) override {
        if (parts.empty()) return {};
        const std::uint64_t gen = ++gen_;
        targets_.clear();
        trie_.match(parts[0], [&](pipe* p) {
            if (p->mark == gen) return;
            p->mark = gen;
            targets_.push_back(p);
        });
        if (targets_.empty()) return {};
        outgoing o(parts, source);
        // One encoding referenced by every peer, unless the message is small: then each peer's
        // queue takes a copy, which coalesces with its neighbours into one iovec per chunk
        // instead of one per message (sendmsg takes 64).
        o.shared = targets_.size() > 1 && o.bytes() >= shared_min_bytes;
        for (pipe* p : targets_) {
            if (p->full()) {
                ++core_.stats.dropped_hwm;
                core_.event(socket_event::kind::hwm_reached, p->address());
                continue;
            }
            p->write(o);
        }
        return {};
    }
    void receive(pipe& p, std::span<const bytes_view> parts) override {
        // A subscription in the ZMTP 3.0 form: one part, first byte 1 (subscribe) or 0 (cancel).
        if (parts.size() == 1 && !parts[0].empty() && (parts[0][0] == std::byte{1} || parts[0][0] == std::byte{0})) {
            subscription(p, parts[0][0] == std::byte{1}, parts[0].subspan(1));
            return;
        }
        if (xpub_) core_.deliver(parts, &p.props);  // XSUB peers may send other messages upstream
    }
    void subscription(pipe& p, bool on, bytes_view topic) override {
        if (xpub_ && core_.opts.xpub_manual) {
            // The application decides: it hears every (un)subscription and applies it with
            // subscribe()/unsubscribe(), which act for the peer that sent the last one.
            last_ = &p;
            notify(on, topic, p);
            return;
        }
        apply(p, on, topic);
    }
    std::error_code subscribe(bool on, bytes_view topic) override {
        if (!xpub_ || !core_.opts.xpub_manual) return link_errc::not_supported;
        if (last_) apply(*last_, on, topic);
        return {};
    }
    std::size_t subscribers() const noexcept override { return subscribers_; }

private:
    static constexpr std::size_t shared_min_bytes = 256;

    void apply(pipe& p, bool on, bytes_view topic) {
        const auto c = on ? trie_.add(topic, &p) : trie_.remove(topic, &p);
        if (c.pipe_first) {
            if (on && p.topics++ == 0) ++subscribers_;
            if (!on && --p.topics == 0) --subscribers_;
            core_.event(on ? socket_event::kind::subscribed : socket_event::kind::unsubscribed, p.address(), {},
                        std::string(as_text(topic)));
        }
        if (xpub_ && !core_.opts.xpub_manual && (core_.opts.xpub_verbose ? (on || c.topic_first) : c.topic_first))
            notify(on, topic, p);
    }

    // A (un)subscription for the application, with the properties of the peer that sent it.
    void notify(bool on, bytes_view topic, const pipe& from) {
        std::vector<std::byte> m;
        m.reserve(topic.size() + 1);
        m.push_back(on ? std::byte{1} : std::byte{0});
        m.insert(m.end(), topic.begin(), topic.end());
        bytes_view v(m);
        core_.deliver(std::span(&v, 1), &from.props);
    }

    bool xpub_;
    std::vector<pipe*> pipes_;
    std::vector<pipe*> targets_;
    topic_trie trie_{false};
    std::uint64_t gen_ = 0;
    std::size_t subscribers_ = 0;
    pipe* last_ = nullptr;  // xpub_manual: the peer whose subscription came last
};

class sub_pattern final : public pattern {
public:
    sub_pattern(socket_core& c, bool xsub) : pattern(c), xsub_(xsub) {}
    void attach(pipe& p) override {
        pipes_.push_back(&p);
        trie_.for_each_topic([&](bytes_view topic, std::uint32_t) { p.send_subscription(true, topic); });
    }
    void detach(pipe& p) override { std::erase(pipes_, &p); }
    std::error_code send(std::span<const bytes_view> parts, const part* source) override {
        if (!xsub_) return link_errc::not_supported;
        if (parts.size() == 1 && !parts[0].empty() && (parts[0][0] == std::byte{1} || parts[0][0] == std::byte{0}))
            return subscribe(parts[0][0] == std::byte{1}, parts[0].subspan(1));
        // Other messages go upstream to every publisher (XPUB hands them to its application).
        outgoing o(parts, source);
        o.shared = pipes_.size() > 1;
        for (pipe* p : pipes_)
            if (!p->full()) p->write(o);
        return {};
    }
    void receive(pipe& p, std::span<const bytes_view> parts) override {
        if (parts.empty() || !trie_.matches(parts[0])) return;
        core_.deliver(parts, &p.props);
    }
    std::error_code subscribe(bool on, bytes_view topic) override {
        // Counting happens here, as in libzmq: every subscribe goes upstream (an XPUB_VERBOSE
        // publisher sees each), a cancel only when the topic's last subscription goes.
        if (on) {
            trie_.add(topic, nullptr);
            for (pipe* p : pipes_) p->send_subscription(true, topic);
            return {};
        }
        if (trie_.remove(topic, nullptr).topic_first)
            for (pipe* p : pipes_) p->send_subscription(false, topic);
        return {};
    }

private:
    bool xsub_;
    std::vector<pipe*> pipes_;
    topic_trie trie_{true};
};

}  // namespace

std::unique_ptr<pattern> make_pattern(socket_core& c, socket_type t) {
    const socket_type_info* row = find_type_info(t);
    if (!row) return nullptr;
    // The row's send rule picks the class; its receive rule sets the variant (PUSH/PULL/DEALER,
    // PUB/XPUB, SUB/XSUB).
    switch (row->send) {
        case send_rule::none:
            if (row->receive == receive_rule::filtered) return std::make_unique<sub_pattern>(c, false);
            return std::make_unique<balanced>(c, false, row->receive == receive_rule::fair_queue);
        case send_rule::round_robin:
            return std::make_unique<balanced>(c, true, row->receive == receive_rule::fair_queue);
        case send_rule::one_peer: return std::make_unique<pair_pattern>(c);
        case send_rule::request: return std::make_unique<req_pattern>(c);
        case send_rule::reply: return std::make_unique<rep_pattern>(c);
        case send_rule::by_identity: return std::make_unique<router_pattern>(c);
        case send_rule::fan_out:
            return std::make_unique<pub_pattern>(c, row->receive == receive_rule::subscriptions_and_messages);
        case send_rule::upstream: return std::make_unique<sub_pattern>(c, true);
    }
    return nullptr;
}

}  // namespace strix::link::detail
