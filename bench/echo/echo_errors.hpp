#pragma once
// strix-echo-bench's error reporting, shared by the echo run (echo_sampler.hpp's shared_state) and
// the handshake run (echo_handshake.cpp): the first error aborts the run, the first 20 are printed.

#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace strix {

struct run_errors {
    std::atomic<bool> abort{false};
    std::atomic<std::uint64_t> errors{0};
    std::mutex print_mu;
    std::uint32_t printed = 0;  // guarded by print_mu
    std::string tls_session;    // guarded by print_mu: the first handshake's version and cipher
};

/// Counts one error, prints it (the first 20 only) and aborts the run. Any thread.
[[gnu::format(printf, 2, 3)]] inline void report_error(run_errors& s, const char* fmt, ...) {
    s.errors.fetch_add(1, std::memory_order_relaxed);
    s.abort.store(true, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(s.print_mu);
    if (s.printed++ >= 20) return;
    std::fputs("strix-echo-bench: ERROR: ", stderr);
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
}

}  // namespace strix
