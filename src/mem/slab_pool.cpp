#include <strix/mem/slab_pool.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <limits>
#include <new>
#include <stdexcept>

namespace strix {

namespace {

std::size_t checked_align(std::size_t align) {
    if (!std::has_single_bit(align)) throw std::invalid_argument("slab_pool: align must be a power of two");
    // A free slot holds the list link, so it needs at least pointer alignment.
    return align < alignof(void*) ? alignof(void*) : align;
}

std::size_t slot_size_for(std::size_t object_size, std::size_t align) {
    std::size_t s = object_size < sizeof(void*) ? sizeof(void*) : object_size;
    if (s > std::numeric_limits<std::size_t>::max() - (align - 1))
        throw std::length_error("slab_pool: object_size too large");
    return (s + align - 1) & ~(align - 1);
}

// malloc serves a block this large with an mmap of its own, and puts its header in the page before
// the block: a page that stays resident even when the owner returned every slot's pages with
// madvise (the receive rings of idle sessions), 4 KiB per page of the pool. Such pages are mapped
// here instead, with no header.
constexpr std::size_t mapped_from = 128 * 1024;

bool maps_pages(std::size_t page_bytes, std::size_t align) noexcept {
    const auto sys_page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return page_bytes >= mapped_from && page_bytes % sys_page == 0 && sys_page % align == 0;
}

}  // namespace

slab_pool::slab_pool(std::size_t object_size, std::size_t align, std::size_t objects_per_page)
    : align_(checked_align(align)), per_page_(objects_per_page) {
    slot_size_ = slot_size_for(object_size, align_);
    if (per_page_ == 0) throw std::invalid_argument("slab_pool: objects_per_page must be at least 1");
    if (slot_size_ > std::numeric_limits<std::size_t>::max() / per_page_)
        throw std::length_error("slab_pool: page size overflows size_t");
    mapped_ = maps_pages(slot_size_ * per_page_, align_);
}

slab_pool::~slab_pool() {
    const std::size_t page_bytes = slot_size_ * per_page_;
    for (void* page : pages_) {
        asan_unpoison(page, page_bytes);
        if (mapped_)
            ::munmap(page, page_bytes);
        else
            ::operator delete(page, page_bytes, std::align_val_t{align_});
    }
}

void slab_pool::grow() {
    const std::size_t page_bytes = slot_size_ * per_page_;
    // Make room in the bookkeeping first so a failure there cannot leak the page.
    if (pages_.size() == pages_.capacity()) pages_.reserve(pages_.empty() ? 8 : 2 * pages_.size());
    void* page;
    if (mapped_) {
        page = ::mmap(nullptr, page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED) throw std::bad_alloc();
    } else {
        page = ::operator new(page_bytes, std::align_val_t{align_});
    }
    pages_.push_back(page);
    asan_poison(page, page_bytes);
    fresh_ = static_cast<std::byte*>(page);
    fresh_end_ = fresh_ + page_bytes;
}

}  // namespace strix
