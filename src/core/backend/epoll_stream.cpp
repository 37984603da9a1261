// The epoll backend's connection I/O: readiness from the shard's epoll set, then the system calls
// here. Edge-triggered, so every readable edge is read until a short read (or EAGAIN), and bytes
// left in the kernel while the user does not take any are remembered (pending_) and read on
// resume: no new edge would come for them.
#include "core/backend/epoll_stream.hpp"

#include <strix/core/unique_fd.hpp>

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace strix::detail {
namespace {

constexpr int max_iov = 64;

std::error_code errno_code(int e) noexcept { return {e, std::generic_category()}; }

// The data system calls without glibc's wrappers: read(), readv(), send() and sendmsg() are
// pthread cancellation points, and each call switches asynchronous cancellation on and off around
// the system call (~60 instructions per echoed message at depth 1, a quarter of strix's own work
// there). Shards are never cancelled. Same results and errno as the wrappers.
inline ssize_t sys_read(int fd, void* buf, std::size_t n) noexcept { return ::syscall(SYS_read, fd, buf, n); }
inline ssize_t sys_readv(int fd, const iovec* iov, int n) noexcept { return ::syscall(SYS_readv, fd, iov, n); }
inline ssize_t sys_send(int fd, const void* buf, std::size_t n) noexcept {
    return ::syscall(SYS_sendto, fd, buf, n, MSG_NOSIGNAL, nullptr, 0);
}
inline ssize_t sys_sendmsg(int fd, const msghdr* msg) noexcept { return ::syscall(SYS_sendmsg, fd, msg, MSG_NOSIGNAL); }

class epoll_stream final : public stream_io {
public:
    epoll_stream(poller& p, int fd, reactor_object& owner, stream_user& user)
        : poller_(p), fd_(fd), owner_(owner), user_(user) {}

    // Write readiness is asked for only while a write waits for socket buffer space (see
    // want_writable): on a Unix socket every read by the peer wakes the writer's watchers.
    std::error_code start() override { return poller_.add(fd_, io_events::readable | io_events::read_hangup, &owner_); }

    void ready(std::uint32_t events) override {
        if (closed_) return;
        if (events & io_events::error) {
            int err = 0;
            socklen_t len = sizeof err;
            ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
            user_.stream_failed(errno_code(err ? err : ECONNRESET));
            return;
        }
        if (events & (io_events::readable | io_events::hangup | io_events::read_hangup)) {
            if (events & (io_events::hangup | io_events::read_hangup)) hangup_ = true;
            if (paused_)
                pending_ = true;
            else
                read_all();
        }
        if (!closed_ && (events & io_events::writable)) user_.send_ready();
    }

    void pause_receive() override { paused_ = true; }

    void resume_receive() override {
        paused_ = false;
        // Edge-triggered: data that arrived while paused raised no new edge, so read it now.
        if (pending_ && !closed_) read_all();
    }

    void send(buffer_chain& tx) override {
        while (!tx.empty() && !closed_) {
            iovec iov[max_iov];
            const int n = tx.fill_iov(iov, max_iov);
            std::size_t want = 0;
            for (int i = 0; i < n; ++i) want += iov[i].iov_len;
            ssize_t w;
            if (n == 1) {
                // A single segment (the usual coalesced chunk): send() avoids sendmsg's msghdr/iovec copy.
                w = sys_send(fd_, iov[0].iov_base, iov[0].iov_len);
            } else {
                msghdr msg{};
                msg.msg_iov = iov;
                msg.msg_iovlen = static_cast<std::size_t>(n);
                w = sys_sendmsg(fd_, &msg);
            }
            if (w > 0) {
                tx.consume(static_cast<std::size_t>(w));
                user_.sent(static_cast<std::size_t>(w));
                if (static_cast<std::size_t>(w) < want) break;  // socket buffer full; EPOLLOUT resumes us
                continue;
            }
            if (w < 0 && errno == EINTR) continue;
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            user_.stream_failed(errno_code(w < 0 ? errno : EPIPE));
            return;
        }
        if (!closed_) want_writable(!tx.empty());
    }

    bool send_busy() const noexcept override { return false; }

    void close() noexcept override {
        if (closed_) return;
        closed_ = true;
        poller_.remove(fd_);
    }

private:
    // Reads until the socket is drained (a short read means it is), handing the bytes over after
    // every read so the ring never has to hold more than one read's worth plus a partial frame.
    void read_all() {
        pending_ = false;
        while (!closed_) {
            iovec iov[2];
            const int n = user_.recv_space(iov);
            if (n <= 0) {
                pending_ = n == 0;  // not now: what the socket holds is read on resume
                return;
            }
            const std::size_t want = iov[0].iov_len + (n > 1 ? iov[1].iov_len : 0);
            // One contiguous free span is the common case; plain read() skips readv's iovec import.
            const ssize_t r = n == 1 ? sys_read(fd_, iov[0].iov_base, iov[0].iov_len) : sys_readv(fd_, iov, n);
            if (r > 0) {
                if (!user_.received(static_cast<std::size_t>(r))) {
                    pending_ = true;  // the user stopped taking bytes; the rest waits for resume
                    return;
                }
                // Drained: skip the read that would say EAGAIN, unless the peer's FIN came with the
                // data (one edge for both): only the read that returns 0 tells of it.
                if (static_cast<std::size_t>(r) < want && !hangup_) return;
                continue;
            }
            if (r == 0) {
                user_.peer_closed();
                return;
            }
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            user_.stream_failed(errno_code(errno));
            return;
        }
    }

    // EPOLLOUT is registered only while output waits for socket buffer space. Registered for good,
    // every skb the peer consumes on a Unix socket (unix_write_space) runs our epoll callback and
    // wakes the shard, whether or not anything is queued: one spurious wakeup per message read.
    // EPOLL_CTL_MOD re-polls the socket, so space freed before the call still raises the event.
    void want_writable(bool on) {
        if (write_interest_ == on) return;
        std::uint32_t ev = io_events::readable | io_events::read_hangup;
        if (on) ev |= io_events::writable;
        if (auto ec = poller_.modify(fd_, ev, &owner_)) {
            user_.stream_failed(ec);
            return;
        }
        write_interest_ = on;
    }

    poller& poller_;
    const int fd_;
    reactor_object& owner_;
    stream_user& user_;
    bool paused_ = false;  // the user does not take bytes now
    bool pending_ = false;  // the socket may still hold bytes we did not read
    bool write_interest_ = false;  // EPOLLOUT registered: a write hit a full socket buffer
    bool hangup_ = false;  // the peer shut its side: read until 0, not just until a short read
    bool closed_ = false;
};

class epoll_acceptor final : public acceptor_io {
public:
    epoll_acceptor(poller& p, int fd, reactor_object& owner, accept_user& user)
        : poller_(p), fd_(fd), owner_(owner), user_(user) {}

    std::error_code start() override { return poller_.add(fd_, io_events::readable, &owner_); }
    void ready(std::uint32_t) override {
        if (!paused_) accept_all();
    }
    // The pending connections stay in the backlog; with edge-triggered readiness nothing would
    // tell us again, so resume() accepts at once.
    void pause() override { paused_ = true; }
    void resume() override {
        paused_ = false;
        accept_all();
    }
    void close() noexcept override {
        if (closed_) return;
        closed_ = true;
        poller_.remove(fd_);
    }

private:
    void accept_all() {
        while (!closed_ && !paused_) {
            sockaddr_storage addr{};
            socklen_t len = sizeof addr;
            unique_fd fd{::accept4(fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC)};
            if (fd) {
                user_.accepted(std::move(fd), &addr, len);
                continue;
            }
            const int e = errno;
            if (e == EAGAIN || e == EWOULDBLOCK) return;
            if (e == EINTR || e == ECONNABORTED || e == EPROTO) continue;
            if (user_.accept_failed(e)) paused_ = true;
            return;
        }
    }

    poller& poller_;
    const int fd_;
    reactor_object& owner_;
    accept_user& user_;
    bool paused_ = false;
    bool closed_ = false;
};

}  // namespace

std::unique_ptr<stream_io> make_epoll_stream(poller& p, int fd, reactor_object& owner, stream_user& user) {
    return std::make_unique<epoll_stream>(p, fd, owner, user);
}

std::unique_ptr<acceptor_io> make_epoll_acceptor(poller& p, int fd, reactor_object& owner, accept_user& user) {
    return std::make_unique<epoll_acceptor>(p, fd, owner, user);
}

}  // namespace strix::detail
