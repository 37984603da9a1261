#pragma once
// Helpers for black-box tests over loopback: blocking client sockets with timeouts, the echo
// shoot-out's framing, child processes. Everything is bounded in time; nothing leaves 127.0.0.1.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "free_port.hpp"

namespace strix::test {

using bytes = std::vector<std::byte>;

inline void set_timeouts(int fd, std::chrono::milliseconds t) {
    timeval tv{static_cast<time_t>(t.count() / 1000), static_cast<suseconds_t>((t.count() % 1000) * 1000)};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/// Blocking TCP connection to 127.0.0.1:port with 5 s send/receive timeouts; -1 on failure.
/// rcvbuf > 0 sets SO_RCVBUF before connecting (a slow reader): shrunk after the handshake, the
/// buffer cannot hold the window already advertised, the kernel drops segments and both ends fall
/// into retransmission backoff for seconds.
inline int connect_tcp(std::uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(5),
                       int rcvbuf = 0) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) {
        ::close(fd);
        return -1;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    set_timeouts(fd, timeout);
    return fd;
}

/// Blocking TCP connection to 127.0.0.1:port from the loopback address `source` (127.0.0.x: all of
/// 127/8 is local on Linux, so a test can play several client addresses); the fd, or -errno.
/// The source port is picked at connect() for the whole 4-tuple (IP_BIND_ADDRESS_NO_PORT): a
/// bind-time pick must avoid every port of the address in TIME_WAIT, which tests running beside
/// this one leave by the thousand. -ECONNRESET means the server accepted and reset the connection
/// before this thread returned from connect() (a server refusing at accept).
inline int connect_from(const char* source, std::uint16_t port,
                        std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &local.sin_addr);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) < 0 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) {
        const int err = errno;
        ::close(fd);
        return -err;
    }
    set_timeouts(fd, timeout);
    return fd;
}

inline int connect_unix(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) {
        ::close(fd);
        return -1;
    }
    set_timeouts(fd, std::chrono::seconds(5));
    return fd;
}

inline bool send_all(int fd, const void* data, std::size_t n) {
    auto* p = static_cast<const char*>(data);
    while (n) {
        ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}
inline bool send_all(int fd, const bytes& b) { return send_all(fd, b.data(), b.size()); }

/// Reads exactly n bytes (false on timeout, error or EOF).
inline bool recv_exact(int fd, void* out, std::size_t n) {
    auto* p = static_cast<char*>(out);
    while (n) {
        ssize_t r = ::recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

/// True if the peer closes the connection within `within` (EOF or reset), reading and
/// discarding anything that arrives first.
inline bool wait_closed(int fd, std::chrono::milliseconds within) {
    auto deadline = std::chrono::steady_clock::now() + within;
    char buf[4096];
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        int left = static_cast<int>(
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
        if (::poll(&p, 1, left > 0 ? left : 0) <= 0) continue;
        ssize_t r = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0) return true;
        if (r < 0 && errno != EAGAIN && errno != EINTR) return true;
    }
    return false;
}

/// The echo shoot-out's framing: 4-byte little-endian total length, then the body.
inline bytes frame_le32(const bytes& body) {
    auto total = static_cast<std::uint32_t>(body.size() + 4);
    // Sized once and filled with memcpy (gcc 12 warns falsely on vector::insert here at -O3).
    bytes out(4 + body.size());
    for (int i = 0; i < 4; ++i) out[static_cast<std::size_t>(i)] = static_cast<std::byte>(total >> (8 * i));
    if (!body.empty()) std::memcpy(out.data() + 4, body.data(), body.size());
    return out;
}

/// Appends b to a (memcpy, for the same gcc 12 reason).
inline void append(bytes& a, const bytes& b) {
    std::size_t old = a.size();
    a.resize(old + b.size());
    if (!b.empty()) std::memcpy(a.data() + old, b.data(), b.size());
}

inline bytes random_bytes(std::mt19937& rng, std::size_t n) {
    bytes b(n);
    for (auto& x : b) x = static_cast<std::byte>(rng());
    return b;
}

/// Raises the soft descriptor limit to the hard one (tests with thousands of sockets).
inline void raise_fd_limit() {
    rlimit r{};
    ::getrlimit(RLIMIT_NOFILE, &r);
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
}

/// A child process running one of the built programs; killed (SIGKILL) if still alive at scope end.
class child {
public:
    /// Starts STRIX_BIN_DIR/<program> with args; stdout/stderr to `log` (or inherited).
    /// fd_limit > 0 caps the child's RLIMIT_NOFILE.
    child(const std::string& program, std::vector<std::string> args, const std::string& log = {}, rlim_t fd_limit = 0) {
        std::string path = std::string(STRIX_BIN_DIR) + "/" + program;
        const pid_t parent = ::getpid();
        pid_ = ::fork();
        if (pid_ == 0) {
            // A test that crashes or is killed takes its servers with it (its destructors never
            // run); the check closes the race with a parent that died before the prctl.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) ::_exit(127);
            if (!log.empty()) {
                int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
                ::dup2(fd, 1);
                ::dup2(fd, 2);
            }
            if (fd_limit) {
                rlimit r{fd_limit, fd_limit};
                ::setrlimit(RLIMIT_NOFILE, &r);
            } else {
                raise_fd_limit();
            }
            std::vector<char*> argv{path.data()};
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv(path.c_str(), argv.data());
            ::_exit(127);
        }
    }
    ~child() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    child(const child&) = delete;
    child& operator=(const child&) = delete;

    pid_t pid() const { return pid_; }
    void signal(int sig) { ::kill(pid_, sig); }
    /// Waits up to `within` for exit; returns the wait status, or -1 on timeout.
    int wait_exit(std::chrono::milliseconds within) {
        auto deadline = std::chrono::steady_clock::now() + within;
        while (std::chrono::steady_clock::now() < deadline) {
            int status = 0;
            pid_t r = ::waitpid(pid_, &status, WNOHANG);
            if (r == pid_) {
                pid_ = -1;
                return status;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return -1;
    }
    /// CPU seconds (user + system) the child has used so far.
    double cpu_seconds() const {
        std::ifstream f("/proc/" + std::to_string(pid_) + "/stat");
        std::string s((std::istreambuf_iterator<char>(f)), {});
        auto pos = s.rfind(')');
        if (pos == std::string::npos) return -1;
        std::vector<std::string> fields;
        std::string cur;
        for (char c : s.substr(pos + 2)) {
            if (c == ' ') {
                fields.push_back(cur);
                cur.clear();
            } else {
                cur += c;
            }
        }
        // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
        double ticks = std::stod(fields[11]) + std::stod(fields[12]);
        return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
    }
    /// Resident set size in KiB.
    long rss_kib() const {
        std::ifstream f("/proc/" + std::to_string(pid_) + "/status");
        std::string line;
        while (std::getline(f, line))
            if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
        return -1;
    }

private:
    pid_t pid_ = -1;
};

/// Waits until something accepts connections on 127.0.0.1:port (bounded).
inline bool wait_listening(std::uint16_t port, std::chrono::milliseconds within = std::chrono::seconds(10)) {
    auto deadline = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < deadline) {
        int fd = connect_tcp(port);
        if (fd >= 0) {
            ::close(fd);
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

/// Polls pred until it holds or `within` passes; returns its last value.
inline bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds within = std::chrono::seconds(10)) {
    auto deadline = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return pred();
}

/// The port a bound socket got.
inline std::uint16_t local_port_of(int fd) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    return ntohs(a.sin_port);
}

/// A TCP socket listening on 127.0.0.1 at a port the kernel picks (local_port_of), with this
/// backlog; -1 on failure. Nothing accepts on it unless the test does.
inline int listen_loopback(int backlog) {
    int l = ::socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, backlog) != 0) {
        ::close(l);
        return -1;
    }
    return l;
}

/// A temporary directory removed at scope end.
class temp_dir {
public:
    temp_dir() {
        char tmpl[] = "/tmp/strix-test-XXXXXX";
        if (::mkdtemp(tmpl)) path_ = tmpl;
    }
    ~temp_dir() {
        std::error_code ec;
        if (!path_.empty()) std::filesystem::remove_all(path_, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

}  // namespace strix::test
