#pragma once
// object_pool<T>: a slab_pool that constructs and destroys T in its slots.
//
// For the per-shard objects created and dropped at a high rate (sessions, outbound buffers,
// timers): create() is a free-list pop plus the constructor, destroy() the destructor plus a push.
//
// Not thread-safe: an instance belongs to one shard thread, and every call must come from it.

#include <strix/core/format.hpp>
#include <strix/mem/alloc_stats.hpp>
#include <strix/mem/slab_pool.hpp>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>

namespace strix {

template <class T>
class object_pool {
public:
    using value_type = T;

    /// Pool of T slots, `objects_per_page` per page (see slab_pool). Owning shard thread only.
    explicit object_pool(std::size_t objects_per_page = 64) : pool_(sizeof(T), alignof(T), objects_per_page) {}

    /// Aborts if objects with a non-trivial destructor are still alive: their destructors would
    /// never run (a leak of whatever they own). Destroy every object first. Owning shard thread only.
    ~object_pool() {
        if constexpr (!std::is_trivially_destructible_v<T>) {
            if (pool_.stats().in_use != 0) {
                strix::print(stderr, "strix: object_pool destroyed with {} live objects; destroy() them first\n",
                             pool_.stats().in_use);
                std::abort();
            }
        }
    }

    object_pool(const object_pool&) = delete;
    object_pool& operator=(const object_pool&) = delete;

    /// Constructs a T from `args` in a pooled slot and returns it; never null. If the constructor
    /// throws, the slot goes back to the pool and the exception propagates (std::bad_alloc when a
    /// page cannot be had). Owning shard thread only.
    template <class... A>
    T* create(A&&... args) {
        void* p = pool_.allocate();
        try {
            return ::new (p) T(std::forward<A>(args)...);
        } catch (...) {
            pool_.deallocate(p);
            throw;
        }
    }

    /// Runs ~T() and returns the slot; nullptr is ignored. `p` must come from this pool's create()
    /// and not have been destroyed since. Owning shard thread only.
    void destroy(T* p) noexcept {
        if (p == nullptr) return;
        p->~T();
        pool_.deallocate(p);
    }

    /// Counters in objects (see alloc_stats). Owning shard thread only; copy it to publish.
    const alloc_stats& stats() const noexcept { return pool_.stats(); }
    /// Pages taken from the system so far. Owning shard thread only.
    std::size_t pages() const noexcept { return pool_.pages(); }

private:
    slab_pool pool_;
};

}  // namespace strix
