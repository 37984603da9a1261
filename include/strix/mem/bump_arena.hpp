#pragma once
// bump_arena: monotonic allocation inside one fixed buffer, rewound by reset() once per request.
//
//   buffer  +-----------+-----+---------+--------------------------+
//           | alloc 1   | pad | alloc 2 |        free              |
//           +-----------+-----+---------+--------------------------+
//           0                           ^used()                    ^capacity()
//
// allocate() aligns the cursor and moves it forward; there is no per-allocation free. reset()
// moves the cursor back to 0, ending the lifetime of everything handed out since the last reset.
// The buffer is taken once in the constructor and never grows: when the request does not fit,
// allocate() returns nullptr and the caller falls back (e.g. to a block_arena or the heap).
//
// Not thread-safe: an instance belongs to one shard thread, and every call must come from it.

#include <strix/mem/alloc_stats.hpp>
#include <strix/core/asan_poison.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>

namespace strix {

class bump_arena {
public:
    /// Takes a buffer of `capacity` bytes (aligned to 64) from the system; throws std::bad_alloc if
    /// it cannot. Owning shard thread only.
    explicit bump_arena(std::size_t capacity);
    /// Returns the buffer; everything handed out becomes dangling. Owning shard thread only.
    ~bump_arena();

    bump_arena(const bump_arena&) = delete;
    bump_arena& operator=(const bump_arena&) = delete;

    /// `n` bytes aligned to `align` (a power of two, else abort), valid until the next reset() or
    /// destruction. Returns nullptr, and changes nothing, when the aligned request does not fit in
    /// what is left of the buffer. n == 0 yields a non-null pointer that must not be dereferenced.
    /// Owning shard thread only.
    void* allocate(std::size_t n, std::size_t align = alignof(std::max_align_t)) noexcept {
        if (!std::has_single_bit(align)) [[unlikely]]
            bad_align(align);
        const auto base = reinterpret_cast<std::uintptr_t>(buf_);
        const std::size_t start =
            static_cast<std::size_t>(((base + used_ + (align - 1)) & ~static_cast<std::uintptr_t>(align - 1)) - base);
        if (start > capacity_ || n > capacity_ - start) return nullptr;
        // Memory below the high-water mark was handed out before the last reset().
        if (start < high_) ++stats_.reused;
        const std::size_t end = start + n;
        stats_.in_use += end - used_;  // padding included: it is consumed buffer too
        if (stats_.in_use > stats_.peak) stats_.peak = stats_.in_use;
        ++stats_.allocs;
        used_ = end;
        if (end > high_) high_ = end;
        std::byte* p = buf_ + start;
        asan_unpoison(p, n);
        return p;
    }

    /// Rewinds to an empty buffer; every pointer handed out since the last reset() is dead (its
    /// memory is poisoned under ASan). Counts those allocations as freed. Owning shard thread only.
    void reset() noexcept {
        asan_poison(buf_, high_);
        used_ = 0;
        stats_.in_use = 0;
        stats_.frees = stats_.allocs;
    }

    /// Bytes consumed since the last reset(), alignment padding included. Owning shard thread only.
    std::size_t used() const noexcept { return used_; }
    /// Size of the buffer, fixed at construction. Owning shard thread only.
    std::size_t capacity() const noexcept { return capacity_; }
    /// Counters in bytes (see alloc_stats); in_use == used(). `reused` counts allocations that
    /// start below the highest offset ever used, i.e. in memory handed out before a reset().
    /// Owning shard thread only; copy it to publish.
    const alloc_stats& stats() const noexcept { return stats_; }

private:
    [[noreturn]] static void bad_align(std::size_t align) noexcept;

    std::byte* buf_;
    std::size_t capacity_;
    std::size_t used_ = 0;
    std::size_t high_ = 0;  // highest `used_` ever reached
    alloc_stats stats_;
};

}  // namespace strix
