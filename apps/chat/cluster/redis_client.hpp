#pragma once
// redis_client: commands to Redis from one shard, pipelined, never blocking the shard.
//
//   client.command({"INCR", "k"}, [](std::error_code ec, const resp_reply& r) { ... });
//
// Commands are written at once when connected (many per turn go out in one write) and their
// callbacks are called in order as the replies arrive. While Redis is unreachable, commands
// wait (up to max_pending) and go out on the next connection; a command still unsent after
// command_timeout fails with not_connected. A command sent but unanswered after command_timeout
// resets the connection (RESP cannot cancel one pipelined command); every command in flight on
// a connection that ends fails with the reason it ended: a command is delivered at most once,
// never re-sent behind its caller's back.
//
// On every new connection the `on_connect` commands go out first (e.g. FUNCTION LOAD REPLACE,
// so a Redis restarted empty gets its functions back before any FCALL).
//
// Callbacks run on the owning shard, never from inside command(): a command that fails at once
// (closed client, queue full) has its callback posted to the shard. A callback may issue
// commands or close() the client, but not destroy it (post the destruction). Everything here is
// for the owning shard only (it is built there or before the engine runs, and destroyed there).
//
// Memory: the receive ring holds one whole reply, so each connection keeps max_reply bytes
// (1 MiB by default) for its life.

#include "apps/chat/cluster/redis_link.hpp"

#include <deque>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strix::chat {

/// A command's outcome: ec empty and the reply, or ec set: redis_errc::server_error with the
/// error reply (its text says why), or a failure with an empty reply. The reply is valid until
/// the callback returns.
using redis_callback = std::function<void(std::error_code ec, const resp_reply& reply)>;

class redis_client final : private detail::redis_link {
public:
    /// Starts connecting to opts.target at once. On the shard, or before the engine runs.
    redis_client(shard& sh, redis_options opts, std::vector<std::vector<std::string>> on_connect = {});
    /// Fails whatever is pending with redis_errc::closed (callbacks run now). Owning shard.
    ~redis_client() override;

    /// Sends a command (its arguments as binary-safe strings). Owning shard.
    void command(std::span<const std::string_view> args, redis_callback cb);
    void command(std::initializer_list<std::string_view> args, redis_callback cb) {
        command(std::span<const std::string_view>(args.begin(), args.size()), std::move(cb));
    }

    /// Called with true on every new connection (after the on_connect commands were sent) and
    /// with false when one ends. Owning shard.
    void on_connection(std::function<void(bool up)> f) { on_connection_ = std::move(f); }

    /// Fails everything pending with redis_errc::closed and stops. Idempotent. Owning shard.
    void close();

    using redis_link::connect_failures;
    using redis_link::connects;
    using redis_link::is_up;
    using redis_link::last_error;
    /// Commands sent and awaiting their reply; commands waiting for a connection.
    std::size_t in_flight() const noexcept { return in_flight_.size(); }
    std::size_t waiting() const noexcept { return waiting_.size(); }

private:
    struct pending {
        redis_callback cb;
        std::uint64_t deadline;
    };
    struct unsent {
        std::string wire;
        redis_callback cb;
        std::uint64_t deadline;
    };

    void on_up() override;
    void on_reply(resp_reply& r) override;
    void on_down(std::error_code reason) override;
    void on_tick() override;
    void fail_later(redis_callback cb, std::error_code ec);

    const std::vector<std::vector<std::string>> on_connect_;
    std::deque<pending> in_flight_;
    std::deque<unsent> waiting_;
    std::string out_;  // this turn's encoded commands, reused
    std::function<void(bool)> on_connection_;
};

}  // namespace strix::chat
