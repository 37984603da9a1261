#pragma once
// endpoint: where to listen or connect, over TCP or a Unix domain socket.
//
//   tcp://127.0.0.1:7000     tcp://[::1]:7000     tcp://localhost:7000
//   tcp://*:7000             (listen on every IPv4 address)     tcp://127.0.0.1:* or :0 (any free port)
//   ipc:///tmp/app.sock      unix:///tmp/app.sock      /tmp/app.sock      (a socket file)
//   ipc://@app               (Linux's abstract namespace: no file)
//
// Host names other than localhost are refused: resolving them blocks, and a shard never blocks.
// Resolve them before (off the shard) and pass the address.

#include <cstdint>
#include <string>
#include <string_view>

namespace strix {

struct endpoint {
    enum class transport : std::uint8_t { tcp, unix_socket };

    transport kind = transport::tcp;
    std::string host = "127.0.0.1";  // tcp: a numeric IPv4 or IPv6 address ("*" = any when listening)
    std::uint16_t port = 0;          // tcp: 0 = any free port when listening
    std::string path;                // unix: a file path, or "@name" for the abstract namespace

    static endpoint tcp(std::string host, std::uint16_t port);
    static endpoint unix_socket(std::string path);

    /// Parses the forms above. Throws std::invalid_argument with a message naming the problem
    /// ("endpoint 'tcp://x': missing ':port'"). Any thread.
    static endpoint parse(std::string_view text);

    /// "tcp://127.0.0.1:7000", "tcp://[::1]:7000" or "ipc:///tmp/app.sock". Any thread.
    std::string to_string() const;

    bool operator==(const endpoint&) const = default;
};

}  // namespace strix
