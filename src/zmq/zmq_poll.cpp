// zmq_poll over sockets and file descriptors, zmq_proxy, zmq_proxy_steerable and zmq_device.
#include "zmq/zmq_shim.hpp"

#include <strix/link/poll.hpp>
#include <strix/link/proxy.hpp>

#include <poll.h>

#include <chrono>
#include <thread>
#include <vector>

namespace strix::zmq_abi {
namespace {

using clock = std::chrono::steady_clock;

bool pending_in(const sock& s) noexcept { return s.in_next < s.in.size(); }

// Readiness of one socket item now (ZMQ_EVENTS without rearming its fd).
short socket_ready(sock& s, short events) {
    short r = 0;
    link::blocking_socket& bs = s.live();
    if ((events & ZMQ_POLLIN) && (pending_in(s) || link::readable(bs))) r |= ZMQ_POLLIN;
    if ((events & ZMQ_POLLOUT) && link::writable(bs) && !s.waits_for_a_peer()) r |= ZMQ_POLLOUT;
    return r;
}

// Only sockets: strix's own poll, which sleeps on the sockets' futex words.
int poll_sockets(zmq_pollitem_t* items, int n, long timeout, std::vector<sock*>& socks) {
    std::vector<link::poll_item> li(static_cast<std::size_t>(n));
    int ready = 0;
    for (int i = 0; i < n; ++i) {
        items[i].revents = 0;
        if (socks[i] && pending_in(*socks[i]) && (items[i].events & ZMQ_POLLIN)) {
            items[i].revents = ZMQ_POLLIN;
            ++ready;
        }
        li[i].socket = &socks[i]->live();
        li[i].events = static_cast<std::uint8_t>(items[i].events & (ZMQ_POLLIN | ZMQ_POLLOUT));
    }
    if (ready) return ready;
    link::poll(li, std::chrono::milliseconds(timeout < 0 ? -1 : timeout));
    for (int i = 0; i < n; ++i) {
        items[i].revents = static_cast<short>(li[i].revents);
        ready += items[i].revents != 0;
    }
    return ready;
}

// Sockets and descriptors: the sockets' notify fds beside the others in poll(2).
int poll_mixed(zmq_pollitem_t* items, int n, long timeout, std::vector<sock*>& socks) {
    const auto deadline = clock::now() + std::chrono::milliseconds(timeout < 0 ? 0 : timeout);
    std::vector<pollfd> fds(static_cast<std::size_t>(n));
    for (;;) {
        int ready = 0;
        for (int i = 0; i < n; ++i) {
            items[i].revents = 0;
            if (socks[i]) {
                link::blocking_socket& bs = socks[i]->live();
                fds[i] = {bs.notify_fd(), POLLIN, 0};
                bs.clear_notify();
                items[i].revents = socket_ready(*socks[i], items[i].events);
            } else {
                short ev = 0;
                if (items[i].events & ZMQ_POLLIN) ev |= POLLIN;
                if (items[i].events & ZMQ_POLLOUT) ev |= POLLOUT;
                if (items[i].events & ZMQ_POLLPRI) ev |= POLLPRI;
                fds[i] = {items[i].fd, ev, 0};
            }
        }
        for (int i = 0; i < n; ++i) ready += items[i].revents != 0;
        int wait = 0;
        if (!ready) {
            if (timeout < 0)
                wait = -1;
            else
                wait = static_cast<int>(
                    std::max<long>(0, std::chrono::ceil<std::chrono::milliseconds>(deadline - clock::now()).count()));
        }
        const int rc = ::poll(fds.data(), static_cast<nfds_t>(n), wait);
        if (rc < 0) return fail(errno);
        for (int i = 0; i < n; ++i) {
            if (socks[i]) continue;
            short r = 0;
            if (fds[i].revents & POLLIN) r |= ZMQ_POLLIN;
            if (fds[i].revents & POLLOUT) r |= ZMQ_POLLOUT;
            if (fds[i].revents & POLLPRI) r |= ZMQ_POLLPRI;
            if (fds[i].revents & ~(POLLIN | POLLOUT | POLLPRI)) r |= ZMQ_POLLERR;
            if (r && !items[i].revents) ++ready;
            items[i].revents = static_cast<short>(items[i].revents | r);
        }
        if (ready) return ready;
        for (int i = 0; i < n; ++i)
            if (socks[i] && socks[i]->terminated()) return fail(ETERM);
        if (timeout >= 0 && clock::now() >= deadline) return 0;
    }
}

}  // namespace
}  // namespace strix::zmq_abi

using namespace strix::zmq_abi;

extern "C" {

int zmq_poll(zmq_pollitem_t* items, int n, long timeout) {
    if (n < 0) return fail(EINVAL);
    if (n == 0) {
        if (timeout > 0) std::this_thread::sleep_for(std::chrono::milliseconds(timeout));
        return 0;
    }
    if (!items) return fail(EFAULT);
    std::vector<sock*> socks(static_cast<std::size_t>(n), nullptr);
    bool fds = false;
    for (int i = 0; i < n; ++i) {
        if (items[i].socket) {
            socks[i] = as_sock(items[i].socket);
            if (!socks[i]) return -1;
            if (socks[i]->terminated()) return fail(ETERM);
            // Writability that depends on a peer arriving is seen through the socket's fd.
            if ((items[i].events & ZMQ_POLLOUT) && socks[i]->waits_for_a_peer()) fds = true;
        } else {
            fds = true;
        }
    }
    try {
        int rc = fds || n > 128 ? poll_mixed(items, n, timeout, socks) : poll_sockets(items, n, timeout, socks);
        if (rc == 0) {
            for (auto* s : socks)
                if (s && s->terminated()) return fail(ETERM);
        }
        return rc;
    } catch (...) {
        return fail(errno_of_exception());
    }
}

int zmq_proxy_steerable(void* frontend, void* backend, void* capture, void* control) {
    if (!frontend || !backend) return fail(EFAULT);  // libzmq's answer for these two
    sock* f = as_sock(frontend);
    if (!f) return -1;
    sock* b = as_sock(backend);
    if (!b) return -1;
    sock* cap = nullptr;
    sock* ctl = nullptr;
    if (capture && !(cap = as_sock(capture))) return -1;
    if (control && !(ctl = as_sock(control))) return -1;
    if (f->terminated()) return fail(ETERM);
    try {
        strix::link::proxy(f->live(), b->live(), cap ? &cap->live() : nullptr, ctl ? &ctl->live() : nullptr);
    } catch (...) {
        return fail(errno_of_exception());
    }
    // A TERMINATE ends it with 0; a terminated context with ETERM, as libzmq's.
    if (f->terminated() || b->terminated()) return fail(ETERM);
    return 0;
}

int zmq_proxy(void* frontend, void* backend, void* capture) {
    return zmq_proxy_steerable(frontend, backend, capture, nullptr);
}

int zmq_device(int, void* frontend, void* backend) { return zmq_proxy_steerable(frontend, backend, nullptr, nullptr); }

}  // extern "C"
