#pragma once
// The reactor's view of the kernel's readiness API: four calls, like redis's aeApi* functions.
// The epoll backend is epoll_poller.cpp; an io_uring backend is one more file implementing this.

#include <strix/core/reactor_object.hpp>

#include <memory>
#include <system_error>

namespace strix::detail {

struct poll_event {
    reactor_object* target;
    std::uint32_t events;  // io_events bits
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
};

/// The default backend. Throws std::system_error if the kernel refuses an epoll instance.
std::unique_ptr<poller> make_epoll_poller();

}  // namespace strix::detail
