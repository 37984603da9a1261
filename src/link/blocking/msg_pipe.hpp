#pragma once
// msg_pipe: an unbounded, lock-free single-producer single-consumer queue of messages, the two
// directions of the blocking API (application thread -> shard, shard -> application thread).
//
//   producer (one thread)                               consumer (one thread)
//   put(part)... end_message() ... publish() ──tail_──> front() reads the next whole message,
//                 <──────────────────────── consumed_ ── pop() frees it and counts it
//
// Records live in 64 KiB chunks linked as the producer fills them; a record never crosses a
// chunk (one that does not fit leaves a jump record, or fewer than 8 bytes, behind it):
//
//   +-------------------------------- chunk --------------------------------+
//   | hdr | bytes + pad | hdr | part (a reference) | hdr | bytes | hdr(jump) |
//   +-----------------------------------------------------------------------+
//   hdr: { uint32 size, uint8 kind (copy / ref / jump), uint8 more }, 8 bytes
//
// Small parts (up to inline_max) are copied into the record, so a stream of small messages costs
// no allocation and no reference count; larger ones travel as a `part` (a shared buffer). A
// message whose connection properties (message_properties) differ from the previous message's
// starts with a record holding them; the consumer keeps the last ones it saw, so a stream from
// one connection carries its properties once, not per message, and hands each message a
// reference from the thread's reserve (take_properties: no atomic operation per message). The
// consumer hands each chunk it finished back through spare_, and the producer takes it from
// there before allocating: a steady stream reuses the same few chunks.
//
// Positions are byte counts since the start (64-bit, they never wrap). The producer publishes
// its position with a release store (tail_), the consumer reads records below it; a message's
// records become visible together, at publish(). Message counts (for high-water marks) are kept
// apart: the producer counts what it wrote, the consumer publishes what it popped (consumed_).
// Each side caches the other's counter and reloads it only when the cached value says the pipe
// looks empty (consumer) or full (producer), so the two cache lines are not traded per message.

#include <strix/link/message.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace strix::link::detail {

class msg_pipe {
public:
    /// Parts up to this size are copied into the pipe; larger ones are referenced.
    static constexpr std::size_t inline_max = 512;

    /// One part of the message at the front: its bytes (valid until pop) and, for a referenced
    /// part, the part itself (the consumer may move it out before pop).
    struct entry {
        bytes_view bytes;
        part* ref = nullptr;
    };

    msg_pipe();
    /// Frees what is left. Neither thread may use the pipe any more.
    ~msg_pipe();
    msg_pipe(const msg_pipe&) = delete;
    msg_pipe& operator=(const msg_pipe&) = delete;

    // --- producer ----------------------------------------------------------------------------

    /// Appends a copy of b (b.size() <= inline_max) as the message's next part.
    void put(bytes_view b, bool more);
    /// Appends a referenced part.
    void put(part p, bool more);
    /// Appends a message of no parts (end_message follows, as for any other).
    void put_empty();
    /// The message being put, and those after it, come with these properties (null: none). Put
    /// before the message's first part, only when they differ from the last ones put.
    void put_properties(message_properties_ptr p);
    /// The message's last part was put: it counts towards backlog() from now.
    void end_message() noexcept {
        ++written_;
        end_pos_ = wpos_;
    }
    /// Makes every ended message visible to the consumer.
    void publish() noexcept {
        published_.store(written_, std::memory_order_relaxed);
        tail_.store(end_pos_, std::memory_order_release);
    }
    /// Messages written and not yet popped is at least n (reloads the consumer's count only when
    /// the cached one says so).
    bool backlog_at_least(std::uint64_t n) noexcept {
        if (written_ - consumed_cache_ < n) return false;
        consumed_cache_ = consumed_.load(std::memory_order_acquire);
        return written_ - consumed_cache_ >= n;
    }
    /// Messages written and not yet popped, read fresh.
    std::uint64_t backlog() noexcept {
        consumed_cache_ = consumed_.load(std::memory_order_acquire);
        return written_ - consumed_cache_;
    }

    // --- consumer ----------------------------------------------------------------------------

    /// The parts of the next published message into `out` (cleared first; a message of no parts
    /// leaves it empty); false when none.
    bool front(std::vector<entry>& out);
    /// Drops the message front() returned (its referenced parts are released).
    void pop(std::vector<entry>& parts) noexcept;
    /// A reference to the properties of the message front() returned (null: none), for the
    /// message built from it. Between front() and pop().
    message_properties_ptr take_properties() noexcept {
        if (props_rec_) switch_properties();
        if (!props_) return {};
        props_->take_reference();  // from this thread's reserve (message.hpp)
        return message_properties_ptr(props_.get(), false);
    }
    /// Nothing published beyond what was popped.
    bool empty() noexcept {
        if (rpos_ != tail_cache_) return false;
        tail_cache_ = tail_.load(std::memory_order_acquire);
        return rpos_ == tail_cache_;
    }
    /// Messages popped so far.
    std::uint64_t popped() const noexcept { return popped_; }
    /// Messages published and not yet popped (consumer side).
    std::uint64_t backlog_seen_by_consumer() const noexcept {
        return published_.load(std::memory_order_acquire) - popped_;
    }

private:
    struct chunk;
    struct header {
        std::uint32_t size;
        std::uint8_t kind;
        std::uint8_t more;
        std::uint16_t unused;
    };
    enum kind : std::uint8_t { copy = 1, ref = 2, jump = 3, empty_message = 4, properties_change = 5 };

    std::byte* reserve(std::size_t n);
    void switch_properties() noexcept;
    chunk* take_chunk();
    void give_chunk(chunk* c) noexcept;

    // Producer-only.
    alignas(64) chunk* wchunk_;
    std::size_t woff_ = 0;
    std::uint64_t wpos_ = 0;  // bytes written, records and jumps
    std::uint64_t end_pos_ = 0;  // wpos_ at the last end_message
    std::uint64_t written_ = 0;  // messages ended
    std::uint64_t consumed_cache_ = 0;
    // Written by the producer, read by the consumer.
    alignas(64) std::atomic<std::uint64_t> tail_{0};
    std::atomic<std::uint64_t> published_{0};
    // Consumer-only.
    alignas(64) chunk* rchunk_;
    std::size_t roff_ = 0;
    std::uint64_t rpos_ = 0;
    std::uint64_t tail_cache_ = 0;
    std::uint64_t popped_ = 0;
    chunk* pchunk_ = nullptr;  // where the message front() returned ends
    std::size_t poff_ = 0;
    std::uint64_t ppos_ = 0;
    // Written by the consumer, read by the producer.
    alignas(64) std::atomic<std::uint64_t> consumed_{0};
    // Emptied chunks waiting for the producer: a reader a few chunks behind gives back as many
    // as the writer takes, so neither side goes to malloc in a steady stream.
    static constexpr int spares = 4;
    std::atomic<chunk*> spare_[spares] = {};
    // Consumer-only, read per message only when a connection's messages carry properties (a line
    // of their own: the consumer's line above is full, and the one before holds shared counters).
    alignas(64) message_properties_ptr props_;  // the properties of the messages popped last
    message_properties_ptr* props_rec_ = nullptr;  // in the message front() returned, if it changes them
};

}  // namespace strix::link::detail
