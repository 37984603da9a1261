#pragma once
// What a socket type does with its peers (patterns.cpp, chosen by the socket-type table in
// socket_types.hpp), and the subscription trie the publish/subscribe patterns share.
//
//   socket_core::send ──> pattern::send ──> pipe::write (one peer, every subscriber, the routed one)
//   pipe (a peer's message) ──> pattern::receive ──> socket_core::deliver ──> on_message

#include "link/pipe.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <system_error>
#include <utility>
#include <vector>

namespace strix::link::detail {

class socket_core;

/// Prefix subscriptions as a trie over topic bytes. Counted (a subscriber's own list: two adds
/// need two removes) or as a set per pipe (a publisher's view: a SUB repeats SUBSCRIBE for every
/// subscribe call and sends one CANCEL when its count reaches zero, as libzmq does).
class topic_trie {
public:
    explicit topic_trie(bool counted) noexcept : counted_(counted) {}
    struct change {
        bool pipe_first = false;  // this pipe gained the topic (or lost it)
        bool topic_first = false;  // the topic went from no subscription to one (or back)
    };
    change add(bytes_view topic, pipe* p);
    /// No-op (all false) when p does not hold the topic.
    change remove(bytes_view topic, pipe* p);
    /// Drops every subscription of p; f(topic, topic_gone) for each topic it held.
    void remove_all(pipe* p, const std::function<void(bytes_view, bool)>& f);
    /// Calls f(pipe*) for every subscription along msg's prefixes (a pipe may come twice).
    template <class F>
    void match(bytes_view msg, F&& f) const {
        std::uint32_t n = 0;
        for (std::size_t i = 0;; ++i) {
            for (auto& s : nodes_[n].subs) f(s.first);
            if (i == msg.size()) return;
            n = child(n, static_cast<std::uint8_t>(msg[i]));
            if (n == 0) return;
        }
    }
    /// True if any subscription is a prefix of msg.
    bool matches(bytes_view msg) const;
    /// Every topic with its total count (for re-sending subscriptions to a new peer).
    void for_each_topic(const std::function<void(bytes_view, std::uint32_t)>& f) const;
    bool empty() const noexcept { return topics_ == 0; }

private:
    struct node {
        std::vector<std::pair<std::uint8_t, std::uint32_t>> kids;  // sorted by byte
        std::vector<std::pair<pipe*, std::uint32_t>> subs;  // count per pipe
        std::uint32_t total = 0;
    };
    std::uint32_t child(std::uint32_t n, std::uint8_t b) const noexcept;
    std::uint32_t child_or_make(std::uint32_t n, std::uint8_t b);
    std::vector<node> nodes_{node{}};
    std::size_t topics_ = 0;
    bool counted_;
};

/// A socket type's rules.
class pattern {
public:
    explicit pattern(socket_core& c) : core_(c) {}
    virtual ~pattern() = default;
    virtual void attach(pipe& p) = 0;
    virtual void detach(pipe& p) = 0;
    virtual std::error_code send(std::span<const bytes_view> parts, const part* source) = 0;
    virtual void receive(pipe& p, std::span<const bytes_view> parts) = 0;
    /// A peer subscribed or cancelled (PUB/XPUB); others ignore it.
    virtual void subscription(pipe&, bool, bytes_view) {}
    /// SUB/XSUB only.
    virtual std::error_code subscribe(bool, bytes_view) { return link_errc::not_supported; }
    virtual std::size_t subscribers() const noexcept { return 0; }
    /// A pipe drained below its mark (after watch_writable).
    virtual void writable(pipe&) {}

protected:
    socket_core& core_;
};

std::unique_ptr<pattern> make_pattern(socket_core& c, socket_type t);

}  // namespace strix::link::detail
