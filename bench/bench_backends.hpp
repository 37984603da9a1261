#pragma once
// The poller backends the engine-level benchmarks (CrossCore_*, Session_*) run on: one row per
// backend the engine offers. Each benchmark is registered once per row, named the Apex Core
// report's way for the first row and with the row's suffix for the others
// (Session_EchoRoundTrip_io_uring/64), and labelled with the backend's name, so
// components_report.py can put them side by side.
//
// The engine has two: epoll (src/core/backend/epoll_*.cpp, the default) and io_uring
// (src/core/backend/uring_*.cpp). Where the kernel refuses io_uring the engine falls back to epoll
// and says so in its log; the uring rows then measure epoll again.
#include <strix/core/engine.hpp>

#include <string>

namespace strix_bench {

struct bench_backend {
    const char* name;    // shown as the benchmark's label
    const char* suffix;  // appended to the benchmark family's name ("" keeps Apex Core's names)
    void (*configure)(strix::engine_config&);

    /// family + suffix, e.g. "Session_EchoRoundTrip" or "Session_EchoRoundTrip_io_uring".
    std::string family(const char* base) const { return std::string(base) + suffix; }
};

inline const bench_backend bench_backends[] = {
    {"epoll", "", [](strix::engine_config& c) { c.io = strix::io_backend::epoll; }},  // the default
    {"io_uring", "_io_uring", [](strix::engine_config& c) { c.io = strix::io_backend::uring; }},
};

}  // namespace strix_bench
