#pragma once
// ring_buffer: the per-session receive buffer. Bytes go in from readv() and come out in place
// (read_span / linearize) so a frame is parsed straight from the buffer without another copy.
//
// Positions are two 64-bit counters, read_ and write_, masked into a power-of-two storage:
//
//   contiguous (read_ & mask <= write_ & mask):
//
//     0            r = read_ & mask         w = write_ & mask         capacity
//     |  free      |########## readable ########|        free               |
//                  ^ read_span() ---------------^ ^ write_span() -----------^
//                                                 (write_iov adds [0, r) as a 2nd iovec)
//
//   wrapped (the readable bytes straddle the end of storage):
//
//     0                    w                    r                      capacity
//     |#### readable (B) ##|        free        |#### readable (A) #######|
//      read_iov = {A, B}    ^ write_span() -----^ ^ read_span() = A only --^
//
// size() = write_ - read_. When consume() empties the buffer both counters rewind to 0, so the
// next readv lands at offset 0 and a frame straddles the end only when the buffer stays busy.
// linearize(n) returns the first n readable bytes contiguously, moving data only when those n
// bytes straddle (then it rotates the readable region to offset 0, without allocating).
//
// Storage is owned (sized constructor) or borrowed (attach/detach), so a session can take a
// buffer from its shard's pool while it has data and hand it back when it is empty.
//
// Not thread-safe: one shard owns each instance and makes every call.

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace strix {

class ring_buffer {
public:
    /// No storage, capacity 0: nothing can be written until attach(). Any thread (construction).
    ring_buffer() noexcept = default;
    /// Owns storage of `capacity` bytes rounded up to a power of two (0 = no storage).
    /// Owning shard only from then on.
    explicit ring_buffer(std::size_t capacity);

    ring_buffer(const ring_buffer&) = delete;
    ring_buffer& operator=(const ring_buffer&) = delete;
    /// Moves storage, positions and contents; the source is left with no storage. Owning shard.
    ring_buffer(ring_buffer&& other) noexcept;
    ring_buffer& operator=(ring_buffer&& other) noexcept;
    ~ring_buffer() = default;

    /// Borrows `storage` of `capacity` bytes (a power of two, non-null). Aborts if storage is
    /// already attached or owned. The buffer starts empty. Owning shard only.
    void attach(std::byte* storage, std::size_t capacity) noexcept;
    /// Gives the storage up; aborts unless empty(). Returns the borrowed pointer, or nullptr if the
    /// storage was owned (it is freed) or there was none. Capacity is 0 afterwards. Owning shard.
    std::byte* detach() noexcept;
    /// True once storage is owned or attached. Owning shard only.
    bool has_storage() const noexcept { return data_ != nullptr; }

    /// Storage size in bytes (a power of two, or 0). Owning shard only.
    std::size_t capacity() const noexcept { return capacity_; }
    /// Readable (committed, not yet consumed) bytes. Owning shard only.
    std::size_t size() const noexcept { return static_cast<std::size_t>(write_ - read_); }
    /// Bytes that can still be committed. Owning shard only.
    std::size_t free_space() const noexcept { return capacity_ - size(); }
    /// No readable bytes. Owning shard only.
    bool empty() const noexcept { return write_ == read_; }
    /// No free space (also true with no storage). Owning shard only.
    bool full() const noexcept { return size() == capacity_; }

    /// The largest contiguous writable region at the write position (empty when full).
    /// Write into it, then commit() what was written. Owning shard only.
    std::span<std::byte> write_span() noexcept;
    /// Fills iov[0..2) with the free space in order (two entries when it wraps) for readv();
    /// returns the count (0 when full). `iov` must have room for 2. Owning shard only.
    int write_iov(iovec* iov) noexcept;
    /// Makes n bytes just written at the write position readable; aborts if n > free_space().
    /// Owning shard only.
    void commit(std::size_t n) noexcept;

    /// The largest contiguous readable region at the read position (may be shorter than size()
    /// when the data wraps). Owning shard only.
    std::span<const std::byte> read_span() const noexcept;
    /// Fills iov[0..2) with the readable bytes in order; returns the count (0 when empty).
    /// `iov` must have room for 2. Owning shard only.
    int read_iov(iovec* iov) const noexcept;
    /// Drops the first n readable bytes; aborts if n > size(). Emptying the buffer rewinds both
    /// positions to offset 0. Owning shard only.
    void consume(std::size_t n) noexcept;

    /// The first n readable bytes as one contiguous span; aborts if n > size(). Data moves only
    /// when those bytes straddle the end of storage: then the whole readable region is moved to
    /// offset 0 (the smaller of its two pieces through a scratch copy), which invalidates
    /// earlier spans. Owning shard only.
    std::span<const std::byte> linearize(std::size_t n);

    /// When at most `limit` bytes are readable, in one piece away from offset 0, moves them to
    /// offset 0 so the free space is one piece again and the next read cannot wrap a frame
    /// around the end (a partial frame left by the last read costs one small move instead of
    /// a linearize of everything read after it). Returns whether it moved anything. Invalidates
    /// earlier spans. Owning shard only.
    bool compact(std::size_t limit) noexcept;

    /// Copies as much of `bytes` as fits and commits it; returns the count. Owning shard only.
    std::size_t write(std::span<const std::byte> bytes) noexcept;
    /// Copies up to out.size() readable bytes into `out` and consumes them; returns the count.
    /// Owning shard only.
    std::size_t read(std::span<std::byte> out) noexcept;
    /// As read() but consumes nothing. Owning shard only.
    std::size_t peek(std::span<std::byte> out) const noexcept;
    /// Drops all readable bytes and rewinds to offset 0; storage is kept. Owning shard only.
    void clear() noexcept { read_ = write_ = 0; }

private:
    std::size_t offset(std::uint64_t pos) const noexcept { return static_cast<std::size_t>(pos) & (capacity_ - 1); }

    std::unique_ptr<std::byte[]> owned_;  // set when the storage is ours, null when borrowed
    std::byte* data_ = nullptr;
    std::size_t capacity_ = 0;
    std::uint64_t read_ = 0;
    std::uint64_t write_ = 0;
};

}  // namespace strix
