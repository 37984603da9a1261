#pragma once
// stream_io and acceptor_io: one socket's I/O, implemented by each backend. The session and the
// listener in strix::net hold one and never ask which backend made it.
//
//   session ──start / pause_receive / resume_receive / send(chain) / close──> stream_io
//   session <──recv_space / received / sent / send_ready / peer_closed / stream_failed── stream_io
//
// Receiving: the stream reads (epoll) or copies from a completed receive (io_uring) into the space
// the user lends, straight into the session's receive ring. While the user does not take bytes,
// epoll leaves them in the kernel; io_uring keeps what already completed and hands it over first
// on resume_receive.
// Sending: send(tx) sends what tx holds and consumes what went out. epoll writes until the socket
// is full and then waits for room; io_uring has one sendmsg in flight and consumes at its
// completion, so tx's front bytes belong to the kernel while send_busy().
//
// Every call is for the owning shard's thread only.

#include <strix/core/buffer_chain.hpp>
#include <strix/core/stream_user.hpp>

#include <cstdint>
#include <system_error>

namespace strix::detail {

class stream_io {
public:
    virtual ~stream_io() = default;
    /// Registers the socket and starts receiving. An error means the stream cannot run.
    virtual std::error_code start() = 0;
    /// Readiness the owner's on_io heard (epoll; io_uring streams never get any).
    virtual void ready(std::uint32_t events) = 0;
    /// Stops taking bytes from the kernel (backpressure, suspension).
    virtual void pause_receive() = 0;
    /// Hands over what was kept, then receives again.
    virtual void resume_receive() = 0;
    /// Sends what tx holds, consuming what the kernel took. tx must stay alive, and its front
    /// bytes unchanged, while send_busy(). Appending to tx meanwhile is fine.
    virtual void send(buffer_chain& tx) = 0;
    /// send(tx), started now rather than with the loop's next poll (io_uring submits at once):
    /// for output sent mid-turn, while its bytes are still in the CPU's cache.
    virtual void send_now(buffer_chain& tx) { send(tx); }
    /// An asynchronous send still reads tx's front bytes.
    virtual bool send_busy() const noexcept = 0;
    /// The user will send nothing more (a graceful close whose chain is empty): ends the stream in
    /// order where the transport has a way to (TLS: close_notify). True once everything, that
    /// included, has left; else the user hears send_ready() and asks again.
    virtual bool finish() { return true; }
    /// The user has been idle a while: give back buffers the stream keeps between reads (TLS:
    /// its ciphertext buffer), to be taken again when bytes come.
    virtual void trim() noexcept {}
    /// Stops every operation on the socket; call before closing it. The user hears nothing more,
    /// except that a send in flight still consumes (or, closed, clears) tx when it completes.
    virtual void close() noexcept = 0;
};

class acceptor_io {
public:
    virtual ~acceptor_io() = default;
    /// Registers the listening socket and starts accepting.
    virtual std::error_code start() = 0;
    /// Readiness the owner's on_io heard (epoll).
    virtual void ready(std::uint32_t events) = 0;
    /// Stops accepting (accept_user::accept_failed asked for it, or the owner did): pending
    /// connections wait in the backlog.
    virtual void pause() = 0;
    /// Accepts what waits in the backlog and goes on.
    virtual void resume() = 0;
    /// Stops accepting for good; call before closing the socket.
    virtual void close() noexcept = 0;
};

}  // namespace strix::detail
