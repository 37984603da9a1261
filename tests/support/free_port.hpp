#pragma once
// A TCP port for a server a test starts later (PostgreSQL, Redis, a metrics or API listener), or
// for an address nothing may answer on yet.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <random>
#include <stdexcept>

namespace strix::test {

/// A port on 127.0.0.1 that nothing holds now, chosen below the kernel's ephemeral range
/// (net.ipv4.ip_local_port_range, 32768-60999 by default). A port from bind(0) comes from that
/// range, where every outgoing connection of every test running beside this one takes its local
/// port too: a server started on it a moment later, or restarted on it after a kill, found it
/// taken (Redis in CI: "bind: Address already in use"), and a client retrying a connect to a port
/// nobody listens on may even connect to itself. Below the range only explicit binds take ports.
/// Where the range starts too low for that, the kernel's bind(0) pick. Throws when neither finds one.
inline std::uint16_t free_port() {
    const auto bind_loopback = [](std::uint16_t port) -> std::uint16_t {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return 0;
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port);
        socklen_t len = sizeof a;
        std::uint16_t got = 0;
        if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
            got = ntohs(a.sin_port);
        ::close(fd);
        return got;
    };
    constexpr unsigned lowest = 10000;  // above the well-known services' ports (PostgreSQL's 5432, Redis's 6379)
    unsigned first_ephemeral = 32768;
    std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> first_ephemeral;
    if (first_ephemeral >= lowest + 1000 && first_ephemeral <= 65536) {
        thread_local std::mt19937 rng{std::random_device{}()};
        std::uniform_int_distribution<unsigned> pick(lowest, first_ephemeral - 1);
        for (int attempt = 0; attempt < 100; ++attempt)
            if (const std::uint16_t p = bind_loopback(static_cast<std::uint16_t>(pick(rng)))) return p;
    }
    if (const std::uint16_t p = bind_loopback(0)) return p;
    throw std::runtime_error("free_port: no free TCP port on 127.0.0.1");
}

}  // namespace strix::test
