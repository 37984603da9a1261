#pragma once
// A blocking HTTP/1.1 client for tests: one connection, requests written as raw text, responses
// read one at a time (pipelined ones arrive together and are split here by Content-Length).
#include <support/loopback.hpp>

#include <cerrno>
#include <chrono>
#include <string>
#include <string_view>

namespace strix::test {

/// One parsed response; status 0 when none could be read (closed, timeout, garbage).
struct http_reply {
    int status = 0;
    std::string head;
    std::string body;
    bool has_header(std::string_view line) const { return head.find(line) != std::string::npos; }
};

/// A blocking HTTP/1.1 client connection that reads responses one at a time (pipelined ones
/// arrive together and are split here by Content-Length).
class http_client {
public:
    explicit http_client(std::uint16_t port) : fd_(connect_tcp(port)) {}
    ~http_client() {
        if (fd_ >= 0) ::close(fd_);
    }
    http_client(const http_client&) = delete;
    http_client& operator=(const http_client&) = delete;

    bool ok() const { return fd_ >= 0; }
    int fd() const { return fd_; }
    bool send(const std::string& s) { return send_all(fd_, s.data(), s.size()); }

    /// The next response; head_only: a HEAD's answer (Content-Length but no body).
    http_reply read(bool head_only = false) {
        http_reply r;
        std::size_t end;
        while ((end = buf_.find("\r\n\r\n")) == std::string::npos)
            if (!fill()) return r;
        r.head = buf_.substr(0, end + 4);
        buf_.erase(0, end + 4);
        if (r.head.rfind("HTTP/1.1 ", 0) != 0) return r;
        r.status = std::stoi(r.head.substr(9, 3));
        std::size_t length = 0;
        const auto cl = r.head.find("Content-Length: ");
        if (cl != std::string::npos && !head_only) length = std::stoul(r.head.substr(cl + 16));
        while (buf_.size() < length)
            if (!fill()) return http_reply{};
        r.body = buf_.substr(0, length);
        buf_.erase(0, length);
        return r;
    }
    /// Whether the server closes the connection within `within` (nothing else arriving first).
    bool closed_within(std::chrono::milliseconds within) { return buf_.empty() && wait_closed(fd_, within); }

private:
    bool fill() {
        char tmp[4096];
        ssize_t n;  // a signal (another test's engine) must not read as a closed connection
        do n = ::recv(fd_, tmp, sizeof tmp, 0);
        while (n < 0 && errno == EINTR);
        if (n <= 0) return false;
        buf_.append(tmp, static_cast<std::size_t>(n));
        return true;
    }
    int fd_;
    std::string buf_;
};

inline std::string get(const std::string& path, const std::string& extra = "") {
    return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
}

}  // namespace strix::test
