#pragma once
// Scraping the chat server's metrics endpoint in tests: one HTTP/1.0 GET, and reading a metric.

#include <support/loopback.hpp>

#include <cstdint>
#include <string>

namespace strix::test {

/// GET path from 127.0.0.1:port; the whole response (headers and body), empty on failure.
inline std::string http_get(std::uint16_t port, const std::string& path) {
    int fd = connect_tcp(port);
    if (fd < 0) return {};
    std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    send_all(fd, req.data(), req.size());
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t r = ::recv(fd, buf, sizeof buf, 0);
        if (r <= 0) break;
        out.append(buf, static_cast<std::size_t>(r));
    }
    ::close(fd);
    return out;
}

/// The value of the metric line "name value" in a scrape, or -1.
inline long long metric_value(const std::string& text, const std::string& name) {
    auto pos = text.find("\n" + name + " ");
    if (pos == std::string::npos) return -1;
    return std::stoll(text.substr(pos + name.size() + 2));
}

}  // namespace strix::test
