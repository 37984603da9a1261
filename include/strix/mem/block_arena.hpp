#pragma once
// block_arena: bump allocation over a chain of blocks, for temporaries of unknown total size
// (parsers, message builders).
//
//   head_ -> [hdr| used .......... |tail]  ->  [hdr| used ...... free ]  ->  [hdr| kept, unused ]
//                                               ^cur_    offset_^
//
// allocate() bumps inside the current block. When the request does not fit, it moves to the next
// block in the chain if that one can hold it (blocks kept by reset()), otherwise it inserts a new
// block right after the current one: block_size() bytes, or a block of its own for a request
// larger than that. The tail left behind in the previous block stays unused until reset().
// reset() rewinds to the first block and keeps every block, so a steady request pattern stops
// allocating after warm-up; release() gives every block back to the system.
//
// Not thread-safe: an instance belongs to one shard thread, and every call must come from it.

#include <strix/mem/alloc_stats.hpp>
#include <strix/core/asan_poison.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>

namespace strix {

class block_arena {
public:
    /// Arena whose regular blocks hold `block_size` usable bytes (at least 1). No memory is taken
    /// until the first allocate(). Owning shard thread only.
    explicit block_arena(std::size_t block_size = 64 * 1024);
    /// Same as release(). Owning shard thread only.
    ~block_arena();

    block_arena(const block_arena&) = delete;
    block_arena& operator=(const block_arena&) = delete;

    /// `n` bytes aligned to `align` (a power of two, else abort), valid until the next reset(),
    /// release() or destruction; never null. Throws std::bad_alloc when a new block is needed and
    /// the system refuses it. n == 0 yields a non-null pointer that must not be dereferenced.
    /// Owning shard thread only.
    void* allocate(std::size_t n, std::size_t align = alignof(std::max_align_t)) {
        if (!std::has_single_bit(align)) [[unlikely]]
            bad_align(align);
        if (cur_ != nullptr) {
            const std::size_t start = aligned_offset(cur_, offset_, align);
            if (start <= cur_->size && n <= cur_->size - start) return take(start, n);
        }
        return allocate_slow(n, align);
    }

    /// Rewinds to the start of the first block, keeping every block for reuse. Every pointer handed
    /// out since the last reset() is dead (poisoned under ASan); those allocations count as freed.
    /// Owning shard thread only.
    void reset() noexcept;
    /// Gives every block back to the system; pointers handed out are dead. Counters other than
    /// in_use are kept. Owning shard thread only.
    void release() noexcept;

    /// Blocks currently held (regular and dedicated ones). Owning shard thread only.
    std::size_t blocks() const noexcept { return blocks_; }
    /// Usable bytes of a regular block, as given to the constructor. Owning shard thread only.
    std::size_t block_size() const noexcept { return block_size_; }
    /// Counters in bytes (see alloc_stats): in_use is the bytes consumed since the last reset(),
    /// alignment padding included, block tails skipped over not included. `reused` counts
    /// allocations that start below a block's highest offset ever used, i.e. in memory handed out
    /// before a reset(). Owning shard thread only; copy it to publish.
    const alloc_stats& stats() const noexcept { return stats_; }

private:
    struct block {
        block* next;
        std::size_t size;  // usable bytes after the header
        std::size_t high;  // highest offset ever used in this block
    };
    // Usable bytes start here, so they are aligned as operator new's result is.
    static constexpr std::size_t header_bytes =
        (sizeof(block) + alignof(std::max_align_t) - 1) & ~(alignof(std::max_align_t) - 1);

    static std::byte* data(block* b) noexcept { return reinterpret_cast<std::byte*>(b) + header_bytes; }
    static std::size_t aligned_offset(block* b, std::size_t offset, std::size_t align) noexcept {
        const auto base = reinterpret_cast<std::uintptr_t>(data(b));
        return static_cast<std::size_t>(((base + offset + (align - 1)) & ~static_cast<std::uintptr_t>(align - 1)) -
                                        base);
    }

    // Hands out [start, start + n) of cur_; the caller checked that it fits.
    void* take(std::size_t start, std::size_t n) noexcept {
        if (start < cur_->high) ++stats_.reused;
        const std::size_t end = start + n;
        stats_.in_use += end - offset_;
        if (stats_.in_use > stats_.peak) stats_.peak = stats_.in_use;
        ++stats_.allocs;
        offset_ = end;
        if (end > cur_->high) cur_->high = end;
        std::byte* p = data(cur_) + start;
        asan_unpoison(p, n);
        return p;
    }

    // Moves to the next kept block or inserts a new one, then takes the request from it.
    void* allocate_slow(std::size_t n, std::size_t align);
    [[noreturn]] static void bad_align(std::size_t align) noexcept;

    block* head_ = nullptr;
    block* cur_ = nullptr;     // block being filled; null only when no block is held
    std::size_t offset_ = 0;   // bytes consumed in cur_
    std::size_t block_size_;
    std::size_t blocks_ = 0;
    alloc_stats stats_;
};

}  // namespace strix
