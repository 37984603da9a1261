#pragma once
// Socket set-up helpers. Setup failures throw std::system_error with a message naming the
// address and the fix; per-connection calls return values.

#include <strix/core/unique_fd.hpp>
#include <strix/net/connection.hpp>
#include <strix/net/endpoint.hpp>

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <system_error>

namespace strix::detail {

/// A non-blocking listening socket at ep (SO_REUSEADDR; SO_REUSEPORT when reuse_port, so every
/// shard can bind its own listener on one port). A stale Unix socket file is replaced. Throws
/// std::system_error ("cannot listen on tcp://127.0.0.1:7000: Address already in use ...").
unique_fd listen_on(const endpoint& ep, int backlog, bool reuse_port);

/// The endpoint a bound socket listens on: `requested` with the real port (for port 0).
endpoint bound_endpoint(int fd, const endpoint& requested);

/// Starts a non-blocking connect to ep. On success returns the socket and sets in_progress when
/// the kernel completes the connection later (EINPROGRESS: wait for writability, then read
/// SO_ERROR). On failure returns an empty fd and sets ec.
unique_fd start_connect(const endpoint& ep, bool& in_progress, std::error_code& ec);

/// TCP_NODELAY on a TCP socket (no-op for other families).
void set_nodelay(int fd) noexcept;
/// Applies what ka sets (nothing for -1 fields) to a TCP socket; other sockets are left alone.
void set_keepalive(int fd, const tcp_keepalive& ka) noexcept;

/// The port a bound socket got (for port 0).
std::uint16_t local_port(int fd);

/// "127.0.0.1:51234", "[::1]:5000" or "unix".
std::string describe_peer(const sockaddr_storage& addr, socklen_t len);

}  // namespace strix::detail
