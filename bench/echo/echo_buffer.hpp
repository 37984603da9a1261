#pragma once
// A growable byte queue for the echo programs: bytes are appended at the end and consumed from
// the front, without zero-filling and without a memmove per consume.
//
//   buf_: [ consumed | readable: begin_..end_ | writable: end_..cap_ ]

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace strix {

class echo_buffer {
public:
  /// An empty buffer with `capacity` bytes reserved. Owned by one thread at a time.
    explicit echo_buffer(std::size_t capacity = 4096)
        : buf_(std::make_unique_for_overwrite<std::uint8_t[]>(capacity)), cap_(capacity) {}

  /// First readable byte. Owning thread only.
    std::uint8_t* data() noexcept { return buf_.get() + begin_; }
  /// Number of readable bytes. Owning thread only.
    std::size_t size() const noexcept { return end_ - begin_; }
  /// True when nothing is readable. Owning thread only.
    bool empty() const noexcept { return begin_ == end_; }
  /// Bytes that can be written at write_ptr() without calling prepare(). Owning thread only.
    std::size_t writable() const noexcept { return cap_ - end_; }
  /// Where the next appended byte goes. Owning thread only.
    std::uint8_t* write_ptr() noexcept { return buf_.get() + end_; }

  /// Makes at least n bytes writable (compacting or growing) and returns write_ptr().
  /// Invalidates pointers into the buffer. Owning thread only.
    std::uint8_t* prepare(std::size_t n) {
        if (cap_ - end_ >= n) return write_ptr();
        const std::size_t live = size();
        if (begin_ > 0 && live + n <= cap_) {
      // Compacting is cheap here: what is left is at most a partial message or a partial write.
            std::memmove(buf_.get(), buf_.get() + begin_, live);
        } else {
            std::size_t cap = cap_ * 2;
            while (cap < live + n) cap *= 2;
            auto bigger = std::make_unique_for_overwrite<std::uint8_t[]>(cap);
            std::memcpy(bigger.get(), buf_.get() + begin_, live);
            buf_ = std::move(bigger);
            cap_ = cap;
        }
        begin_ = 0;
        end_ = live;
        return write_ptr();
    }

  /// Marks n bytes written at write_ptr() as readable. n <= writable(). Owning thread only.
    void commit(std::size_t n) noexcept { end_ += n; }

  /// Drops the first n readable bytes. n <= size(). Owning thread only.
    void consume(std::size_t n) noexcept {
        begin_ += n;
    // Rewinding when empty keeps the common case (everything consumed) free of memmove.
        if (begin_ == end_) begin_ = end_ = 0;
    }

private:
    std::unique_ptr<std::uint8_t[]> buf_;
    std::size_t cap_;
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
};

}  // namespace strix
