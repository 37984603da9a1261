#include "metrics_endpoint.hpp"

#include <strix/core/log.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace strix::chat {
namespace {

bool write_all(int fd, const char* p, std::size_t n) {
    while (n) {
        ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

}  // namespace

metrics_endpoint::metrics_endpoint(std::uint16_t port, renderer render) : render_(std::move(render)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw std::runtime_error(std::string("cannot create the metrics socket: ") + std::strerror(errno));
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || ::listen(listen_fd_, 16) < 0) {
        int e = errno;
        ::close(listen_fd_);
        listen_fd_ = -1;
        throw std::runtime_error("cannot listen for metrics on 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(e) +
                                 " (choose another --metrics-port, or 0 to turn metrics off)");
    }
    socklen_t len = sizeof a;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0) {
        ::close(listen_fd_);
        throw std::runtime_error(std::string("cannot create an eventfd for the metrics thread: ") + std::strerror(errno));
    }
}

metrics_endpoint::~metrics_endpoint() {
    stop();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
}

void metrics_endpoint::start() {
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

void metrics_endpoint::stop() {
    if (!thread_.joinable()) return;
    std::uint64_t one = 1;
    [[maybe_unused]] auto w = ::write(wake_fd_, &one, sizeof one);
    thread_.join();
}

void metrics_endpoint::run() {
    for (;;) {
        pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            log(log_level::error, "metrics: poll: %s", std::strerror(errno));
            return;
        }
        if (fds[1].revents) return;
        if (!(fds[0].revents & POLLIN)) continue;
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        timeval tv{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        serve(fd);
        ::close(fd);
    }
}

void metrics_endpoint::serve(int fd) {
    // Read the request head (bounded); only the request line matters.
    std::string req;
    char buf[1024];
    while (req.find("\r\n\r\n") == std::string::npos && req.find("\n\n") == std::string::npos && req.size() < 8192) {
        ssize_t r = ::recv(fd, buf, sizeof buf, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        req.append(buf, static_cast<std::size_t>(r));
    }
    std::string status, body, type = "text/plain; charset=utf-8";
    if (req.rfind("GET /metrics ", 0) == 0 || req.rfind("GET /metrics?", 0) == 0) {
        status = "200 OK";
        body = render_();
        type = "text/plain; version=0.0.4; charset=utf-8";
    } else if (req.rfind("GET ", 0) == 0) {
        status = "404 Not Found";
        body = "metrics are at /metrics\n";
    } else {
        status = "400 Bad Request";
        body = "GET /metrics\n";
    }
    std::string head = "HTTP/1.0 " + status + "\r\nContent-Type: " + type + "\r\nContent-Length: " + std::to_string(body.size()) +
                       "\r\nConnection: close\r\n\r\n";
    if (write_all(fd, head.data(), head.size())) write_all(fd, body.data(), body.size());
}

}  // namespace strix::chat
