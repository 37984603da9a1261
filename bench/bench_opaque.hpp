#pragma once
// opaque(v): makes a register-sized value unknown to the optimiser, so work that depends on it
// (reads through a pointer, a push of an item) cannot be hoisted out of a benchmark loop.
//
// Not benchmark::DoNotOptimize for values used afterwards: Google Benchmark 1.7.1 (Debian
// bookworm) implements DoNotOptimize(T&) with the two-alternative constraint "+m,r", and GCC 12
// -O3 returned a wrong pointer from it here (FlatBuffers_VerifyRead read garbage, then crashed;
// with "+r" it is correct). One register constraint is all these values need.
#include <type_traits>

namespace strix_bench {

template <class T>
    requires(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(void*))
inline void opaque(T& v) noexcept {
    asm volatile("" : "+r"(v));
}

}  // namespace strix_bench
