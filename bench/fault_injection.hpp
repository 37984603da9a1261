#pragma once
// Faults the smoke test (components_smoke_test.sh) injects to prove that the end-to-end rows
// check their work: with STRIX_BENCH_FAULT=<name> in the environment, the named benchmark
// breaks its own pipeline on purpose and must then report an error instead of a figure.
//   pipeline   FramePipeline's dispatcher routes one message type to another type's handler
//   echo       Session_EchoRoundTrip's server flips one byte in the 1st, 65th, 129th ... echo
#include <cstdlib>
#include <string_view>

namespace strix_bench {

inline bool fault_injected(std::string_view name) noexcept {
    const char* v = std::getenv("STRIX_BENCH_FAULT");
    return v != nullptr && name == v;
}

}  // namespace strix_bench
