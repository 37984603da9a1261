#include <strix/core/ring_buffer.hpp>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <utility>

namespace strix {

namespace {

// Contract violations are bugs in the caller; they stay checked in release builds (one branch each).
[[noreturn]] void contract_failure(const char* what) noexcept {
    std::fprintf(stderr, "strix::ring_buffer: contract violated: %s\n", what);
    std::abort();
}

}  // namespace

ring_buffer::ring_buffer(std::size_t capacity) {
    if (capacity == 0) return;
    capacity_ = std::bit_ceil(capacity);
    if (capacity_ < capacity) contract_failure("capacity too large to round up to a power of two");
    // for_overwrite: bytes are only ever read after being written, so zeroing them is wasted work.
    owned_ = std::make_unique_for_overwrite<std::byte[]>(capacity_);
    data_ = owned_.get();
}

ring_buffer::ring_buffer(ring_buffer&& other) noexcept
    : owned_(std::move(other.owned_)),
      data_(std::exchange(other.data_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      read_(std::exchange(other.read_, 0)),
      write_(std::exchange(other.write_, 0)) {}

ring_buffer& ring_buffer::operator=(ring_buffer&& other) noexcept {
    if (this != &other) {
        owned_ = std::move(other.owned_);
        data_ = std::exchange(other.data_, nullptr);
        capacity_ = std::exchange(other.capacity_, 0);
        read_ = std::exchange(other.read_, 0);
        write_ = std::exchange(other.write_, 0);
    }
    return *this;
}

void ring_buffer::attach(std::byte* storage, std::size_t capacity) noexcept {
    if (data_ != nullptr) contract_failure("attach() while storage is attached or owned");
    if (storage == nullptr || capacity == 0 || (capacity & (capacity - 1)) != 0)  // no popcount call: hot path
        contract_failure("attach() needs non-null storage and a power-of-two capacity");
    data_ = storage;
    capacity_ = capacity;
    read_ = write_ = 0;
}

std::byte* ring_buffer::detach() noexcept {
    if (!empty()) contract_failure("detach() while readable bytes remain");
    std::byte* borrowed = owned_ ? nullptr : data_;
    owned_.reset();
    data_ = nullptr;
    capacity_ = 0;
    read_ = write_ = 0;
    return borrowed;
}

std::span<std::byte> ring_buffer::write_span() noexcept {
    const std::size_t w = offset(write_);
    return {data_ + w, std::min(free_space(), capacity_ - w)};
}

int ring_buffer::write_iov(iovec* iov) noexcept {
    const std::size_t free = free_space();
    if (free == 0) return 0;
    const std::size_t w = offset(write_);
    const std::size_t first = std::min(free, capacity_ - w);
    iov[0] = {data_ + w, first};
    if (first == free) return 1;
    iov[1] = {data_, free - first};
    return 2;
}

void ring_buffer::commit(std::size_t n) noexcept {
    if (n > free_space()) contract_failure("commit() past the free space");
    write_ += n;
}

std::span<const std::byte> ring_buffer::read_span() const noexcept {
    const std::size_t r = offset(read_);
    return {data_ + r, std::min(size(), capacity_ - r)};
}

int ring_buffer::read_iov(iovec* iov) const noexcept {
    const std::size_t used = size();
    if (used == 0) return 0;
    const std::size_t r = offset(read_);
    const std::size_t first = std::min(used, capacity_ - r);
    // iovec is shared with readv, hence the non-const base; nobody writes through it here.
    iov[0] = {const_cast<std::byte*>(data_ + r), first};
    if (first == used) return 1;
    iov[1] = {const_cast<std::byte*>(data_), used - first};
    return 2;
}

void ring_buffer::consume(std::size_t n) noexcept {
    if (n > size()) contract_failure("consume() past the readable bytes");
    read_ += n;
    // Rewinding when empty keeps the next frame contiguous at offset 0, so straddling (and the
    // copy linearize() then needs) only happens while the buffer never drains.
    if (read_ == write_) read_ = write_ = 0;
}

std::span<const std::byte> ring_buffer::linearize(std::size_t n) {
    const std::size_t used = size();
    if (n > used) contract_failure("linearize() past the readable bytes");
    const std::size_t r = offset(read_);
    if (n <= capacity_ - r) return {data_ + r, n};

    // The readable region is A = [r, capacity) followed by B = [0, b); the gap [b, r) is free.
    const std::size_t a = capacity_ - r;
    const std::size_t b = used - a;
    const std::size_t gap = capacity_ - used;
    if (gap >= a) {
        // Room to slide B right by |A| without reaching A: two plain copies, |A| + |B| bytes.
        std::memmove(data_ + a, data_, b);
        std::memcpy(data_, data_ + r, a);
    } else if (a <= b) {
        // Nearly full: park A, slide B right by |A|, put A in front (a rotate by swaps touched
        // every byte of storage one at a time: 2 MiB for one straddling frame).
        std::vector<std::byte> tmp(data_ + r, data_ + capacity_);
        std::memmove(data_ + a, data_, b);
        std::memcpy(data_, tmp.data(), a);
    } else {
        std::vector<std::byte> tmp(data_, data_ + b);
        std::memmove(data_, data_ + r, a);
        std::memcpy(data_ + a, tmp.data(), b);
    }
    read_ = 0;
    write_ = used;
    return {data_, n};
}

bool ring_buffer::compact(std::size_t limit) noexcept {
    const std::size_t used = size();
    const std::size_t r = offset(read_);
    if (used == 0 || used > limit || r == 0 || r + used > capacity_) return false;
    std::memmove(data_, data_ + r, used);
    read_ = 0;
    write_ = used;
    return true;
}

std::size_t ring_buffer::write(std::span<const std::byte> bytes) noexcept {
    const std::size_t n = std::min(bytes.size(), free_space());
    if (n == 0) return 0;
    const std::size_t w = offset(write_);
    const std::size_t first = std::min(n, capacity_ - w);
    std::memcpy(data_ + w, bytes.data(), first);
    if (n > first) std::memcpy(data_, bytes.data() + first, n - first);
    write_ += n;
    return n;
}

std::size_t ring_buffer::peek(std::span<std::byte> out) const noexcept {
    const std::size_t n = std::min(out.size(), size());
    if (n == 0) return 0;
    const std::size_t r = offset(read_);
    const std::size_t first = std::min(n, capacity_ - r);
    std::memcpy(out.data(), data_ + r, first);
    if (n > first) std::memcpy(out.data() + first, data_, n - first);
    return n;
}

std::size_t ring_buffer::read(std::span<std::byte> out) noexcept {
    const std::size_t n = peek(out);
    if (n != 0) consume(n);
    return n;
}

}  // namespace strix
