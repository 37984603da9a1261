#pragma once
// strix-echo-bench --tls --handshakes: how many TLS connections a server sets up per second.
// See echo_handshake.cpp.

#include <netinet/in.h>

#include "echo_bench_options.hpp"
#include "echo_tls.hpp"

namespace strix {

/// Runs the handshake benchmark o describes against addr, prints a line per second and the
/// summary, writes --json, and returns the process's exit status (0 only when every handshake
/// and echo succeeded, at least one completed in the measured window, and with --resume at least
/// 90 % of them were resumed). Main thread.
int run_handshakes(const echo_bench_options& o, const sockaddr_in& addr, const echo_tls_context& tls);

}  // namespace strix
