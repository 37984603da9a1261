#include "net/listener.hpp"

#include "net/net_shard.hpp"
#include "net/socket_util.hpp"

#include <strix/core/log.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace strix::detail {

namespace {
constexpr std::chrono::milliseconds accept_retry{100};
}

listener::listener(net_shard& ns, int fd, bool handoff) : ns_(ns), fd_(fd), handoff_(handoff) {
    retry_.on_fire = &listener::on_retry;
    retry_.ctx = this;
}

listener::~listener() {
    if (fd_ >= 0) ::close(fd_);
}

void listener::start() {
    if (auto ec = ns_.owner.add_fd(fd_, io_events::readable, this))
        log(log_level::error, "listener: cannot register with shard %u: %s", ns_.owner.id(), ec.message().c_str());
}

void listener::close() {
    if (fd_ < 0) return;
    ns_.owner.timers().cancel(retry_);
    ns_.owner.remove_fd(fd_);
    ::close(fd_);
    fd_ = -1;
}

void listener::on_io(std::uint32_t) {
    if (!paused_) accept_all();
}

void listener::accept_all() {
    while (fd_ >= 0) {
        sockaddr_storage addr{};
        socklen_t len = sizeof addr;
        int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            if (addr.ss_family == AF_INET || addr.ss_family == AF_INET6) {
                int one = 1;
                ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            }
            std::string peer = describe_peer(addr, len);
            if (!handoff_) {
                ns_.adopt(fd, std::move(peer));
                continue;
            }
            unsigned target = ns_.next_handoff++ % ns_.owner.shard_count();
            net_shard* dest = ns_.peers[target];
            if (target == ns_.owner.id()) {
                dest->adopt(fd, std::move(peer));
            } else {
                ns_.owner.post_to(target, [dest, fd, p = std::move(peer)]() mutable { dest->adopt(fd, std::move(p)); });
            }
            continue;
        }
        int e = errno;
        if (e == EAGAIN || e == EWOULDBLOCK) return;
        if (e == EINTR || e == ECONNABORTED || e == EPROTO) continue;
        if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
            // The pending connection stays in the backlog; with edge-triggered readiness nothing
            // would tell us again, so a timer retries.
            paused_ = true;
            bump(ns_.counters.accept_pauses);
            log_limited(log_level::warn, "shard %u: accept: %s; pausing accepts for %lld ms", ns_.owner.id(),
                        std::strerror(e), static_cast<long long>(accept_retry.count()));
            ns_.owner.timers().schedule(retry_, ns_.owner.ticks_for(accept_retry));
            return;
        }
        log_limited(log_level::error, "shard %u: accept: %s", ns_.owner.id(), std::strerror(e));
        return;
    }
}

void listener::on_retry(timer_node& t) {
    auto& self = *static_cast<listener*>(t.ctx);
    self.paused_ = false;
    self.accept_all();
}

}  // namespace strix::detail
