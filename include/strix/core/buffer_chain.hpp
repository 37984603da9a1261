#pragma once
// buffer_chain: a session's send queue. Many small send()s during a loop turn become one writev().
//
// The queue is a FIFO of segments, each a window into a shared_buffer:
//
//   head                                                          tail
//   [chunk A, 120..16384) [bcast X, 0..64) [bcast Y, 0..64) [chunk B, 0..300)
//    ^ partially written   ^ referenced, never copied         ^ append(bytes) grows this one
//
//   fill_iov() hands the front segments to writev(); consume(n) drops what was written and
//   advances into a partly written segment.
//
// Two kinds of segment:
//   chunk   a shared_buffer the chain allocated itself (chunk_size bytes, or more for a large
//           append). It never leaves the chain, so append(bytes) may copy into its unused tail:
//           1,000 appends of 8 bytes become one segment.
//   shared  a buffer referenced without copying (append(shared_buffer_ptr ...)), e.g. one encoded
//           broadcast queued on many sessions. The chain never writes into it.
//
// Memory: besides the queued chunks the chain keeps the chunk it is filling (rewound when every
// byte in it has been written) and one spare chunk, so a steady stream allocates nothing per turn.
// trim() gives both back, e.g. when a session goes idle.
//
// Not thread-safe: one shard owns each chain. Shared segments may be referenced by other shards
// at the same time (their count is atomic and their bytes immutable).

#include <strix/core/shared_buffer.hpp>

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

namespace strix {

class buffer_chain {
public:
    /// An empty queue whose copied bytes go into chunks of `chunk_size` bytes (must be > 0).
    /// Allocates nothing until the first append. Any thread (construction).
    explicit buffer_chain(std::size_t chunk_size = 16 * 1024);

    buffer_chain(const buffer_chain&) = delete;
    buffer_chain& operator=(const buffer_chain&) = delete;
    /// Takes the other chain's segments and chunks; the other is left empty. Owning shard.
    buffer_chain(buffer_chain&& other) noexcept;
    buffer_chain& operator=(buffer_chain&& other) noexcept;
    ~buffer_chain() = default;

    /// Queues a copy of `bytes`: into the unused tail of the chain's current chunk (extending the
    /// tail segment when it is that chunk), the remainder into a new chunk of
    /// max(chunk_size, remainder) bytes. Never writes into a referenced shared buffer.
    /// May throw std::bad_alloc. Owning shard only.
    void append(std::span<const std::byte> bytes) {
        // Fast path, inlined: the bytes fit behind the tail segment in the current fill chunk.
        if (count_ && fill_ && bytes.size() <= fill_->size() - fill_used_) {
            segment& tail = slot(count_ - 1);
            if (tail.chunk && tail.buf == fill_ && tail.offset + tail.length == fill_used_) {
                copy_small(fill_->data() + fill_used_, bytes.data(), bytes.size());
                tail.length += bytes.size();
                fill_used_ += bytes.size();
                bytes_ += bytes.size();
                return;
            }
        }
        // Also inlined: the chain is empty (just flushed) and the fill chunk has room.
        if (count_ == 0 && fill_ && bytes.size() <= fill_->size() - fill_used_ && !bytes.empty()) {
            segment& s = segs_[head_];
            s.buf = fill_;
            s.offset = fill_used_;
            s.length = bytes.size();
            s.chunk = true;
            count_ = 1;
            copy_small(fill_->data() + fill_used_, bytes.data(), bytes.size());
            fill_used_ += bytes.size();
            bytes_ += bytes.size();
            return;
        }
        append_slow(bytes);
    }
    /// Queues bytes [offset, offset + length) of `buf` by reference, without copying. Aborts if
    /// buf is null or the range exceeds buf->size(); length 0 queues nothing. `buf` must not be
    /// written by anyone after this call (shared_buffer's contract). Owning shard only.
    void append(shared_buffer_ptr buf, std::size_t offset, std::size_t length);
    /// Queues all of `buf` by reference. Same contract as above. Owning shard only.
    void append(shared_buffer_ptr buf);

    /// Bytes queued and not yet consumed. Owning shard only.
    std::size_t size() const noexcept { return bytes_; }
    /// No bytes queued. Owning shard only.
    bool empty() const noexcept { return bytes_ == 0; }
    /// Number of queued segments (each becomes one iovec). Owning shard only.
    std::size_t segments() const noexcept { return count_; }

    /// Fills iov[0..k) with the first k = min(segments(), max_iov) segments' unwritten bytes, in
    /// order, for one writev(); returns k. The pointers stay valid until the next consume(),
    /// clear() or move. Owning shard only.
    int fill_iov(iovec* iov, int max_iov) const noexcept;
    /// Marks the first n queued bytes as written: drops whole segments (releasing their
    /// references) and advances into a partly written one. Aborts if n > size(). Owning shard.
    void consume(std::size_t n) noexcept;
    /// Drops every queued segment; the fill and spare chunks are kept. Owning shard only.
    void clear() noexcept;
    /// Frees the spare chunk, the fill chunk when no queued segment uses it, and a segment ring
    /// grown on the heap when what is queued fits inline. Call when the session goes idle so it
    /// holds no send memory. Owning shard only.
    void trim() noexcept;

private:
    struct segment {
        shared_buffer_ptr buf;
        std::size_t offset = 0;
        std::size_t length = 0;
        bool chunk = false;  // buf was allocated by this chain and may be written past its end
    };
    // Enough for a reply plus a few broadcasts per turn without a heap allocation.
    static constexpr std::size_t inline_segments = 4;
    // The first chunk of a chain that holds none (see start_chunk).
    static constexpr std::size_t first_chunk_bytes = 1024;

    segment& slot(std::size_t i) noexcept { return segs_[(head_ + i) & (cap_ - 1)]; }
    const segment& slot(std::size_t i) const noexcept { return segs_[(head_ + i) & (cap_ - 1)]; }
    void append_slow(std::span<const std::byte> bytes);
public:
    /// True while the chain holds chunk memory (a current or spare chunk) or a heap segment ring:
    /// what trim() may free. Owning thread only.
    bool has_chunks() const noexcept { return fill_ || spare_ || heap_; }

private:
    // Messages are mostly small: copy up to 16 bytes with two overlapping loads and stores
    // instead of a call into memcpy.
    static void copy_small(std::byte* dst, const std::byte* src, std::size_t n) noexcept {
        if (n >= 8 && n <= 16) {
            std::uint64_t a, b;
            std::memcpy(&a, src, 8);
            std::memcpy(&b, src + n - 8, 8);
            std::memcpy(dst, &a, 8);
            std::memcpy(dst + n - 8, &b, 8);
        } else if (n) {
            std::memcpy(dst, src, n);
        }
    }
    void push_back(segment&& s);
    void pop_front() noexcept;
    void grow();
    void start_chunk(std::size_t need);
    void take(buffer_chain& other) noexcept;

    // Segment ring: inline_ until it overflows, then heap_ (doubling). Capacity is a power of two.
    segment inline_[inline_segments];
    std::unique_ptr<segment[]> heap_;
    segment* segs_ = inline_;
    std::size_t cap_ = inline_segments;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    std::size_t bytes_ = 0;

    std::size_t chunk_size_;
    shared_buffer_ptr fill_;     // chunk append(bytes) copies into; bytes past fill_used_ are free
    std::size_t fill_used_ = 0;
    shared_buffer_ptr spare_;    // a written-out chunk of chunk_size_ kept for the next start_chunk
};

}  // namespace strix
