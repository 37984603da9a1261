#pragma once
// shared_buffer: an immutable byte block shared by reference, e.g. one encoded broadcast message
// queued on many sessions (possibly on many shards) without copying.
//
// Header and bytes live in ONE allocation:
//
//   ::operator new(data_offset() + size)
//   +--------------------------------+---------------------------------+
//   | shared_buffer (count, size_)   | size bytes, data()              |
//   +--------------------------------+---------------------------------+
//   ^ this                           ^ this + data_offset() (16-byte aligned)
//
// Thread contract: the creator writes the bytes before sharing the buffer, and nobody writes them
// afterwards. Copies and releases of shared_buffer_ptr are safe from any thread (atomic count);
// the last release frees the block on whichever thread drops it.
//
// Blocks of 4 KiB to 256 KiB (header included) come from and go back to buffer_cache, which keeps
// them mapped for the next create() instead of letting malloc trim them (see buffer_cache.hpp).

#include <strix/core/buffer_cache.hpp>
#include <strix/core/intrusive_ptr.hpp>

#include <cstddef>
#include <new>  // std::destroying_delete_t, std::bad_alloc

namespace strix {

class shared_buffer final : public atomic_ref_counted<shared_buffer> {
public:
    /// Allocates a buffer of `size` uninitialized bytes (0 is allowed) and returns the first
    /// reference. Throws std::bad_alloc like new. Any thread.
    static intrusive_ptr<shared_buffer> create(std::size_t size);

    /// The bytes. Write only before the buffer is shared; read from any holder's thread.
    std::byte* data() noexcept { return reinterpret_cast<std::byte*>(this) + data_offset(); }
    /// The bytes, read-only. Any thread holding a reference.
    const std::byte* data() const noexcept { return reinterpret_cast<const std::byte*>(this) + data_offset(); }
    /// Byte count given to create(). Any thread holding a reference.
    std::size_t size() const noexcept { return size_; }

    shared_buffer(const shared_buffer&) = delete;
    shared_buffer& operator=(const shared_buffer&) = delete;

    // Public only because intrusive_release() deletes through the derived type. Never delete a
    // shared_buffer yourself: drop the last shared_buffer_ptr.
    ~shared_buffer() = default;
    /// Destroys the buffer and frees the single block create() obtained, to buffer_cache or to
    /// ::operator delete by its size (a destroying delete: the size is read before the header
    /// is gone). Called by the delete in intrusive_release().
    static void operator delete(shared_buffer* p, std::destroying_delete_t) noexcept {
        const std::size_t block = data_offset() + p->size_;
        p->~shared_buffer();
        if (cached(block))
            buffer_cache::give(p, block);
        else
            ::operator delete(static_cast<void*>(p));
    }

private:
    explicit shared_buffer(std::size_t size) noexcept : size_(size) {}

    // Offset of the bytes from `this`: the header rounded up to 16 so the payload is aligned for
    // any scalar a codec may read from it.
    static constexpr std::size_t data_offset() noexcept;
    static constexpr bool cached(std::size_t block) noexcept {
        return block >= buffer_cache::min_bytes && block <= buffer_cache::max_bytes;
    }

    std::size_t size_;
};

constexpr std::size_t shared_buffer::data_offset() noexcept {
    constexpr std::size_t align = 16;
    return (sizeof(shared_buffer) + align - 1) & ~(align - 1);
}

inline intrusive_ptr<shared_buffer> shared_buffer::create(std::size_t size) {
    if (size > static_cast<std::size_t>(-1) - data_offset()) throw std::bad_alloc();
    const std::size_t bytes = data_offset() + size;
    void* block = cached(bytes) ? buffer_cache::take(bytes) : ::operator new(bytes);
    // The constructor cannot throw, so no placement-delete path is needed.
    return intrusive_ptr<shared_buffer>(::new (block) shared_buffer(size));
}

/// The handle every owner holds.
using shared_buffer_ptr = intrusive_ptr<shared_buffer>;

}  // namespace strix
