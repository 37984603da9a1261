#pragma once
// alloc_stats: live counters kept by every shard-local allocator (slab_pool, object_pool,
// bump_arena, block_arena).
//
// The struct is trivially copyable on purpose: the owning shard copies it into a snapshot
// (e.g. for a metrics message to another shard) without touching the allocator again.

#include <cstdint>
#include <type_traits>

namespace strix {

/// Counters of one allocator instance. Units depend on the allocator:
///   slab_pool / object_pool   in_use and peak count objects.
///   bump_arena / block_arena  in_use and peak count bytes consumed (alignment padding included);
///                             frees counts allocations given back by reset() / release().
/// `reused` counts allocations served from memory that had been handed out (and freed) before,
/// so reused <= allocs always holds.
struct alloc_stats {
    std::uint64_t in_use = 0;  ///< objects (slab) or bytes (arenas) currently handed out
    std::uint64_t peak = 0;    ///< highest in_use seen since construction
    std::uint64_t allocs = 0;  ///< successful allocations since construction
    std::uint64_t frees = 0;   ///< allocations given back (deallocate, or reset/release for arenas)
    std::uint64_t reused = 0;  ///< allocations that landed in previously used memory

    /// Percentage of allocations that reused memory, 0.0 when nothing was allocated yet.
    /// Any thread may call it on its own copy.
    double reuse_pct() const noexcept {
        return allocs == 0 ? 0.0 : 100.0 * static_cast<double>(reused) / static_cast<double>(allocs);
    }
};

static_assert(std::is_trivially_copyable_v<alloc_stats>, "alloc_stats must be publishable by memcpy");

}  // namespace strix
