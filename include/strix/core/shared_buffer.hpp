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
//
// A buffer may carry a release hook (create(size, hook)): a function and five words kept after
// the bytes, called on the thread that drops the last reference, once the block is freed. The
// ZeroMQ API uses it to run a zmq_msg_init_data free function when strix is done with the
// message's bytes, as libzmq does. Such a buffer must travel by reference (has_release_hook):
// copying its bytes and dropping it would end it early.

#include <strix/core/buffer_cache.hpp>
#include <strix/core/intrusive_ptr.hpp>

#include <cstddef>
#include <new>  // std::destroying_delete_t, std::bad_alloc

namespace strix {

/// What the last release of a buffer made by create(size, hook) calls: fn(hook), on the releasing
/// thread, after the block is freed. fn must not throw.
struct release_hook {
    void (*fn)(const release_hook&) noexcept = nullptr;
    void* words[5] = {};
};

class shared_buffer final : public atomic_ref_counted<shared_buffer> {
public:
    /// Allocates a buffer of `size` uninitialized bytes (0 is allowed) and returns the first
    /// reference. Throws std::bad_alloc like new. Any thread.
    static intrusive_ptr<shared_buffer> create(std::size_t size);
    /// The same, with a release hook (hook.fn not null). Any thread.
    static intrusive_ptr<shared_buffer> create(std::size_t size, const release_hook& hook);

    /// The bytes. Write only before the buffer is shared; read from any holder's thread.
    std::byte* data() noexcept { return reinterpret_cast<std::byte*>(this) + data_offset(); }
    /// The bytes, read-only. Any thread holding a reference.
    const std::byte* data() const noexcept { return reinterpret_cast<const std::byte*>(this) + data_offset(); }
    /// Byte count given to create(). Any thread holding a reference.
    std::size_t size() const noexcept { return size_; }
    /// Made with a release hook: holders must not drop it for a copy of its bytes. Any thread.
    bool has_release_hook() const noexcept { return hooked_; }

    shared_buffer(const shared_buffer&) = delete;
    shared_buffer& operator=(const shared_buffer&) = delete;

    // Public only because intrusive_release() deletes through the derived type. Never delete a
    // shared_buffer yourself: drop the last shared_buffer_ptr.
    ~shared_buffer() = default;
    /// Destroys the buffer and frees the single block create() obtained, to buffer_cache or to
    /// ::operator delete by its size (a destroying delete: the size is read before the header
    /// is gone). Called by the delete in intrusive_release().
    static void operator delete(shared_buffer* p, std::destroying_delete_t) noexcept {
        if (p->hooked_) [[unlikely]] {
            destroy_hooked(p);
            return;
        }
        free_block(p, data_offset() + p->size_);
    }

private:
    explicit shared_buffer(std::size_t size, bool hooked) noexcept : hooked_(hooked), size_(size) {}

    static intrusive_ptr<shared_buffer> make(std::size_t size, bool hooked);
    static void free_block(shared_buffer* p, std::size_t block) noexcept {
        p->~shared_buffer();
        if (cached(block))
            buffer_cache::give(p, block);
        else
            ::operator delete(static_cast<void*>(p));
    }
    // Frees a hooked buffer's block, then runs its hook (src/core/shared_buffer.cpp).
    static void destroy_hooked(shared_buffer* p) noexcept;
    // The block's bytes: header, payload, and the hook (aligned after the payload) when there is one.
    static constexpr std::size_t block_bytes(std::size_t size, bool hooked) noexcept {
        const std::size_t end = data_offset() + size;
        if (!hooked) return end;
        constexpr std::size_t align = alignof(release_hook);
        return ((end + align - 1) & ~(align - 1)) + sizeof(release_hook);
    }
    release_hook* hook_slot() noexcept {
        return reinterpret_cast<release_hook*>(reinterpret_cast<std::byte*>(this) + block_bytes(size_, true) -
                                               sizeof(release_hook));
    }

    // Offset of the bytes from `this`: the header rounded up to 16 so the payload is aligned for
    // any scalar a codec may read from it.
    static constexpr std::size_t data_offset() noexcept;
    static constexpr bool cached(std::size_t block) noexcept {
        return block >= buffer_cache::min_bytes && block <= buffer_cache::max_bytes;
    }

    bool hooked_;  // in the count's padding: the header stays 16 bytes
    std::size_t size_;
};

static_assert(sizeof(shared_buffer) == 16, "the flag lives in the count's padding");

constexpr std::size_t shared_buffer::data_offset() noexcept {
    constexpr std::size_t align = 16;
    return (sizeof(shared_buffer) + align - 1) & ~(align - 1);
}

inline intrusive_ptr<shared_buffer> shared_buffer::make(std::size_t size, bool hooked) {
    if (size > static_cast<std::size_t>(-1) - data_offset() - 2 * sizeof(release_hook)) throw std::bad_alloc();
    const std::size_t bytes = block_bytes(size, hooked);
    void* block = cached(bytes) ? buffer_cache::take(bytes) : ::operator new(bytes);
    // The constructor cannot throw, so no placement-delete path is needed.
    return intrusive_ptr<shared_buffer>(::new (block) shared_buffer(size, hooked));
}

inline intrusive_ptr<shared_buffer> shared_buffer::create(std::size_t size) { return make(size, false); }

inline intrusive_ptr<shared_buffer> shared_buffer::create(std::size_t size, const release_hook& hook) {
    auto b = make(size, true);
    ::new (b->hook_slot()) release_hook(hook);
    return b;
}

/// The handle every owner holds.
using shared_buffer_ptr = intrusive_ptr<shared_buffer>;

}  // namespace strix
