#pragma once
// hook_receiver: a small HTTP/1.1 server for the webhook tests, on 127.0.0.1. One thread accepts,
// one thread per connection reads requests (headers and a Content-Length body, keep-alive) and
// answers what the test's handler says: a status and body, after a delay, or never (hang). It
// records every request. stop() closes the port (clients are refused) and start() opens the
// same port again, so a test can take a receiver down and bring it back.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace strix::test {

struct hook_request {
    std::map<std::string, std::string> headers;  // names lowercased
    std::string body;
};

struct hook_response {
    int status = 200;
    std::string body;
    std::chrono::milliseconds delay{0};
    bool hang = false;  // never answer (until stop)
};

class hook_receiver {
public:
    using handler = std::function<hook_response(const hook_request&)>;

    explicit hook_receiver(handler h) : handler_(std::move(h)) {}
    ~hook_receiver() { stop(); }

    /// Listens on `port` (0: a free one, remembered for the next start). Test thread.
    void start(std::uint16_t port = 0) {
        if (port == 0) port = port_;
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port);
        if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 64) != 0)
            throw std::runtime_error("hook_receiver: cannot listen");
        socklen_t len = sizeof a;
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        stopping_ = false;
        acceptor_ = std::thread([this] { accept_loop(); });
    }

    /// Closes the port and every connection; a hanging answer ends unanswered. Test thread.
    void stop() {
        if (!acceptor_.joinable()) return;
        stopping_ = true;
        acceptor_.join();
        ::close(listen_fd_);
        std::vector<std::thread> conns;
        {
            std::lock_guard lk(mu_);
            for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
            conns.swap(conns_);
        }
        for (auto& t : conns) t.join();
    }

    std::uint16_t port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }
    std::vector<hook_request> requests() const {
        std::lock_guard lk(mu_);
        return requests_;
    }

private:
    void accept_loop() {
        while (!stopping_) {
            pollfd p{listen_fd_, POLLIN, 0};
            if (::poll(&p, 1, 20) <= 0) continue;
            const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0) continue;
            std::lock_guard lk(mu_);
            fds_.push_back(fd);
            conns_.emplace_back([this, fd] { serve(fd); });
        }
    }

    // Reads until `buf` holds a whole request; false when the peer closed or the receiver stops.
    bool read_request(int fd, std::string& buf, hook_request& req) {
        for (;;) {
            const std::size_t head_end = buf.find("\r\n\r\n");
            if (head_end != std::string::npos) {
                std::size_t length = 0;
                std::size_t at = buf.find("\r\n") + 2;
                while (at < head_end) {
                    const std::size_t eol = buf.find("\r\n", at);
                    const std::string line = buf.substr(at, eol - at);
                    const std::size_t colon = line.find(':');
                    std::string name = line.substr(0, colon);
                    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                    std::string value = line.substr(colon + 1);
                    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
                    req.headers[name] = value;
                    at = eol + 2;
                }
                if (req.headers.count("content-length")) length = std::stoul(req.headers["content-length"]);
                if (buf.size() >= head_end + 4 + length) {
                    req.body = buf.substr(head_end + 4, length);
                    buf.erase(0, head_end + 4 + length);
                    return true;
                }
                req.headers.clear();
            }
            char chunk[16384];
            const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
            if (n <= 0) return false;
            buf.append(chunk, static_cast<std::size_t>(n));
        }
    }

    void serve(int fd) {
        std::string buf;
        for (;;) {
            hook_request req;
            if (!read_request(fd, buf, req)) break;
            {
                std::lock_guard lk(mu_);
                requests_.push_back(req);
            }
            const hook_response r = handler_(req);
            if (r.hang) {
                while (!stopping_) std::this_thread::sleep_for(std::chrono::milliseconds(10));
                break;
            }
            if (r.delay.count() > 0) std::this_thread::sleep_for(r.delay);
            const std::string out =
                "HTTP/1.1 " + std::to_string(r.status) +
                " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(r.body.size()) +
                "\r\n\r\n" + r.body;
            if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) break;
        }
        std::lock_guard lk(mu_);
        ::close(fd);
        std::erase(fds_, fd);
    }

    handler handler_;
    std::uint16_t port_ = 0;
    int listen_fd_ = -1;
    std::atomic<bool> stopping_{false};
    mutable std::mutex mu_;
    std::vector<int> fds_;
    std::vector<std::thread> conns_;
    std::vector<hook_request> requests_;
    std::thread acceptor_;
};

}  // namespace strix::test
