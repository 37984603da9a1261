#pragma once
// redis_server: a REAL, throw-away redis-server for tests, on a free port of 127.0.0.1.
//
//   redis_server redis;          // starts /usr/bin/redis-server, waits until it answers PING
//   redis.url();                 // "redis://127.0.0.1:<port>"
//   redis.kill(); redis.start(); // a crash and a restart on the same port (its data is gone)
//   // ~redis_server: SIGKILL, then its directory is removed
//
// No persistence (--save "" --appendonly no): a restart is an empty Redis, which is exactly the
// "Redis lost its data" case cluster mode must notice. The child gets PR_SET_PDEATHSIG, so a
// test that dies without its destructor (abort, sanitizer, ctest's timeout kill) takes its
// Redis with it. redis-server is a declared dependency (scripts/install-deps.sh): when it is
// missing the constructor throws saying so, and the test must FAIL, not skip.
// $STRIX_REDIS_SERVER overrides the binary.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "free_port.hpp"

namespace strix::test {

class redis_server {
public:
    /// Starts a server on a free port (port 0) or on `port`; throws std::runtime_error with the
    /// log's tail when it does not answer within 10 s.
    explicit redis_server(std::uint16_t port = 0) {
        binary_ = find_binary();
        char tmpl[] = "/tmp/strix-redis-XXXXXX";
        if (::mkdtemp(tmpl) == nullptr)
            throw std::runtime_error(std::string("redis_server: mkdtemp: ") + std::strerror(errno));
        dir_ = tmpl;
        if (port != 0) {
            port_ = port;
            start();
            return;
        }
        // The port was free a moment ago; another process may take it first.
        for (int attempt = 0;; ++attempt) {
            port_ = free_port();
            try {
                start();
                return;
            } catch (const std::exception&) {
                if (attempt == 4) {
                    cleanup();
                    throw;
                }
            }
        }
    }

    ~redis_server() { cleanup(); }
    redis_server(const redis_server&) = delete;
    redis_server& operator=(const redis_server&) = delete;

    /// Starts the server (again) on port(); blocks until it answers PING.
    void start() {
        if (pid_ > 0) return;
        const std::string log = dir_ + "/redis.log";
        std::vector<std::string> args{binary_,
                                      "--port",
                                      std::to_string(port_),
                                      "--bind",
                                      "127.0.0.1",
                                      "--save",
                                      "",
                                      "--appendonly",
                                      "no",
                                      "--daemonize",
                                      "no",
                                      "--protected-mode",
                                      "no",
                                      "--dir",
                                      dir_,
                                      "--logfile",
                                      log,
                                      "--databases",
                                      "1"};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        const pid_t parent = ::getpid();
        const pid_t pid = ::fork();
        if (pid < 0) throw std::runtime_error(std::string("redis_server: fork: ") + std::strerror(errno));
        if (pid == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) ::_exit(127);  // the test is already gone
            const int devnull = ::open("/dev/null", O_RDWR);
            if (devnull >= 0) {
                ::dup2(devnull, 0);
                ::dup2(devnull, 1);
                ::dup2(devnull, 2);
            }
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        pid_ = pid;
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < until) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("redis_server: redis-server exited at start on port " + std::to_string(port_) +
                                         ":\n" + log_tail());
            }
            if (ping()) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        kill();
        throw std::runtime_error("redis_server: no answer on port " + std::to_string(port_) + ":\n" + log_tail());
    }

    /// SIGKILL and reap: a crash. Its data is gone (nothing persisted).
    void kill() noexcept {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        pid_ = -1;
    }

    /// kill() then start() on the same port.
    void restart() {
        kill();
        start();
    }

    /// SIGSTOP / SIGCONT: a Redis that accepts nothing and answers nothing, without closing.
    void pause() noexcept {
        if (pid_ > 0) ::kill(pid_, SIGSTOP);
    }
    void resume() noexcept {
        if (pid_ > 0) ::kill(pid_, SIGCONT);
    }

    bool running() const noexcept { return pid_ > 0; }
    std::uint16_t port() const noexcept { return port_; }
    std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
    std::string log_tail(std::size_t max = 2000) const {
        std::ifstream f(dir_ + "/redis.log");
        std::stringstream ss;
        ss << f.rdbuf();
        std::string s = ss.str();
        return s.size() > max ? "..." + s.substr(s.size() - max) : s;
    }

private:
    static std::string find_binary() {
        const char* env = std::getenv("STRIX_REDIS_SERVER");
        const std::string path = env != nullptr && *env != '\0' ? env : "/usr/bin/redis-server";
        if (::access(path.c_str(), X_OK) != 0) {
            throw std::runtime_error("redis_server: " + path +
                                     " not found; install the 'redis-server' package (scripts/install-deps.sh) "
                                     "or set STRIX_REDIS_SERVER");
        }
        return path;
    }

    bool ping() const {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return false;
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port_);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        timeval tv{1, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        bool ok = false;
        if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
            ::send(fd, "PING\r\n", 6, MSG_NOSIGNAL) == 6) {
            char buf[16] = {};
            const auto n = ::recv(fd, buf, sizeof buf - 1, 0);
            ok = n >= 5 && std::strncmp(buf, "+PONG", 5) == 0;
        }
        ::close(fd);
        return ok;
    }

    void cleanup() noexcept {
        resume();
        kill();
        if (!dir_.empty()) {
            std::error_code ec;
            std::filesystem::remove_all(dir_, ec);
            dir_.clear();
        }
    }

    std::string binary_;
    std::string dir_;
    std::uint16_t port_ = 0;
    pid_t pid_ = -1;
};

}  // namespace strix::test
