#pragma once
// slab_pool: fixed-size objects from a free list, grown page by page.
//
// Page layout (one block of objects_per_page slots, aligned to `align`; from operator new, or
// from mmap when it is 128 KiB or more and a whole number of system pages, so that no malloc
// header shares a system page with it):
//
//   page  +--------+--------+--------+-- ... --+--------+
//         | slot 0 | slot 1 | slot 2 |         | slot k |     slot = object_size() bytes,
//         +--------+--------+--------+-- ... --+--------+     a multiple of the alignment
//                  ^fresh_                              ^fresh_end_
//
// allocate() pops the free list first (memory freed before: counted as `reused`), then carves the
// next never-used slot of the newest page, then adds a page. A freed slot stores the free-list
// link in its first bytes. Pages go back to the system only in the destructor, so a shard's
// footprint after warm-up is flat and allocate/deallocate never call into malloc.
//
// Not thread-safe: an instance belongs to one shard thread, and every call must come from it.

#include <strix/mem/alloc_stats.hpp>
#include <strix/core/asan_poison.hpp>

#include <cstddef>
#include <new>
#include <vector>

namespace strix {

class slab_pool {
public:
    /// Pool of slots of at least `object_size` bytes aligned to `align` (a power of two; raised to
    /// alignof(void*) if smaller), `objects_per_page` slots per page. No memory is taken until the
    /// first allocate(). Throws std::invalid_argument for a bad align or objects_per_page == 0, and
    /// std::length_error if a page would not fit in size_t. Owning shard thread only.
    explicit slab_pool(std::size_t object_size, std::size_t align = alignof(std::max_align_t),
                       std::size_t objects_per_page = 64);
    /// Returns every page to the system; slots still handed out become dangling. Owning shard thread only.
    ~slab_pool();

    slab_pool(const slab_pool&) = delete;
    slab_pool& operator=(const slab_pool&) = delete;

    /// One slot of object_size() bytes aligned to the pool's alignment; never null. The most
    /// recently freed slot is returned first (LIFO, cache-warm). Throws std::bad_alloc only when a
    /// new page is needed and the system refuses it. Owning shard thread only.
    void* allocate() {
        void* p;
        if (free_ != nullptr) {
            free_slot* s = free_;
            asan_unpoison(s, slot_size_);
            free_ = s->next;
            p = s;
            ++stats_.reused;
        } else {
            if (fresh_ == fresh_end_) grow();
            p = fresh_;
            fresh_ += slot_size_;
            asan_unpoison(p, slot_size_);
        }
        ++stats_.allocs;
        if (++stats_.in_use > stats_.peak) stats_.peak = stats_.in_use;
        return p;
    }

    /// Gives back a slot obtained from this pool's allocate() and not freed since; nullptr is
    /// ignored. Anything else (another pool's pointer, a double free) is undefined behaviour;
    /// sanitizer builds report a use of the slot after this call. Owning shard thread only.
    void deallocate(void* p) noexcept {
        if (p == nullptr) return;
        free_ = ::new (p) free_slot{free_};
        asan_poison(p, slot_size_);
        ++stats_.frees;
        --stats_.in_use;
    }

    /// Counters in objects (see alloc_stats). Owning shard thread only; copy it to publish.
    const alloc_stats& stats() const noexcept { return stats_; }
    /// Slot size: the requested object size rounded up to a multiple of alignment(). Owning shard thread only.
    std::size_t object_size() const noexcept { return slot_size_; }
    /// Alignment of every slot (the requested one, at least alignof(void*)). Owning shard thread only.
    std::size_t alignment() const noexcept { return align_; }
    /// Slots per page, as given to the constructor. Owning shard thread only.
    std::size_t objects_per_page() const noexcept { return per_page_; }
    /// Pages taken from the system so far (they are kept until destruction). Owning shard thread only.
    std::size_t pages() const noexcept { return pages_.size(); }

private:
    struct free_slot {
        free_slot* next;
    };

    // Slow path of allocate(): takes one more page from the system.
    void grow();

    free_slot* free_ = nullptr;
    std::byte* fresh_ = nullptr;      // next never-used slot of the newest page
    std::byte* fresh_end_ = nullptr;  // end of the newest page
    std::size_t slot_size_;
    std::size_t align_;
    std::size_t per_page_;
    bool mapped_ = false;  // pages come from mmap (see slab_pool.cpp)
    alloc_stats stats_;
    std::vector<void*> pages_;
};

}  // namespace strix
