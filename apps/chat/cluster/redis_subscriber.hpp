#pragma once
// redis_subscriber: a pub/sub connection to Redis on one shard, separate from the command
// connection (a subscribed connection takes no other commands).
//
//   subscribe("chat:{r1}")  --SUBSCRIBE-->  Redis  --["subscribe", ch, n]-->  events.subscribed(ch)
//                                           Redis  --["message", ch, msg]-->  events.message(ch, msg)
//
// The subscriber keeps the set of channels wanted, not the state of one connection: after a
// reconnect (Redis restarted, the connection reset) every wanted channel is subscribed again and
// `subscribed` fires once more for each. A message published while a channel was not subscribed
// is not delivered by Redis, so the owner's answer to `subscribed` is to read what it missed
// (the room's stream) and deduplicate by sequence.
//
// Liveness: an idle connection is PINGed every ping_interval; a PING or SUBSCRIBE not answered
// within command_timeout resets the connection. (A pub/sub stall that Redis itself does not
// report, messages published but never delivered, is the owner's periodic position check.)
// Everything here is for the owning shard only; callbacks run there.

#include "apps/chat/cluster/redis_link.hpp"

#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace strix::chat {

class redis_subscriber final : private detail::redis_link {
public:
    struct events {
        std::function<void(std::string_view channel, std::string_view payload)> message;
        /// Redis confirmed the subscription (first time or after a reconnect).
        std::function<void(std::string_view channel)> subscribed;
        /// The connection came up (true) or went down (false): every subscription is gone.
        std::function<void(bool up)> connection;
    };

    /// Starts connecting at once. On the shard, or before the engine runs.
    redis_subscriber(shard& sh, redis_options opts, events ev);
    ~redis_subscriber() override;

    /// Wants messages of `channel` from now on (no-op if already wanted). Owning shard.
    void subscribe(const std::string& channel);
    /// Wants them no longer (no-op if not wanted); messages already on the way are dropped.
    void unsubscribe(const std::string& channel);
    /// Wanted, and confirmed by Redis on the current connection.
    bool is_subscribed(const std::string& channel) const;
    std::size_t wanted() const noexcept { return wanted_.size(); }

    void close();

    using redis_link::connect_failures;
    using redis_link::connects;
    using redis_link::is_up;
    using redis_link::last_error;

private:
    void on_up() override;
    void on_reply(resp_reply& r) override;
    void on_down(std::error_code reason) override;
    void on_tick() override;
    void expect(std::size_t n);
    void protocol_error(const resp_reply& r);

    events ev_;
    std::unordered_map<std::string, bool> wanted_;  // channel -> confirmed on this connection
    // channel -> SUBSCRIBE/UNSUBSCRIBE commands sent on this connection and not yet answered: a
    // subscription is confirmed by the answer to the last one only (subscribe, unsubscribe,
    // subscribe again in one turn must not confirm on the first answer).
    std::unordered_map<std::string, unsigned> changing_;
    std::deque<std::uint64_t> acks_;  // deadlines of the confirmations and pongs still due, in order
    std::uint64_t next_ping_ = 0;
    std::string out_;
};

}  // namespace strix::chat
