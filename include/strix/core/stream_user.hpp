#pragma once
// stream_user and accept_user: what a shard's I/O backend tells the code above a socket.
//
//   backend (epoll | io_uring)      moves bytes: reads into the space the user lends, sends the
//        |                          user's buffer_chain, accepts connections
//        v
//   stream_user / accept_user       a session (or, later, a transport such as TLS that is a
//        |                          stream_user towards the backend and feeds a session above it)
//        v
//   framer -> handler
//
// The backend calls these on the owning shard's thread only, from the loop turn's dispatch or
// from the user's own calls into its stream (a send that fails at once reports it at once).
// Neither interface says which backend runs: that is the point of it.

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <span>
#include <system_error>

namespace strix {

class unique_fd;

/// The side of a connected socket above its I/O.
class stream_user {
public:
    /// Where the next received bytes go: up to two spans of free space (a ring's free space may
    /// wrap). Returns the number of spans (1 or 2); 0 when the user cannot take bytes now (reading
    /// paused or suspended: the backend keeps what it has, or leaves it in the kernel, until
    /// resume_receive); -1 when it never will (closing or closed: the backend drops what it has).
    virtual int recv_space(iovec (&iov)[2]) = 0;
    /// n > 0 bytes were written to the start of the space recv_space returned (continuing into the
    /// second span). Returns false when the user stopped taking bytes (paused, suspended, closed).
    virtual bool received(std::size_t n) = 0;
    /// A backend that receives into buffers of its own (io_uring's provided buffers) first offers
    /// the bytes here, so whole frames can be used where they lie instead of copied into the
    /// user's space. `data` is writable and valid only during this call. Returns how many leading
    /// bytes were taken; the rest goes through recv_space/received as usual. The default takes
    /// none.
    virtual std::size_t received_in_place(std::span<std::byte> data) {
        (void)data;
        return 0;
    }
    /// The peer closed its side in order (end of stream).
    virtual void peer_closed() = 0;
    /// The socket failed (reset, timed out, ...): ec holds the errno.
    virtual void stream_failed(std::error_code ec) = 0;
    /// n bytes of the chain given to send() left it (one write system call, or one completion).
    virtual void sent(std::size_t n) = 0;
    /// Sending may go on: the socket has room again, or an asynchronous send finished. Not called
    /// from within the user's own send().
    virtual void send_ready() = 0;

    /// A transport with a handshake (TLS) completed it: the stream carries the user's bytes from
    /// now on. Streams without a handshake never call it.
    virtual void established() {}

protected:
    ~stream_user() = default;
};

/// The side of a listening socket above its I/O.
class accept_user {
public:
    /// A new connection (non-blocking, close-on-exec). addr is its peer address when the backend
    /// learned it with the accept, else nullptr.
    virtual void accepted(unique_fd fd, const sockaddr_storage* addr, socklen_t len) = 0;
    /// accept failed with errno e (not EAGAIN, EINTR, ECONNABORTED or EPROTO, which the backend
    /// handles). Returns true to pause accepting (the user resumes it later), false to go on.
    virtual bool accept_failed(int e) = 0;

protected:
    ~accept_user() = default;
};

}  // namespace strix
