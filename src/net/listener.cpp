#include "net/listener.hpp"

#include "net/socket_util.hpp"

#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace strix::detail {

namespace {
constexpr std::chrono::milliseconds accept_retry{100};
}

listener::listener(session_group& g, unique_fd fd, session_group::accept_fn on_accept, std::string unlink_path)
    : group_(g), fd_(std::move(fd)), on_accept_(std::move(on_accept)), unlink_path_(std::move(unlink_path)), retry_([this] { on_retry(); }) {}

listener::~listener() {
    if (!unlink_path_.empty()) ::unlink(unlink_path_.c_str());
}

void listener::start() {
    completion_io_ = group_.owner().completion_io();
    if (completion_io_) {
        group_.owner().io_accept(fd_.get(), *this);
        registered_ = true;
        return;
    }
    if (auto ec = group_.owner().add_fd(fd_.get(), io_events::readable, this)) {
        log(log_level::error, "listener: cannot register with shard %u: %s", group_.owner().id(), ec.message().c_str());
        return;
    }
    registered_ = true;
}

void listener::close() {
    if (!fd_) return;
    group_.owner().timers().cancel(retry_);
    if (registered_) {
        if (completion_io_)
            group_.owner().io_cancel(fd_.get());
        else
            group_.owner().remove_fd(fd_.get());
    }
    registered_ = false;
    fd_.reset();
    if (!unlink_path_.empty()) {
        ::unlink(unlink_path_.c_str());
        unlink_path_.clear();
    }
}

void listener::on_io(std::uint32_t) {
    if (!paused_) accept_all();
}

void listener::accepted(unique_fd fd, const sockaddr_storage* addr, socklen_t len) {
    sockaddr_storage peer{};
    if (!addr) {
        // A multishot accept does not return the address: ask the socket.
        len = sizeof peer;
        if (::getpeername(fd.get(), reinterpret_cast<sockaddr*>(&peer), &len) < 0) len = 0;
        addr = &peer;
    }
    if (addr->ss_family == AF_INET || addr->ss_family == AF_INET6) set_nodelay(fd.get());
    on_accept_(std::move(fd), describe_peer(*addr, len));
}

void listener::on_complete(const io_completion& c) {
    if (!fd_) {
        if (c.result >= 0) ::close(c.result);  // accepted while closing
        return;
    }
    if (c.result >= 0) {
        accepted(unique_fd(c.result), nullptr, 0);
    } else if (c.result != -ECANCELED) {
        const int e = -c.result;
        if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
            paused_ = true;
            bump(group_.counters_.accept_pauses);
            log_limited(log_level::warn, "shard %u: accept: %s; pausing accepts for %lld ms", group_.owner().id(),
                        std::strerror(e), static_cast<long long>(accept_retry.count()));
            if (c.more) group_.owner().io_cancel(fd_.get());
            group_.owner().timers().schedule(retry_, group_.owner().ticks_for(accept_retry));
            return;
        }
        if (e != EINTR && e != ECONNABORTED && e != EPROTO)
            log_limited(log_level::error, "shard %u: accept: %s", group_.owner().id(), std::strerror(e));
    }
    if (!c.more && !paused_ && fd_) group_.owner().io_accept(fd_.get(), *this);  // re-arm
}

void listener::accept_all() {
    auto& counters = group_.counters_;
    while (fd_) {
        sockaddr_storage addr{};
        socklen_t len = sizeof addr;
        unique_fd fd{::accept4(fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC)};
        if (fd) {
            accepted(std::move(fd), &addr, len);
            continue;
        }
        int e = errno;
        if (e == EAGAIN || e == EWOULDBLOCK) return;
        if (e == EINTR || e == ECONNABORTED || e == EPROTO) continue;
        if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
            // The pending connection stays in the backlog; with edge-triggered readiness nothing
            // would tell us again, so a timer retries.
            paused_ = true;
            bump(counters.accept_pauses);
            log_limited(log_level::warn, "shard %u: accept: %s; pausing accepts for %lld ms", group_.owner().id(),
                        std::strerror(e), static_cast<long long>(accept_retry.count()));
            group_.owner().timers().schedule(retry_, group_.owner().ticks_for(accept_retry));
            return;
        }
        log_limited(log_level::error, "shard %u: accept: %s", group_.owner().id(), std::strerror(e));
        return;
    }
}

void listener::on_retry() {
    paused_ = false;
    if (completion_io_) {
        if (fd_) group_.owner().io_accept(fd_.get(), *this);
        return;
    }
    accept_all();
}

}  // namespace strix::detail
