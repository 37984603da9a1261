// buffer_cache: per-thread bins of kept blocks, and a process-wide depot they trade with in
// batches. See include/strix/core/buffer_cache.hpp for why.
//
// Written here rather than taken from an allocator library (jemalloc, mimalloc, tcmalloc): those
// replace malloc for the whole process, which an engine linked into someone's program must not
// do; this keeps only the blocks of shared buffers, and only within its limits.
#include <strix/core/asan_poison.hpp>
#include <strix/core/buffer_cache.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

namespace strix::buffer_cache {
namespace {

// Classes: size(i) = (8 + i % 8) << (9 + i / 8), i.e. 4096, 4608, ... 7680, 8192, 9216, ...
// 262144 (i = 48).
constexpr int classes = 49;
constexpr int bin_slots = 64;  // most blocks one thread keeps of one class

constexpr std::size_t size_of(int i) noexcept { return static_cast<std::size_t>(8 + i % 8) << (9 + i / 8); }

// The smallest class holding n bytes, n in [min_bytes, max_bytes]. With m = n - 1 and its top
// four bits t (8..15) at bit msb - 3, the class size is (t + 1) << (msb - 3).
int class_of(std::size_t n) noexcept {
    if (n <= min_bytes) return 0;
    const std::size_t m = n - 1;
    const int msb = static_cast<int>(std::bit_width(m)) - 1;
    const int t = static_cast<int>(m >> (msb - 3));
    return (msb - 12) * 8 + t - 7;
}

static_assert(size_of(0) == min_bytes && size_of(classes - 1) == max_bytes);

void release_to_malloc(void* p, std::size_t n) noexcept {
    asan_unpoison(p, n);
    ::operator delete(p);
}

std::atomic<std::size_t> thread_limit{buffer_cache_limits{}.thread_bytes};
std::atomic<std::size_t> shared_limit{buffer_cache_limits{}.shared_bytes};

// How many blocks of class i one thread keeps: a quarter of its byte limit, so one busy class
// leaves room for others.
int bin_cap(int i, std::size_t thread_bytes) noexcept {
    return static_cast<int>(std::min<std::size_t>(bin_slots, thread_bytes / 4 / size_of(i)));
}

struct depot {
    std::mutex mu;
    std::array<std::vector<void*>, classes> bins;
    std::size_t bytes = 0;
    std::uint64_t gets = 0;  // refills since the last release_unused()

    // Keeps what fits under the shared limit, gives the rest to malloc. Blocks arrive poisoned.
    void put(int i, void* const* blocks, int n) noexcept {
        const std::size_t sz = size_of(i);
        const std::size_t limit = shared_limit.load(std::memory_order_relaxed);
        std::lock_guard lk(mu);
        for (int k = 0; k < n; ++k) {
            if (bytes + sz <= limit) {
                try {
                    bins[static_cast<std::size_t>(i)].push_back(blocks[k]);
                    bytes += sz;
                    continue;
                } catch (const std::bad_alloc&) {
                }
            }
            release_to_malloc(blocks[k], sz);
        }
    }

    // Moves up to n kept blocks of class i into out; returns how many.
    int get(int i, void** out, int n) noexcept {
        std::lock_guard lk(mu);
        auto& v = bins[static_cast<std::size_t>(i)];
        const int k = std::min(n, static_cast<int>(v.size()));
        for (int j = 0; j < k; ++j) {
            out[j] = v.back();
            v.pop_back();
        }
        bytes -= static_cast<std::size_t>(k) * size_of(i);
        if (k > 0) ++gets;
        return k;
    }

    // Gives every kept block to malloc; returns the bytes. With only_if_unused, only when no
    // thread refilled from the depot since the last such call.
    std::size_t clear(bool only_if_unused) noexcept {
        std::lock_guard lk(mu);
        const bool used = gets != 0;
        gets = 0;
        if (only_if_unused && used) return 0;
        const std::size_t freed = bytes;
        for (int i = 0; i < classes; ++i) {
            for (void* p : bins[static_cast<std::size_t>(i)]) release_to_malloc(p, size_of(i));
            bins[static_cast<std::size_t>(i)].clear();
        }
        bytes = 0;
        return freed;
    }
};

// Never destroyed: threads may give blocks back while the process exits.
depot& the_depot() {
    static depot* d = new depot;
    return *d;
}

struct thread_bins {
    struct bin {
        std::array<void*, bin_slots> blocks;
        int n = 0;
    };
    std::array<bin, classes> bins;
    std::size_t held = 0;
    std::uint64_t takes = 0;  // blocks handed out since the last release_unused()

    // Hands the `count` newest blocks of bin i (at most all of them) to the depot.
    void spill(int i, int count) noexcept {
        bin& b = bins[static_cast<std::size_t>(i)];
        count = std::min(count, b.n);
        b.n -= count;
        held -= static_cast<std::size_t>(count) * size_of(i);
        the_depot().put(i, b.blocks.data() + b.n, count);
    }

    void spill_all() noexcept {
        for (int i = 0; i < classes; ++i) spill(i, bins[static_cast<std::size_t>(i)].n);
    }
};

// Plain pointers, so they stay readable while the thread's destructors run; the guard (built on
// first use) hands the bins to the depot at thread exit, after which this thread keeps nothing.
thread_local thread_bins* tls_bins = nullptr;
thread_local bool tls_gone = false;

struct thread_guard {
    ~thread_guard() {
        if (tls_bins) {
            tls_bins->spill_all();
            delete tls_bins;
            tls_bins = nullptr;
        }
        tls_gone = true;
    }
};

thread_bins* local() noexcept {
    if (tls_bins || tls_gone) return tls_bins;
    try {
        static thread_local thread_guard guard;
        (void)guard;
        tls_bins = new thread_bins;
    } catch (...) {
        return nullptr;
    }
    return tls_bins;
}

}  // namespace

void configure(const buffer_cache_limits& l) noexcept {
    thread_limit.store(l.thread_bytes, std::memory_order_relaxed);
    shared_limit.store(l.shared_bytes, std::memory_order_relaxed);
}

buffer_cache_limits limits() noexcept {
    return {thread_limit.load(std::memory_order_relaxed), shared_limit.load(std::memory_order_relaxed)};
}

void* take(std::size_t bytes) {
    const int i = class_of(bytes);
    const std::size_t sz = size_of(i);
    if (thread_bins* t = local()) {
        auto& b = t->bins[static_cast<std::size_t>(i)];
        if (b.n == 0) {
            // Refill half a bin from the depot in one lock (a freeing thread feeds it in batches).
            const int want = std::max(1, bin_cap(i, thread_limit.load(std::memory_order_relaxed)) / 2);
            b.n = the_depot().get(i, b.blocks.data(), std::min(want, bin_slots));
            t->held += static_cast<std::size_t>(b.n) * sz;
        }
        if (b.n > 0) {
            void* p = b.blocks[static_cast<std::size_t>(--b.n)];
            t->held -= sz;
            ++t->takes;
            asan_unpoison(p, sz);
            return p;
        }
    }
    return ::operator new(sz);
}

void give(void* block, std::size_t bytes) noexcept {
    const int i = class_of(bytes);
    const std::size_t sz = size_of(i);
    asan_poison(block, sz);
    thread_bins* t = local();
    if (!t) {
        the_depot().put(i, &block, 1);
        return;
    }
    const std::size_t limit = thread_limit.load(std::memory_order_relaxed);
    const int cap = bin_cap(i, limit);
    auto& b = t->bins[static_cast<std::size_t>(i)];
    if (b.n >= cap || t->held + sz > limit) t->spill(i, std::max(1, (b.n + 1) / 2));
    if (b.n < cap && t->held + sz <= limit) {
        b.blocks[static_cast<std::size_t>(b.n++)] = block;
        t->held += sz;
        return;
    }
    the_depot().put(i, &block, 1);
}

std::size_t held_by_this_thread() noexcept { return tls_bins ? tls_bins->held : 0; }

std::size_t held_in_depot() noexcept {
    depot& d = the_depot();
    std::lock_guard lk(d.mu);
    return d.bytes;
}

void trim() noexcept {
    if (tls_bins) tls_bins->spill_all();
    the_depot().clear(false);
}

std::size_t release_unused() noexcept {
    if (thread_bins* t = tls_bins) {
        // A thread that only frees (the consuming end of a stream) hands its bins to the depot,
        // where the producing thread finds them; the depot itself goes to malloc once nobody
        // drew from it for a whole period.
        if (t->takes == 0) t->spill_all();
        t->takes = 0;
    }
    return the_depot().clear(true);
}

}  // namespace strix::buffer_cache
