#pragma once
// The blocking convenience API: strix::link for threads that are not shards, as cppzmq is for
// libzmq. A client is a few lines:
//
//     strix::link::context ctx;                                   // one shard of its own
//     strix::link::blocking_socket req(ctx, strix::link::socket_type::req);
//     req.connect("tcp://127.0.0.1:5555");
//     req.send("hello");
//     auto reply = req.recv();                                    // std::optional<message>
//     std::cout << (*reply)[0].text() << '\n';
//
// Each blocking_socket wraps a link::socket living on one of the context's shards; calls post
// to that shard and wait. send() waits while the socket says would_block (a peer at its
// high-water mark, or none connected yet); recv() waits for a message. Both take a timeout.
// Received messages wait in a queue bounded by rcvhwm: when it is full the socket pauses
// receiving (pause_receiving), so a slow reader pushes back on its peers instead of growing
// memory. The shard-native socket (socket.hpp) is the fast path; this is the convenient one.
//
// Thread contract: a blocking_socket may be used from any one thread at a time (not a shard of
// its context's engine: it would wait on itself).

#include <strix/link/socket.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace strix {
class engine;
}

namespace strix::link {

class context {
public:
    /// An engine of its own with `shards` shards (not pinned), started now.
    explicit context(unsigned shards = 1);
    /// Places sockets on an engine the application runs (started, and outliving the context).
    explicit context(engine& e);
    /// Stops and joins an engine of its own. Destroy the sockets first.
    ~context();
    context(const context&) = delete;
    context& operator=(const context&) = delete;

    engine& eng() noexcept { return *eng_; }
    /// The shard the next socket goes to (round-robin).
    unsigned next_shard() noexcept;

private:
    std::unique_ptr<engine> owned_;
    engine* eng_;
    unsigned next_ = 0;
};

class blocking_socket {
public:
    using duration = std::chrono::milliseconds;
    static constexpr duration forever{-1};

    blocking_socket(context& ctx, socket_type type, socket_options opts = {});
    /// Closes the socket on its shard (queued output is flushed within the session linger).
    ~blocking_socket();
    blocking_socket(const blocking_socket&) = delete;
    blocking_socket& operator=(const blocking_socket&) = delete;

    /// See socket::bind / socket::connect. Errors are thrown here, on the calling thread.
    std::string bind(std::string_view address);
    void connect(std::string_view address);

    /// Sends a message, waiting while the socket reports would_block, up to `timeout`
    /// (returns would_block then). Other errors come back at once.
    std::error_code send(const message& m, duration timeout = forever);
    std::error_code send(std::string_view text, duration timeout = forever) { return send(message(text), timeout); }

    /// The next message, or nullopt after `timeout`.
    std::optional<message> recv(duration timeout = forever);

    void subscribe(std::string_view topic);
    void unsubscribe(std::string_view topic);

    /// PUB/XPUB: waits until at least n peers hold a subscription (ZeroMQ's "slow joiner": a
    /// publisher that starts sending before its subscribers' subscriptions arrived loses the
    /// first messages). False after timeout.
    bool wait_for_subscribers(std::size_t n, duration timeout = forever);
    /// Waits until at least n peers completed the handshake. False after timeout.
    bool wait_for_peers(std::size_t n, duration timeout = forever);

    /// The next monitor event (the most recent 1,000 are kept), or nullopt after timeout.
    std::optional<socket_event> next_event(duration timeout = duration(0));

    socket_stats stats();

private:
    struct shared;
    template <class F>
    auto on_shard(F&& f) -> decltype(f());

    context& ctx_;
    unsigned shard_;
    std::shared_ptr<shared> st_;
    std::unique_ptr<socket> sock_;  // lives on shard_; built and destroyed there
};

}  // namespace strix::link
