#pragma once
// AddressSanitizer hooks for memory strix keeps for reuse: the shard-local allocators (mem/) and
// buffer_cache's kept blocks.
//
// A pool or cache hands out memory that it got from operator new once, so ASan alone cannot tell
// a live slot from a freed one. They mark memory they hold but have not handed out as poisoned, so
// a use after deallocate() / reset() / the last release is reported like a use after free. Without
// ASan (-fsanitize=address) both functions compile to nothing.

#include <cstddef>

// STRIX_ASAN: 1 when this file is compiled with AddressSanitizer, else 0. gcc says so with
// __SANITIZE_ADDRESS__; clang 16 only through __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define STRIX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRIX_ASAN 1
#endif
#endif
#ifndef STRIX_ASAN
#define STRIX_ASAN 0
#endif

#if STRIX_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace strix {

/// Marks [p, p + n) as not addressable (under ASan). Any thread that owns the memory now.
inline void asan_poison(const void* p, std::size_t n) noexcept {
#if STRIX_ASAN
    ASAN_POISON_MEMORY_REGION(p, n);
#else
    (void)p;
    (void)n;
#endif
}

/// Marks [p, p + n) as addressable again (under ASan). Any thread that owns the memory now.
inline void asan_unpoison(const void* p, std::size_t n) noexcept {
#if STRIX_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, n);
#else
    (void)p;
    (void)n;
#endif
}

}  // namespace strix
