#pragma once
// mpsc_queue: bounded, lock-free multi-producer single-consumer ring.
//
// For the cases where many threads feed one shard through a single queue (the mesh uses one
// spsc_queue per pair instead; this is the baseline it is measured against, and the fallback for
// producers that are not shards). Producers claim an index with a CAS on tail_; each cell carries
// a sequence number saying whose turn it is, so the consumer (there is only one) needs no CAS.
//
// Memory layout (one cache line per row):
//
//   +-- producers' line -----------------+  CAS-ed by every producer
//   | tail_   next index to claim        |
//   +-- consumer line -------------------+  written only by the consumer
//   | head_   next index to read         |  (atomic only so size_approx may read it)
//   +-- read-only line ------------------+  written once by the constructor
//   | mask_, cells_                      |
//   +------------------------------------+
//
//   cells_: [seq|item][seq|item] ... [seq|item]      cell of index i = cells_[i & mask_]
//
// A cell's seq, for the index i that maps to it on the current lap:
//
//   seq == i             free: the producer that claims i may construct its item here
//   seq == i + 1         holds item i: the consumer may take it
//   seq == i + capacity  the consumer is done: free for index i + capacity on the next lap
//
// Indices grow without bound (64-bit). Cells are not padded to a line each: that would multiply
// the ring's footprint by 64 / sizeof(cell) for a gain only under heavy producer contention.
// Lock-free, not wait-free: a producer that stalls between its claim and its publish holds up
// the consumer at that cell (pops report empty) until it resumes, though other producers may
// keep claiming cells behind it until the ring is full.

#include <atomic>
#include <bit>
#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace strix {

template <class T>
class mpsc_queue {
    static_assert(std::is_nothrow_destructible_v<T>, "queued items must not throw from their destructor");
    static_assert(std::is_nothrow_move_constructible_v<T>,
                  "a producer cannot give back a claimed cell, so building the item there must not throw");

public:
    using value_type = T;

    /// Creates an empty queue holding up to `capacity` rounded up to a power of two items, at
    /// least 2 (with one cell "holds item i" and "free for i + 1" would be the same seq).
    /// Throws std::invalid_argument when capacity is 0 or too large to round, std::bad_alloc
    /// when the ring cannot be allocated. Construct before sharing with other threads.
    explicit mpsc_queue(std::size_t capacity) : mask_(round_capacity(capacity) - 1), cells_(new cell[mask_ + 1]) {
        for (std::size_t i = 0; i <= mask_; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
    }

    mpsc_queue(const mpsc_queue&) = delete;
    mpsc_queue& operator=(const mpsc_queue&) = delete;

    /// Destroys the items still queued. No thread may be using the queue any more.
    ~mpsc_queue() {
        if constexpr (!std::is_trivially_destructible_v<T>) {
            const std::size_t tail = tail_.load(std::memory_order_acquire);
            for (std::size_t i = head_.load(std::memory_order_relaxed); i != tail; ++i) {
                if (cells_[i & mask_].seq.load(std::memory_order_acquire) == i + 1) std::destroy_at(at(i));
            }
        }
    }

    /// Copies `item` in. Returns false (and leaves the queue unchanged) when full. Any thread.
    bool try_push(const T& item) noexcept(std::is_nothrow_copy_constructible_v<T>) { return try_emplace(item); }

    /// Moves `item` in. Returns false (and leaves `item` untouched) when full. Any thread.
    bool try_push(T&& item) noexcept { return try_emplace(std::move(item)); }

    /// Constructs an item from `args`. Returns false when full. A constructor that may throw is
    /// run before a cell is claimed (then the item is moved in), so a throw leaves the queue
    /// unchanged. Any thread.
    template <class... Args>
    bool try_emplace(Args&&... args) noexcept(std::is_nothrow_constructible_v<T, Args...>) {
        if constexpr (std::is_nothrow_constructible_v<T, Args...>) {
            std::size_t index;
            cell* c = claim(index);
            if (c == nullptr) return false;
            ::new (static_cast<void*>(c->bytes)) T(std::forward<Args>(args)...);
            // Release pairs with the consumer's acquire of seq: the item is built before it looks.
            c->seq.store(index + 1, std::memory_order_release);
            return true;
        } else {
            T item(std::forward<Args>(args)...);
            return try_emplace(std::move(item));
        }
    }

    /// Moves the oldest item into `out`. Returns false (and leaves `out` untouched) when empty
    /// or when the oldest claimed cell is still being written. Consumer only.
    bool try_pop(T& out) noexcept(std::is_nothrow_move_assignable_v<T>) {
        const std::size_t head = head_.load(std::memory_order_relaxed);
        cell& c = cells_[head & mask_];
        // Acquire pairs with the producer's release in publish: its item is fully built.
        if (c.seq.load(std::memory_order_acquire) != head + 1) return false;
        T* item = at(head);
        out = std::move(*item);
        std::destroy_at(item);
        release(c, head);
        head_.store(head + 1, std::memory_order_relaxed);
        return true;
    }

    /// Calls `fn(T&&)` on up to `max` items, oldest first, destroying each after its call and
    /// handing its cell back to the producers; head_ is stored once at the end. Stops early at
    /// the first cell not yet published. Returns how many items were consumed. If `fn` throws,
    /// the items before it are consumed and the one it threw on stays at the front. Consumer only.
    template <class F>
    std::size_t pop_batch(F&& fn, std::size_t max) noexcept(std::is_nothrow_invocable_v<F&, T&&>) {
        const std::size_t head = head_.load(std::memory_order_relaxed);
        head_publisher publish{head_, head};
        for (; publish.done < max; ++publish.done) {
            const std::size_t index = head + publish.done;
            cell& c = cells_[index & mask_];
            if (c.seq.load(std::memory_order_acquire) != index + 1) break;
            T* item = at(index);
            fn(std::move(*item));
            std::destroy_at(item);
            release(c, index);
        }
        return publish.done;
    }

    /// Number of cells: the constructor's capacity rounded up to a power of two. Any thread.
    std::size_t capacity() const noexcept { return mask_ + 1; }

    /// Item count at some recent instant, counting cells claimed but not yet published; exact
    /// only when no thread is active. Any thread.
    std::size_t size_approx() const noexcept {
        // head_ first: tail_ only grows, so the tail read afterwards is never behind it.
        const std::size_t head = head_.load(std::memory_order_acquire);
        const std::size_t tail = tail_.load(std::memory_order_acquire);
        const std::size_t n = tail - head;
        return n > capacity() ? capacity() : n;
    }

    /// Whether the queue looked empty at some recent instant. Any thread.
    bool empty_approx() const noexcept { return size_approx() == 0; }

private:
    // Assumed line size; see spsc_queue.hpp for why not hardware_destructive_interference_size.
    static constexpr std::size_t line_size = 64;

    struct cell {
        std::atomic<std::size_t> seq;
        alignas(T) std::byte bytes[sizeof(T)];
    };

    // Stores base + done into head_ on scope exit: once per batch, also when fn throws.
    struct head_publisher {
        std::atomic<std::size_t>& head;
        std::size_t base;
        std::size_t done = 0;
        ~head_publisher() {
            if (done != 0) head.store(base + done, std::memory_order_relaxed);
        }
    };

    static std::size_t round_capacity(std::size_t capacity) {
        if (capacity == 0) throw std::invalid_argument("mpsc_queue: capacity must be at least 1");
        if (capacity > (std::size_t{1} << (sizeof(std::size_t) * 8 - 2)))
            throw std::invalid_argument("mpsc_queue: capacity too large to round to a power of two");
        return capacity < 2 ? 2 : std::bit_ceil(capacity);
    }

    // Claims the next index for this producer, stores it in `pos` and returns its cell, or
    // returns nullptr when full.
    cell* claim(std::size_t& pos) noexcept {
        pos = tail_.load(std::memory_order_relaxed);
        for (;;) {
            cell& c = cells_[pos & mask_];
            // Acquire pairs with the consumer's release: the previous lap's item is destroyed.
            const std::size_t seq = c.seq.load(std::memory_order_acquire);
            const auto lag = static_cast<std::ptrdiff_t>(seq - pos);
            if (lag == 0) {
                // The cell is free for pos; the CAS decides which producer gets it. Relaxed is
                // enough: the seq protocol, not tail_, carries the data dependencies.
                if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) return &c;
                // Failed: pos now holds the current tail; retry there.
            } else if (lag < 0) {
                return nullptr;  // still holds the item from one lap ago: full
            } else {
                pos = tail_.load(std::memory_order_relaxed);  // another producer took pos
            }
        }
    }

    // Hands the cell of `index` to the producer of index + capacity.
    void release(cell& c, std::size_t index) noexcept { c.seq.store(index + capacity(), std::memory_order_release); }

    T* at(std::size_t index) const noexcept { return std::launder(reinterpret_cast<T*>(cells_[index & mask_].bytes)); }

    alignas(line_size) std::atomic<std::size_t> tail_{0};
    alignas(line_size) std::atomic<std::size_t> head_{0};
    alignas(line_size) const std::size_t mask_;
    const std::unique_ptr<cell[]> cells_;
};

}  // namespace strix
