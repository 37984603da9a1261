#include "net/socket_util.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace strix::detail {
namespace {

[[noreturn]] void fail(int e, const std::string& what) { throw std::system_error(e, std::generic_category(), what); }

}  // namespace

int listen_tcp(const std::string& host, std::uint16_t port, int backlog) {
    sockaddr_storage ss{};
    socklen_t len;
    int family;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
    if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        len = sizeof *v4;
        family = AF_INET;
    } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        len = sizeof *v6;
        family = AF_INET6;
    } else {
        fail(EINVAL, "cannot listen on '" + host + "': not a numeric IPv4 or IPv6 address (use e.g. 127.0.0.1)");
    }
    const std::string where = host + ":" + std::to_string(port);
    int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail(errno, "cannot create a socket for " + where);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) {
        int e = errno;
        ::close(fd);
        fail(e, "cannot set SO_REUSEPORT on " + where);
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) < 0) {
        int e = errno;
        ::close(fd);
        fail(e, "cannot listen on " + where + (e == EADDRINUSE ? " (another process holds the port; pick another with --port)" : ""));
    }
    if (::listen(fd, backlog) < 0) {
        int e = errno;
        ::close(fd);
        fail(e, "cannot listen on " + where);
    }
    return fd;
}

int listen_unix(const std::string& path, int backlog) {
    sockaddr_un addr{};
    if (path.size() >= sizeof addr.sun_path) fail(ENAMETOOLONG, "unix socket path too long: " + path);
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(path.c_str());
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail(errno, "cannot create a unix socket for " + path);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 || ::listen(fd, backlog) < 0) {
        int e = errno;
        ::close(fd);
        fail(e, "cannot listen on unix socket " + path);
    }
    return fd;
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
