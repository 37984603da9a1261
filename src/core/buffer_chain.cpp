#include <strix/core/buffer_chain.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace strix {

namespace {

// Contract violations are bugs in the caller; they stay checked in release builds (one branch each).
[[noreturn]] void contract_failure(const char* what) noexcept {
    std::fprintf(stderr, "strix::buffer_chain: contract violated: %s\n", what);
    std::abort();
}

}  // namespace

buffer_chain::buffer_chain(std::size_t chunk_size) : chunk_size_(chunk_size) {
    if (chunk_size == 0) contract_failure("chunk_size must be > 0");
}

buffer_chain::buffer_chain(buffer_chain&& other) noexcept : chunk_size_(other.chunk_size_) { take(other); }

buffer_chain& buffer_chain::operator=(buffer_chain&& other) noexcept {
    if (this != &other) {
        clear();
        heap_.reset();
        segs_ = inline_;
        cap_ = inline_segments;
        head_ = 0;
        chunk_size_ = other.chunk_size_;
        take(other);
    }
    return *this;
}

// Precondition: *this holds no segments and uses its inline ring.
void buffer_chain::take(buffer_chain& other) noexcept {
    if (other.segs_ == other.inline_) {
        // Inline segments cannot be stolen by pointer; move them into our own inline ring.
        for (std::size_t i = 0; i < other.count_; ++i) inline_[i] = std::move(other.slot(i));
    } else {
        heap_ = std::move(other.heap_);
        segs_ = heap_.get();
        cap_ = other.cap_;
        head_ = other.head_;
    }
    count_ = other.count_;
    bytes_ = other.bytes_;
    fill_ = std::move(other.fill_);
    fill_used_ = other.fill_used_;
    spare_ = std::move(other.spare_);

    other.segs_ = other.inline_;
    other.cap_ = inline_segments;
    other.head_ = 0;
    other.count_ = 0;
    other.bytes_ = 0;
    other.fill_used_ = 0;
}

void buffer_chain::append_slow(std::span<const std::byte> bytes) {
    const std::byte* src = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
        if (!fill_ || fill_used_ == fill_->size()) start_chunk(left);
        const std::size_t n = std::min(left, fill_->size() - fill_used_);
        std::memcpy(fill_->data() + fill_used_, src, n);
        // Extend the tail only when it is the fill chunk ending exactly where we copied; a shared
        // segment queued in between means these bytes must follow it as a new segment.
        segment* tail = count_ ? &slot(count_ - 1) : nullptr;
        if (tail && tail->chunk && tail->buf == fill_ && tail->offset + tail->length == fill_used_) {
            tail->length += n;
        } else {
            push_back(segment{fill_, fill_used_, n, true});
        }
        fill_used_ += n;
        bytes_ += n;
        src += n;
        left -= n;
    }
}

void buffer_chain::append(shared_buffer_ptr buf, std::size_t offset, std::size_t length) {
    if (!buf) contract_failure("append() of a null shared_buffer_ptr");
    if (offset > buf->size() || length > buf->size() - offset)
        contract_failure("append() range exceeds the shared buffer");
    if (length == 0) return;
    // Consecutive windows of one broadcast buffer merge into one iovec.
    if (count_) {
        segment& tail = slot(count_ - 1);
        if (!tail.chunk && tail.buf == buf && tail.offset + tail.length == offset) {
            tail.length += length;
            bytes_ += length;
            return;
        }
    }
    push_back(segment{std::move(buf), offset, length, false});
    bytes_ += length;
}

void buffer_chain::append(shared_buffer_ptr buf) {
    if (!buf) contract_failure("append() of a null shared_buffer_ptr");
    const std::size_t n = buf->size();
    append(std::move(buf), 0, n);
}

int buffer_chain::fill_iov(iovec* iov, int max_iov) const noexcept {
    if (max_iov <= 0) return 0;
    const std::size_t k = std::min(count_, static_cast<std::size_t>(max_iov));
    for (std::size_t i = 0; i < k; ++i) {
        const segment& s = slot(i);
        // iovec has a non-const base for readv's sake; writev only reads through it.
        iov[i] = {const_cast<std::byte*>(s.buf->data() + s.offset), s.length};
    }
    return static_cast<int>(k);
}

void buffer_chain::consume(std::size_t n) noexcept {
    if (n > bytes_) contract_failure("consume() past the queued bytes");
    bytes_ -= n;
    while (n > 0) {
        segment& front = slot(0);
        if (n < front.length) {
            front.offset += n;
            front.length -= n;
            return;
        }
        n -= front.length;
        pop_front();
    }
}

void buffer_chain::clear() noexcept {
    while (count_) pop_front();
    bytes_ = 0;
}

void buffer_chain::trim() noexcept {
    spare_.reset();
    if (fill_ && fill_->use_count() == 1) {
        fill_.reset();
        fill_used_ = 0;
    }
    // A segment ring grown on the heap by a burst (a few broadcasts queued in one turn) goes
    // back to the inline one once what is queued fits there: an idle session holds none. With
    // 18,000 held in one room (a heaptrack profile), a quarter of the sessions had grown one
    // during the ramp's join notices and kept its 512 bytes.
    if (heap_ && count_ <= inline_segments) {
        for (std::size_t i = 0; i < count_; ++i) inline_[i] = std::move(slot(i));
        heap_.reset();
        segs_ = inline_;
        cap_ = inline_segments;
        head_ = 0;
    }
}

void buffer_chain::push_back(segment&& s) {
    if (count_ == cap_) grow();
    slot(count_) = std::move(s);
    ++count_;
}

void buffer_chain::pop_front() noexcept {
    segment& s = slot(0);
    if (s.chunk) {
        // Only the chain ever references its chunks, so use_count() == 1 below means no other
        // queued segment needs these bytes and the chunk can be written from its start again.
        if (s.buf == fill_) {
            s.buf.reset();
            if (fill_->use_count() == 1) {
                fill_used_ = 0;
                // An oversized chunk from one large append is not worth keeping per session.
                if (fill_->size() > chunk_size_) fill_.reset();
            }
        } else if (!spare_ && s.buf->size() == chunk_size_ && s.buf->use_count() == 1) {
            spare_ = std::move(s.buf);
        } else {
            s.buf.reset();
        }
    } else {
        s.buf.reset();
    }
    s.offset = 0;
    s.length = 0;
    s.chunk = false;
    head_ = (head_ + 1) & (cap_ - 1);
    --count_;
    if (count_ == 0) head_ = 0;
}

void buffer_chain::grow() {
    const std::size_t new_cap = cap_ * 2;
    auto bigger = std::make_unique<segment[]>(new_cap);
    for (std::size_t i = 0; i < count_; ++i) bigger[i] = std::move(slot(i));
    heap_ = std::move(bigger);
    segs_ = heap_.get();
    cap_ = new_cap;
    head_ = 0;
}

void buffer_chain::start_chunk(std::size_t need) {
    // The old fill chunk (if any) stays alive through the segments that reference it.
    if (need <= chunk_size_ && spare_) {
        fill_ = std::move(spare_);
    } else if (!fill_ && need <= first_chunk_bytes && chunk_size_ > first_chunk_bytes) {
        // A chain starting from nothing (new, or trimmed while idle) starts small: a connection
        // that sends a pong or a notice now and then holds 1 KiB, not chunk_size_, until the
        // idle sweep trims it. One that fills it moves on to chunk_size_ chunks at once.
        fill_ = shared_buffer::create(first_chunk_bytes);
    } else {
        fill_ = shared_buffer::create(std::max(chunk_size_, need));
    }
    fill_used_ = 0;
}

}  // namespace strix
