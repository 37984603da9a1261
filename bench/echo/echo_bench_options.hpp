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
};

}  // namespace strix
