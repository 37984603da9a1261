#pragma once
// The shard's I/O backend: how a shard waits, and how bytes move for its sockets.
//
//   readiness  add / modify / remove an fd; the target's on_io hears its readiness. For fds
//              that are not connections: the doorbell eventfd, sockets still connecting.
//   streams    open_stream(fd): one connected socket's I/O (receive into the user's ring, send
//              its chain, pause, resume, close), see stream_io.hpp.
//   acceptors  open_acceptor(fd): one listening socket's accepts.
//   the loop   wait() fetches what happened, the shard dispatches it, dispatched() takes back
//              what the dispatch borrowed.
//
// Two implementations, each in its own files: epoll_poller.cpp + epoll_stream.cpp (readiness,
// then read/send/accept system calls per socket) and uring_poller.cpp + uring_stream.cpp
// (io_uring: multishot receive and accept, one sendmsg per flush, one io_uring_enter per turn).
// Nothing above this folder asks which one runs.

#include "core/backend/stream_io.hpp"

#include <strix/core/reactor_object.hpp>

#include <memory>
#include <string>
#include <system_error>

namespace strix::detail {

/// A finished asynchronous operation (io_uring).
struct io_completion {
    enum class op : std::uint8_t { recv, send, accept, writable };
    op what;
    /// recv: bytes received (0 = the peer closed) or -errno; send: bytes sent or -errno;
    /// accept: the new socket or -errno; writable: the poll mask or -errno.
    int result;
    /// recv: the received bytes, valid only during completed().
    const std::byte* data;
    /// The operation stays armed (a multishot recv or accept will complete again).
    bool more;
};

/// Something inside a completion backend that hears its operations finish (a stream, an
/// acceptor). keep_alive() is referenced while an operation is in flight.
class completion_target {
public:
    virtual void completed(const io_completion& c) = 0;
    virtual reactor_object& keep_alive() noexcept = 0;

protected:
    ~completion_target() = default;
};

/// One thing a wait() found: readiness for target (done_target == nullptr), or a completion.
struct poll_event {
    reactor_object* target = nullptr;
    std::uint32_t events = 0;  // io_events bits
    completion_target* done_target = nullptr;
    io_completion done{};
};

class poller {
public:
    virtual ~poller() = default;

    /// Registers fd edge-triggered for `events`; `target` comes back in poll_event.
    virtual std::error_code add(int fd, std::uint32_t events, reactor_object* target) = 0;
    virtual std::error_code modify(int fd, std::uint32_t events, reactor_object* target) = 0;
    virtual std::error_code remove(int fd) = 0;

    /// The I/O of a connected socket. `owner` is the reactor object the stream's readiness and
    /// lifetime belong to (the session); it outlives the stream. Nothing starts before start().
    virtual std::unique_ptr<stream_io> open_stream(int fd, reactor_object& owner, stream_user& user) = 0;
    /// The accepts of a listening socket; `owner` as for open_stream.
    virtual std::unique_ptr<acceptor_io> open_acceptor(int fd, reactor_object& owner, accept_user& user) = 0;

    /// Waits up to timeout_ms (-1 = forever, 0 = poll); returns the number of events written to out.
    virtual int wait(poll_event* out, int max_events, int timeout_ms) = 0;
    /// After the events of one wait() were dispatched: resources they lent (received buffers,
    /// references that kept targets alive) go back.
    virtual void dispatched() noexcept {}
    /// Called on the shard's own thread before its first wait() (io_uring binds its single
    /// issuer here).
    virtual void thread_start() {}

    virtual const char* name() const noexcept = 0;
};

/// The default backend. Throws std::system_error if the kernel refuses an epoll instance.
std::unique_ptr<poller> make_epoll_poller();

/// The io_uring backend, or nullptr with `why` set when this kernel or sandbox refuses io_uring.
/// share: shards per CPU (1 unless there are more shards than CPUs); the ring and its provided
/// buffers shrink by it, so N shards on a CPU cost about one shard's memory.
std::unique_ptr<poller> make_uring_poller(std::string& why, unsigned share = 1);

}  // namespace strix::detail

namespace strix {
class shard;
namespace detail {
/// The backend of shard `s`, for the connection code in strix::net. Owning shard only.
poller& backend_of(shard& s) noexcept;
}  // namespace detail
}  // namespace strix
