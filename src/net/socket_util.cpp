#include "net/socket_util.hpp"

#include <strix/core/log.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace strix::detail {
namespace {

[[noreturn]] void fail(int e, const std::string& what) { throw std::system_error(e, std::generic_category(), what); }

// Fills ss for ep; returns its length, or 0 with ec set.
socklen_t to_sockaddr(const endpoint& ep, sockaddr_storage& ss, std::error_code& ec) {
    ss = {};
    if (ep.kind == endpoint::transport::unix_socket) {
        auto* un = reinterpret_cast<sockaddr_un*>(&ss);
        un->sun_family = AF_UNIX;
        if (ep.path.empty() || ep.path.size() >= sizeof un->sun_path) {
            ec = std::make_error_code(std::errc::filename_too_long);
            return 0;
        }
        std::memcpy(un->sun_path, ep.path.data(), ep.path.size());
        socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + ep.path.size());
        if (ep.path[0] == '@') {
            un->sun_path[0] = '\0';  // abstract namespace: the name is the bytes after the NUL
        } else {
            ++len;  // count the terminating NUL of a file path
        }
        return len;
    }
    auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
    const std::string host = ep.host == "*" ? "0.0.0.0" : ep.host;
    if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(ep.port);
        return sizeof *v4;
    }
    if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(ep.port);
        return sizeof *v6;
    }
    ec = std::make_error_code(std::errc::invalid_argument);
    return 0;
}

}  // namespace

unique_fd listen_on(const endpoint& ep, int backlog, bool reuse_port) {
    const std::string where = ep.to_string();
    sockaddr_storage ss;
    std::error_code ec;
    const socklen_t len = to_sockaddr(ep, ss, ec);
    if (!len) {
        if (ep.kind == endpoint::transport::unix_socket)
            fail(ec.value(), "cannot listen on " + where + ": socket path too long or empty");
        fail(ec.value(), "cannot listen on " + where + ": not a numeric IPv4 or IPv6 address (use e.g. 127.0.0.1)");
    }
    const bool is_unix = ep.kind == endpoint::transport::unix_socket;
    if (is_unix && ep.path[0] != '@') {
        struct stat st {};
        if (::stat(ep.path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(ep.path.c_str());
    }
    unique_fd fd{::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
    if (!fd) fail(errno, "cannot create a socket for " + where);
    if (!is_unix) {
        int one = 1;
        ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (reuse_port && ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
            fail(errno, "cannot set SO_REUSEPORT on " + where);
    }
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) < 0) {
        int e = errno;
        fail(e, "cannot listen on " + where +
                    (e == EADDRINUSE ? " (another process holds the address; pick another port or path)" : ""));
    }
    if (::listen(fd.get(), backlog) < 0) fail(errno, "cannot listen on " + where);
    return fd;
}

endpoint bound_endpoint(int fd, const endpoint& requested) {
    endpoint e = requested;
    if (e.kind == endpoint::transport::tcp) e.port = local_port(fd);
    return e;
}

unique_fd start_connect(const endpoint& ep, bool& in_progress, std::error_code& ec) {
    in_progress = false;
    sockaddr_storage ss;
    const socklen_t len = to_sockaddr(ep, ss, ec);
    if (!len) return {};
    unique_fd fd{::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
    if (!fd) {
        ec = {errno, std::generic_category()};
        return {};
    }
    set_nodelay(fd.get());
    int rc;
    do {
        rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) return fd;
    if (errno == EINPROGRESS) {
        in_progress = true;
        return fd;
    }
    // EAGAIN on a Unix socket: the listener's backlog is full; the caller retries like a refusal.
    ec = {errno, std::generic_category()};
    return {};
}

void set_keepalive(int fd, const tcp_keepalive& ka) noexcept {
    if (ka.enable < 0 && ka.idle_s < 0 && ka.interval_s < 0 && ka.count < 0) return;
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) < 0 ||
        (a.ss_family != AF_INET && a.ss_family != AF_INET6))
        return;
    auto set = [fd](int level, int opt, int v) {
        if (v >= 0 && ::setsockopt(fd, level, opt, &v, sizeof v) < 0)
            log_limited(log_level::warn, "TCP keepalive option {}: {}", opt, std::strerror(errno));
    };
    set(SOL_SOCKET, SO_KEEPALIVE, ka.enable);
    set(IPPROTO_TCP, TCP_KEEPIDLE, ka.idle_s);
    set(IPPROTO_TCP, TCP_KEEPINTVL, ka.interval_s);
    set(IPPROTO_TCP, TCP_KEEPCNT, ka.count);
}

void set_nodelay(int fd) noexcept {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) < 0) return;
    if (ss.ss_family != AF_INET && ss.ss_family != AF_INET6) return;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::uint16_t local_port(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) < 0) return 0;
    if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
    return 0;
}

std::string describe_peer(const sockaddr_storage& addr, socklen_t) {
    char buf[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
        auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
        ::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
        std::string out(buf);
        out.append(":").append(std::to_string(ntohs(a->sin_port)));
        return out;
    }
    if (addr.ss_family == AF_INET6) {
        auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
        ::inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
        std::string out("[");
        out.append(buf).append("]:").append(std::to_string(ntohs(a->sin6_port)));
        return out;
    }
    return "unix";
}

}  // namespace strix::detail
