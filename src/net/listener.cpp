#include "net/listener.hpp"

#include "net/socket_util.hpp"

#include "core/backend/poller.hpp"

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
    : group_(g),
      fd_(std::move(fd)),
      on_accept_(std::move(on_accept)),
      unlink_path_(std::move(unlink_path)),
      retry_([this] { on_retry(); }) {}

listener::~listener() {
    if (!unlink_path_.empty()) ::unlink(unlink_path_.c_str());
}

void listener::start() {
    io_ = backend_of(group_.owner()).open_acceptor(fd_.get(), *this, *this);
    if (auto ec = io_->start()) {
        log(log_level::error, "listener: cannot register with shard {}: {}", group_.owner().id(), ec);
        io_.reset();
    }
}

void listener::close() {
    if (!fd_) return;
    group_.owner().timers().cancel(retry_);
    if (io_) io_->close();
    fd_.reset();
    if (!unlink_path_.empty()) {
        ::unlink(unlink_path_.c_str());
        unlink_path_.clear();
    }
}

void listener::on_io(std::uint32_t events) {
    if (io_) io_->ready(events);
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

// Out of descriptors or memory: the pending connection stays in the backlog and a timer tries
// again, instead of spinning on a readiness (or completion) that cannot be cleared.
bool listener::accept_failed(int e) {
    if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
        bump(group_.counters_.accept_pauses);
        log_limited(log_level::warn, "shard {}: accept: {}; pausing accepts for {} ms", group_.owner().id(),
                    std::strerror(e), accept_retry.count());
        group_.owner().timers().schedule(retry_, group_.owner().ticks_for(accept_retry));
        return true;
    }
    log_limited(log_level::error, "shard {}: accept: {}", group_.owner().id(), std::strerror(e));
    return false;
}

void listener::on_retry() {
    if (io_ && fd_) io_->resume();
}

}  // namespace strix::detail
