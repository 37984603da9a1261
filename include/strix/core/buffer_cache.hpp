#pragma once
// buffer_cache: keeps the blocks of large shared buffers (4 KiB to 256 KiB) for reuse instead of
// giving them back to malloc.
//
// Why: a message of a few KiB is allocated by the application on one thread and freed where it is
// consumed, often a whole batch at once. glibc coalesces such a batch into its heap's top chunk,
// and once the top passes its 128 KiB trim threshold it hands the pages back to the kernel
// (madvise); the sender's next allocations fault the same pages in again (docs/link.md has the
// page-fault counts that showed it). Kept blocks are never trimmed, so they stay mapped and warm.
//
//   thread A: create() -> its own cache -> depot (one lock per batch) -> ::operator new
//   thread B: last release -> its own cache -> (full) half of it to the depot -> ::operator delete
//
// Block sizes are rounded up to one of 49 classes, 8 per doubling (4 KiB, 4.5 KiB, ... 256 KiB),
// so a block is at most 12.5 % larger than asked. Each thread keeps at most
// limits().thread_bytes, the process-wide depot at most limits().shared_bytes; what does not fit
// goes back to malloc. Smaller and larger blocks are not cached (glibc's per-thread cache handles
// the small ones; the large ones are mmapped by malloc).
//
// Kept blocks do not outlive their use: each shard's idle sweep calls release_unused() once a
// second, which gives the depot back to malloc after a period in which nobody drew from it.
//
// Under AddressSanitizer the kept blocks are poisoned, so a use after the last release is still
// reported.

#include <cstddef>

namespace strix {

/// How much memory the cache may keep. Both 0: nothing is kept (every block goes to malloc).
struct buffer_cache_limits {
    std::size_t thread_bytes = std::size_t{2} << 20;  ///< kept by each thread that frees blocks
    std::size_t shared_bytes = std::size_t{16} << 20; ///< kept in the process-wide depot
};

namespace buffer_cache {

/// Blocks of [min_bytes, max_bytes] bytes are cached; others go straight to malloc.
inline constexpr std::size_t min_bytes = 4096;
inline constexpr std::size_t max_bytes = 256 * 1024;

/// Sets the limits for blocks released from now on. Any thread; blocks already kept above a
/// lowered limit are given back as their bins next overflow (and at thread exit).
void configure(const buffer_cache_limits& l) noexcept;
/// The limits in force. Any thread.
buffer_cache_limits limits() noexcept;

/// A block of at least `bytes` bytes, 16-byte aligned (a kept one when there is one). Throws
/// std::bad_alloc like operator new. `bytes` must be in [min_bytes, max_bytes]. Any thread.
void* take(std::size_t bytes);
/// Gives back a block take(bytes) returned, with the same `bytes`. Any thread.
void give(void* block, std::size_t bytes) noexcept;

/// Bytes the calling thread keeps now, and bytes the depot keeps now (for tests and metrics).
std::size_t held_by_this_thread() noexcept;
std::size_t held_in_depot() noexcept;
/// Gives every block the calling thread keeps, then every block of the depot, back to malloc.
void trim() noexcept;
/// Called periodically (each shard's idle sweep calls it once a second): if the calling thread
/// took no block from its bins since its last call, its bins go to the depot; if no thread drew
/// from the depot since the last call from any thread, the depot goes to malloc. Returns the bytes
/// given to malloc, so a caller can ask malloc to return pages. An idle process keeps nothing
/// after two periods, apart from the bins of threads that never call this (application threads:
/// at most thread_bytes each, until they exit).
std::size_t release_unused() noexcept;

}  // namespace buffer_cache
}  // namespace strix
