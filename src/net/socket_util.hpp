#pragma once
// Socket set-up helpers. Setup failures throw std::system_error with a message naming the
// address and the fix; per-connection calls return values.

#include <sys/socket.h>

#include <cstdint>
#include <string>

namespace strix::detail {

/// A non-blocking TCP listening socket on host:port with SO_REUSEADDR and SO_REUSEPORT.
/// Throws std::system_error ("cannot listen on 127.0.0.1:7000: Address already in use ...").
int listen_tcp(const std::string& host, std::uint16_t port, int backlog);

/// A non-blocking Unix stream listening socket at path (a stale socket file is replaced).
int listen_unix(const std::string& path, int backlog);

/// The port a bound socket got (for port 0).
std::uint16_t local_port(int fd);

/// "127.0.0.1:51234", "[::1]:5000" or "unix".
std::string describe_peer(const sockaddr_storage& addr, socklen_t len);

}  // namespace strix::detail
