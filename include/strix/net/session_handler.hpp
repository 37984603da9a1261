#pragma once
// What an application implements to receive a session group's events. A group lives on one shard
// and so does its handler: a handler's state is shard-local and needs no locks. A server makes
// one handler per shard (see server.hpp).

#include <span>
#include <system_error>

namespace strix {

class connection;
class session;

class session_handler {
public:
    virtual ~session_handler() = default;

    /// A connection was accepted, or an outbound connection completed (session::origin() names
    /// it). The session is open; send() works.
    virtual void on_open(session&) {}

    /// One complete frame, header included, as the session's framer cut it, within the
    /// session's limits. The bytes are valid until this call returns (they live in the receive
    /// ring, or in the backend's own receive buffer when it offers whole frames in place) and are
    /// writable memory lent for the call (a WebSocket unmasks there).
    virtual void on_frame(session& s, std::span<const std::byte> frame) = 0;

    /// The peer sent something the framing rejects, or missed a protocol deadline (ec is
    /// net_errc::frame_timeout or net_errc::handshake_timeout, see session_limits). The session
    /// has stopped reading; whatever this callback send()s is flushed before the connection
    /// closes (e.g. an error reply), within close_linger.
    virtual void on_protocol_error(session&, std::error_code) {}

    /// The connection is gone (reason: a net_errc or a system error). Last call for this session;
    /// its state (session::emplace_state) is destroyed right after.
    virtual void on_close(session&, std::error_code) {}

    /// After session::notify_when_drained(): a flush wrote out everything queued (flow control:
    /// the peer is taking data again).
    virtual void on_drained(session&) {}

    /// An outbound connection attempt failed (refused, unreachable, timed out). With reconnect
    /// on, another attempt follows after a backoff; otherwise the connection is closed.
    virtual void on_connect_failed(connection&, std::error_code) {}
};

}  // namespace strix
