#include <strix/mem/bump_arena.hpp>

#include <cstdio>
#include <cstdlib>
#include <new>

namespace strix {

namespace {
// Cache-line alignment: the buffer shares no line with a neighbour, and alignments up to 64 cost
// a predictable amount of padding.
constexpr std::align_val_t buffer_align{64};
}  // namespace

bump_arena::bump_arena(std::size_t capacity)
    : buf_(static_cast<std::byte*>(::operator new(capacity, buffer_align))), capacity_(capacity) {
    asan_poison(buf_, capacity_);
}

bump_arena::~bump_arena() {
    asan_unpoison(buf_, capacity_);
    ::operator delete(buf_, capacity_, buffer_align);
}

void bump_arena::bad_align(std::size_t align) noexcept {
    std::fprintf(stderr, "strix: bump_arena::allocate: align %zu is not a power of two\n", align);
    std::abort();
}

}  // namespace strix
