#pragma once
// ZAP through a handler socket, as libzmq 4.3 does it (RFC 27 over inproc://zeromq.zap.01): a
// server whose security_options::zap is empty asks the REP or ROUTER socket the application
// bound at that name on the same engine (a shard socket, or a blocking socket served by a thread
// of the application, as pyzmq's ThreadAuthenticator and czmq's zauth do). Each server socket
// has one zap_client: a DEALER of its own on the server's shard, connected to the handler when a
// request first needs it; replies are matched to the waiting handshakes by request id.
//
//   zmtp_pipe (handshake) ──ask──> zap_client ──DEALER, inproc──> handler socket (any shard, or
//                                                                 a blocking socket's thread)
//   zmtp_pipe::zap_answered <──next loop turn── reply, by request id <──
//
// A handshake waiting for its answer is suspended, not the shard: the shard serves everything
// else meanwhile. The handshake timer (socket_options::handshake_ivl) still runs; an answer that
// comes after its handshake ended is dropped.
//
//   request: "", "1.0", request id, domain, address, identity, mechanism, credentials...
//   reply:   "", "1.0", request id, status code, status text, user id, metadata
// (the empty first frame is the envelope a REP handler strips and puts back). The identity frame
// is the server socket's own routing id (as at the connection's bind or connect), as libzmq sends
// it. Request ids count up per server socket (libzmq's are all "1": it has a pipe per connection
// where strix has one per socket).

#include <strix/link/security.hpp>
#include <strix/link/socket.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace strix {
class shard;
}

namespace strix::link::detail {

/// A handshake waiting for ZAP's answer. Called on the server's shard, from the loop.
class zap_waiter {
public:
    /// A well-formed reply (any of RFC 27's four status codes).
    virtual void zap_answered(const zap_reply& r) = 0;
    /// The reply is malformed: zap_bad_reply, the detail saying how ("malformed", "unspecified",
    /// "bad version", "bad request id", "invalid status code", "invalid metadata").
    virtual void zap_failed(std::error_code ec, std::string detail) = 0;

protected:
    ~zap_waiter() = default;
};

/// A server socket's link to the ZAP handler socket. Its shard only.
class zap_client {
public:
    explicit zap_client(shard& sh) noexcept : sh_(sh) {}
    ~zap_client();
    zap_client(const zap_client&) = delete;
    zap_client& operator=(const zap_client&) = delete;

    /// Sends r (its request id replaced by this client's next, its identity by the server
    /// socket's own routing id `server_id`) to the handler bound at inproc://zeromq.zap.01 on
    /// this shard's engine and keeps w until the answer or forget(). Returns the request id, or
    /// 0 when no handler is bound (nothing sent).
    std::uint64_t ask(const zap_request& r, std::string_view server_id, zap_waiter& w);
    /// The handshake of request `id` ended: its answer will be dropped.
    void forget(std::uint64_t id) noexcept { waiting_.erase(id); }

private:
    void received(message_view m);
    void dispatch();
    void answer(const std::vector<std::string>& reply);
    zap_waiter* waiter_for(const std::string& id, std::uint64_t& key);

    shard& sh_;
    std::unique_ptr<socket> dealer_;  // made at the first request that finds a handler
    std::map<std::uint64_t, zap_waiter*> waiting_;  // by request id, oldest first
    std::uint64_t last_id_ = 0;
    std::vector<std::vector<std::string>> replies_;  // received, not yet dispatched
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace strix::link::detail
