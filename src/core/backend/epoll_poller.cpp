// epoll backend: edge-triggered readiness; streams and acceptors (epoll_stream.cpp) do their own
// read/send/accept system calls when their socket is ready.
#include "core/backend/epoll_stream.hpp"
#include "core/backend/poller.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace strix::detail {
namespace {

class epoll_poller final : public poller {
public:
    epoll_poller() : fd_(::epoll_create1(EPOLL_CLOEXEC)) {
        if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
    }
    ~epoll_poller() override { ::close(fd_); }

    std::error_code add(int fd, std::uint32_t events, reactor_object* target) override {
        return ctl(EPOLL_CTL_ADD, fd, events, target);
    }
    std::error_code modify(int fd, std::uint32_t events, reactor_object* target) override {
        return ctl(EPOLL_CTL_MOD, fd, events, target);
    }
    std::error_code remove(int fd) override { return ctl(EPOLL_CTL_DEL, fd, 0, nullptr); }

    std::unique_ptr<stream_io> open_stream(int fd, reactor_object& owner, stream_user& user) override {
        return make_epoll_stream(*this, fd, owner, user);
    }
    std::unique_ptr<acceptor_io> open_acceptor(int fd, reactor_object& owner, accept_user& user) override {
        return make_epoll_acceptor(*this, fd, owner, user);
    }

    const char* name() const noexcept override { return "epoll"; }

    int wait(poll_event* out, int max_events, int timeout_ms) override {
        if (static_cast<int>(buf_.size()) < max_events) buf_.resize(static_cast<std::size_t>(max_events));
        int n = ::epoll_wait(fd_, buf_.data(), max_events, timeout_ms);
        if (n < 0) return 0;  // EINTR: the loop simply turns again
        for (int i = 0; i < n; ++i) {
            out[i].target = static_cast<reactor_object*>(buf_[static_cast<std::size_t>(i)].data.ptr);
            out[i].events = buf_[static_cast<std::size_t>(i)].events;
        }
        return n;
    }

private:
    std::error_code ctl(int op, int fd, std::uint32_t events, reactor_object* target) {
        epoll_event ev{};
        ev.events = events | EPOLLET;
        ev.data.ptr = target;
        if (::epoll_ctl(fd_, op, fd, &ev) < 0) return {errno, std::generic_category()};
        return {};
    }

    int fd_;
    std::vector<epoll_event> buf_;
};

}  // namespace

std::unique_ptr<poller> make_epoll_poller() { return std::make_unique<epoll_poller>(); }

}  // namespace strix::detail
