#pragma once
// strix-echo-bench's command line, shared by its echo loop (echo_bench_client.cpp) and its
// handshake loop (echo_handshake.cpp).

#include <cstddef>
#include <cstdint>
#include <string>

#include "echo_tls.hpp"

namespace strix {

struct echo_bench_options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 0;
    std::uint32_t connections = 100;
    std::size_t size = 8;
    std::uint32_t depth = 1;
    int duration_s = 5;
    int warmup_s = 1;
    long server_pid = 0;
    std::string json;
    std::string mode = "multi";
    std::uint32_t threads = 1;
    int drain_timeout_s = 10;
    echo_tls_options tls;     // tls.enabled: --tls
    bool handshakes = false;  // --handshakes: connect, handshake, one echo, close, again
    bool resume = false;      // --resume: offer the last session of the same slot
    bool ws = false;          // --ws: WebSocket binary messages instead of the length prefix
    std::string ws_path = "/";
    bool broadcast = false;   // --broadcast (with --ws): every client receives every message
};

/// Bytes one message takes on the wire as the client sends it: 4 + size, or with --ws the
/// masked frame's header + size. Any thread.
std::size_t echo_client_wire_size(const echo_bench_options& o) noexcept;

/// Parses strix-echo-bench's command line; prints --help and exits 0, or prints a usage error and
/// exits 2 (echo_args.hpp). Main thread.
echo_bench_options parse_echo_bench_options(int argc, char** argv);

}  // namespace strix
