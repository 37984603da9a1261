#include <strix/mem/block_arena.hpp>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>

namespace strix {

block_arena::block_arena(std::size_t block_size) : block_size_(block_size == 0 ? 1 : block_size) {}

block_arena::~block_arena() { release(); }

void* block_arena::allocate_slow(std::size_t n, std::size_t align) {
    if (cur_ != nullptr && cur_->next != nullptr) {
        block* next = cur_->next;
        const std::size_t start = aligned_offset(next, 0, align);
        if (start <= next->size && n <= next->size - start) {
            cur_ = next;
            offset_ = 0;
            return take(start, n);
        }
    }
    // A new block. Its data start is aligned to max_align_t, so fewer than `align` bytes of
    // padding are ever needed: n + align always fits.
    if (n > std::numeric_limits<std::size_t>::max() - align - header_bytes) throw std::bad_alloc();
    const std::size_t size = n + align > block_size_ ? n + align : block_size_;
    block* b = ::new (::operator new(header_bytes + size)) block{nullptr, size, 0};
    asan_poison(data(b), size);
    if (cur_ == nullptr) {
        head_ = b;
    } else {
        // After the current block, so the kept blocks further on are still used this round.
        b->next = cur_->next;
        cur_->next = b;
    }
    ++blocks_;
    cur_ = b;
    offset_ = 0;
    return take(aligned_offset(b, 0, align), n);
}

void block_arena::reset() noexcept {
    for (block* b = head_; b != nullptr; b = b->next) asan_poison(data(b), b->high);
    cur_ = head_;
    offset_ = 0;
    stats_.in_use = 0;
    stats_.frees = stats_.allocs;
}

void block_arena::release() noexcept {
    for (block* b = head_; b != nullptr;) {
        block* next = b->next;
        asan_unpoison(data(b), b->size);
        ::operator delete(b, header_bytes + b->size);
        b = next;
    }
    head_ = cur_ = nullptr;
    offset_ = 0;
    blocks_ = 0;
    stats_.in_use = 0;
    stats_.frees = stats_.allocs;
}

void block_arena::bad_align(std::size_t align) noexcept {
    std::fprintf(stderr, "strix: block_arena::allocate: align %zu is not a power of two\n", align);
    std::abort();
}

}  // namespace strix
