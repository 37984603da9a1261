#pragma once
// The reactor's view of the kernel's readiness API: four calls, like redis's aeApi* functions.
// The epoll backend is epoll_poller.cpp; an io_uring backend is one more file implementing this.

#include <strix/core/reactor_object.hpp>

#include <sys/socket.h>

#include <memory>
#include <string>
#include <system_error>

namespace strix::detail {

struct poll_event {
    reactor_object* target;
    std::uint32_t events;   // io_events bits (readiness events)
    bool completion = false;  // a completion (done.*) rather than a readiness event
    io_completion done{};
};

class poller {
public:
    virtual ~poller() = default;
    /// Registers fd edge-triggered for `events`; `target` comes back in poll_event.
    virtual std::error_code add(int fd, std::uint32_t events, reactor_object* target) = 0;
    virtual std::error_code modify(int fd, std::uint32_t events, reactor_object* target) = 0;
    virtual std::error_code remove(int fd) = 0;
    /// Waits up to timeout_ms (-1 = forever, 0 = poll); returns the number of events written to out.
    virtual int wait(poll_event* out, int max_events, int timeout_ms) = 0;
    /// After the events of one wait() were dispatched: resources they lent (received buffers,
    /// references that kept targets alive) go back.
    virtual void dispatched() noexcept {}
    /// Called on the shard's own thread before its first wait() (io_uring binds its single
    /// issuer here).
    virtual void thread_start() {}

    // --- completion I/O (io_uring); a readiness backend says false and is never asked -----------
    virtual bool completions() const noexcept { return false; }
    /// Receives on fd until cancelled: each chunk is an io_completion::op::recv for target.
    virtual void recv_multishot(int, reactor_object*) {}
    /// Sends msg (which must stay valid until the completion) on fd.
    virtual void send(int, const msghdr*, reactor_object*) {}
    /// Accepts on a listening fd until cancelled.
    virtual void accept_multishot(int, reactor_object*) {}
    /// Cancels target's receive (its last completion still comes, with -ECANCELED or data).
    virtual void cancel_recv(reactor_object*) {}
    /// Cancels every operation on fd, at once (before the caller closes it).
    virtual void cancel_fd(int) {}

    virtual const char* name() const noexcept = 0;
};

/// The default backend. Throws std::system_error if the kernel refuses an epoll instance.
std::unique_ptr<poller> make_epoll_poller();

/// The io_uring backend, or nullptr with `why` set when this kernel or sandbox refuses io_uring.
std::unique_ptr<poller> make_uring_poller(std::string& why);

}  // namespace strix::detail
