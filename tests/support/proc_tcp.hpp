#pragma once
// A socket's timer as /proc/net/tcp shows it, for checking TCP keepalive without its descriptor:
// an established socket with SO_KEEPALIVE and nothing in flight has timer 2 (keepalive) due in
// about TCP_KEEPIDLE seconds.
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace strix::test {

struct tcp_timer {
    int kind = 0;               // 0 none, 1 retransmit, 2 keepalive, ...
    double due_s = 0;           // seconds until it fires
};

/// The timer of the IPv4 socket whose local port is `local` and remote port is `remote`.
inline std::optional<tcp_timer> proc_tcp_timer(std::uint16_t local, std::uint16_t remote) {
    std::ifstream f("/proc/net/tcp");
    std::string line;
    std::getline(f, line);  // header
    while (std::getline(f, line)) {
        std::istringstream in(line);
        std::string sl, loc, rem, st, queues, timer;
        in >> sl >> loc >> rem >> st >> queues >> timer;
        auto port = [](const std::string& a) {
            return static_cast<std::uint16_t>(std::stoul(a.substr(a.find(':') + 1), nullptr, 16));
        };
        if (port(loc) != local || port(rem) != remote) continue;
        tcp_timer t;
        t.kind = std::stoi(timer.substr(0, timer.find(':')), nullptr, 16);
        // In clock ticks (USER_HZ, 100 on Linux).
        t.due_s = static_cast<double>(std::stoul(timer.substr(timer.find(':') + 1), nullptr, 16)) / 100.0;
        return t;
    }
    return std::nullopt;
}

}  // namespace strix::test
