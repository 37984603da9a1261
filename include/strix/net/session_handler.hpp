#pragma once
// What an application implements to receive a server's events. The server makes one handler
// per shard (see server.hpp), so a handler's state is shard-local and needs no locks.

#include <span>
#include <system_error>

namespace strix {

class session;

class session_handler {
public:
    virtual ~session_handler() = default;

    /// A connection was accepted on this shard. The session is open; send() works.
    virtual void on_open(session&) {}

    /// One complete frame, header included, validated against the session's limits.
    /// The bytes are valid until this call returns (they live in the receive buffer).
    virtual void on_frame(session& s, std::span<const std::byte> frame) = 0;

    /// The peer sent something the framing rejects. The session has stopped reading; whatever
    /// this callback send()s is flushed before the connection closes (e.g. an error reply).
    virtual void on_protocol_error(session&, std::error_code) {}

    /// The connection is gone (reason: a net_errc or a system error). Last call for this session.
    virtual void on_close(session&, std::error_code) {}
};

}  // namespace strix
