#pragma once
// spsc_queue: bounded, wait-free single-producer single-consumer ring.
//
// The cross-shard mesh gives every ordered pair of shards one of these, so each queue has exactly
// one writer thread and one reader thread and needs no read-modify-write instructions: every
// operation is a bounded number of plain loads and stores with acquire/release ordering.
//
// Memory layout (one cache line per row; the two index lines are written by different threads,
// so they must never share a line or every push would invalidate the consumer's line):
//
//   +-- producer line --------------------+  written only by the producer
//   | tail_        next index to write    |  (atomic; read by the consumer when its cache is stale)
//   | head_cache_  last head_ it observed |  (plain; producer-private)
//   +-- consumer line --------------------+  written only by the consumer
//   | head_        next index to read     |  (atomic; read by the producer when its cache is stale)
//   | tail_cache_  last tail_ it observed |  (plain; consumer-private)
//   +-- read-only line -------------------+  written once by the constructor
//   | mask_, cells_                       |
//   +-------------------------------------+
//
//   cells_: [ 0 ][ 1 ][ 2 ] ... [ capacity-1 ]      cell of index i = cells_[i & mask_]
//                 ^head_ (oldest item)   ^tail_ (first free cell)
//
// head_ and tail_ grow without bound (64-bit, so they never wrap in practice); the queue holds
// tail_ - head_ items, is empty when they are equal and full when the difference is capacity().
// The cached copies mean a side only touches the other side's line when the ring looks full
// (producer) or empty (consumer), not on every operation.

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
class spsc_queue {
    static_assert(std::is_nothrow_destructible_v<T>, "queued items must not throw from their destructor");

public:
    using value_type = T;

    /// Creates an empty queue holding up to `capacity` rounded up to a power of two items.
    /// Throws std::invalid_argument when capacity is 0 or too large to round, std::bad_alloc
    /// when the ring cannot be allocated. Construct before sharing with the two threads.
    explicit spsc_queue(std::size_t capacity) : mask_(round_capacity(capacity) - 1), cells_(new cell[mask_ + 1]) {}

    spsc_queue(const spsc_queue&) = delete;
    spsc_queue& operator=(const spsc_queue&) = delete;

    /// Destroys the items still queued. No thread may be using the queue any more.
    ~spsc_queue() {
        if constexpr (!std::is_trivially_destructible_v<T>) {
            const std::size_t tail = tail_.load(std::memory_order_acquire);
            for (std::size_t i = head_.load(std::memory_order_relaxed); i != tail; ++i) std::destroy_at(at(i));
        }
    }

    /// Copies `item` in. Returns false (and leaves the queue unchanged) when full. Producer only.
    bool try_push(const T& item) noexcept(std::is_nothrow_copy_constructible_v<T>) { return try_emplace(item); }

    /// Moves `item` in. Returns false (and leaves `item` untouched) when full. Producer only.
    bool try_push(T&& item) noexcept(std::is_nothrow_move_constructible_v<T>) { return try_emplace(std::move(item)); }

    /// Constructs an item in place from `args`. Returns false when full (nothing is constructed).
    /// If the constructor throws, the queue is unchanged. Producer only.
    template <class... Args>
    bool try_emplace(Args&&... args) noexcept(std::is_nothrow_constructible_v<T, Args...>) {
        const std::size_t tail = tail_.load(std::memory_order_relaxed);
        if (tail - head_cache_ > mask_) {
            // Looks full: refresh our view of the consumer. Acquire pairs with its release in
            // pop, so the cell it vacated is really done with before we overwrite it.
            head_cache_ = head_.load(std::memory_order_acquire);
            if (tail - head_cache_ > mask_) return false;
        }
        ::new (raw(tail)) T(std::forward<Args>(args)...);
        tail_.store(tail + 1, std::memory_order_release);  // publishes the constructed item
        return true;
    }

    /// Moves up to `n` items in from first, first + 1, ... (each moved from once, in order) and
    /// publishes them with a single release store. Returns how many were pushed (0 when full):
    /// the caller resumes at first + that count. If a move constructor throws, the items
    /// already moved are published and the exception propagates. Producer only.
    template <class It>
    std::size_t try_push_batch(It first, std::size_t n) {
        const std::size_t tail = tail_.load(std::memory_order_relaxed);
        std::size_t room = capacity() - (tail - head_cache_);
        if (room < n) {
            head_cache_ = head_.load(std::memory_order_acquire);
            room = capacity() - (tail - head_cache_);
        }
        const std::size_t count = n < room ? n : room;
        index_publisher publish{tail_, tail};
        for (; publish.done < count; ++publish.done, ++first) ::new (raw(tail + publish.done)) T(std::move(*first));
        return count;
    }

    /// Moves the oldest item into `out`. Returns false (and leaves `out` untouched) when empty.
    /// Consumer only.
    bool try_pop(T& out) noexcept(std::is_nothrow_move_assignable_v<T>) {
        const std::size_t head = head_.load(std::memory_order_relaxed);
        if (head == tail_cache_) {
            // Looks empty: refresh our view of the producer. Acquire pairs with its release in
            // push, so the item's construction is visible before we read it.
            tail_cache_ = tail_.load(std::memory_order_acquire);
            if (head == tail_cache_) return false;
        }
        T* item = at(head);
        out = std::move(*item);
        std::destroy_at(item);
        head_.store(head + 1, std::memory_order_release);  // hands the cell back to the producer
        return true;
    }

    /// Calls `fn(T&&)` on up to `max` items, oldest first, destroying each after its call, and
    /// hands their cells back to the producer with a single release store at the end. Returns
    /// how many items were consumed (0 when empty). If `fn` throws, the items before it are
    /// consumed and the one it threw on stays at the front of the queue. Consumer only.
    template <class F>
    std::size_t pop_batch(F&& fn, std::size_t max) noexcept(std::is_nothrow_invocable_v<F&, T&&>) {
        const std::size_t head = head_.load(std::memory_order_relaxed);
        std::size_t ready = tail_cache_ - head;
        if (ready < max) {
            tail_cache_ = tail_.load(std::memory_order_acquire);
            ready = tail_cache_ - head;
        }
        const std::size_t count = max < ready ? max : ready;
        index_publisher publish{head_, head};
        for (; publish.done < count; ++publish.done) {
            T* item = at(head + publish.done);
            fn(std::move(*item));
            std::destroy_at(item);
        }
        return count;
    }

    /// Number of cells: the constructor's capacity rounded up to a power of two. Any thread.
    std::size_t capacity() const noexcept { return mask_ + 1; }

    /// Item count at some recent instant; exact only when neither side is active. Any thread.
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
    // Assumed line size: std::hardware_destructive_interference_size makes gcc warn
    // (-Winterference-size) when it shapes a type in a header, and 64 is right for x86-64 and
    // most AArch64 parts.
    static constexpr std::size_t line_size = 64;

    struct cell {
        alignas(T) std::byte bytes[sizeof(T)];
    };

    // Stores base + done into `index` on scope exit, so a batch is published exactly once, also
    // when a constructor or callback throws part-way.
    struct index_publisher {
        std::atomic<std::size_t>& index;
        std::size_t base;
        std::size_t done = 0;
        ~index_publisher() {
            if (done != 0) index.store(base + done, std::memory_order_release);
        }
    };

    static std::size_t round_capacity(std::size_t capacity) {
        if (capacity == 0) throw std::invalid_argument("spsc_queue: capacity must be at least 1");
        if (capacity > (std::size_t{1} << (sizeof(std::size_t) * 8 - 2)))
            throw std::invalid_argument("spsc_queue: capacity too large to round to a power of two");
        return std::bit_ceil(capacity);
    }

    // Cell storage for `index`, before an item is constructed there.
    void* raw(std::size_t index) const noexcept { return cells_[index & mask_].bytes; }

    // The live item at `index`.
    T* at(std::size_t index) const noexcept { return std::launder(static_cast<T*>(raw(index))); }

    alignas(line_size) std::atomic<std::size_t> tail_{0};
    std::size_t head_cache_ = 0;

    alignas(line_size) std::atomic<std::size_t> head_{0};
    std::size_t tail_cache_ = 0;

    alignas(line_size) const std::size_t mask_;
    const std::unique_ptr<cell[]> cells_;
};

}  // namespace strix
