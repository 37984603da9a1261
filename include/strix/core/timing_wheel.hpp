#pragma once
// timing_wheel: a hierarchical hashed timing wheel (Varghese & Lauck) over abstract ticks, with
// intrusive timers: schedule and cancel are O(1) and never allocate.
//
// Four levels of 256 slots. A timer is filed by how far its deadline d lies from now():
//
//   level 0  d - now < 2^8    slot = d         & 255   one slot per tick
//   level 1  d - now < 2^16   slot = (d >> 8)  & 255   one slot per 256 ticks
//   level 2  d - now < 2^24   slot = (d >> 16) & 255
//   level 3  d - now < 2^32   slot = (d >> 24) & 255
//   overflow d - now >= 2^32  one list, filed again at the multiple of 2^32 after which its
//                             earliest deadline comes within 2^32 ticks
//
// When now() reaches a multiple of 2^(8k), the level-k slot for the new block is emptied and its
// timers are filed again relative to the new now(): they land on a lower level (cascading), until
// they sit in level 0 and fire at exactly their deadline tick. An occupancy bitmap per level lets
// advance_to() jump straight to the next tick at which something happens, so advancing over a
// long idle stretch costs a few bit scans, not one step per tick.
//
// The wheel reads no clock: the owner (the reactor) turns time into ticks and calls advance_to().
// Thread contract: a wheel and the timers armed on it belong to one thread (one shard); every
// member function is called from that thread only.

#include <strix/core/task.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace strix {

class timing_wheel;

/// A timer embedded in its owner (a session, a connection). Its callback is a callable with 16
/// bytes of inline storage (a `this` pointer and one more word; larger captures are boxed once,
/// when the callback is set), so arming and firing never allocate. The owner must keep the node
/// alive, and not move it, while it is armed. Destroying an armed timer is a bug and aborts:
/// cancel it first.
///
///     timer_node t{[this] { on_timeout(); }};
///     shard.timers().schedule(t, shard.ticks_for(5s));
struct timer_node {
    using callback = basic_task<16>;

    /// An unarmed timer with no callback (set one before scheduling). Any thread.
    timer_node() noexcept = default;
    /// An unarmed timer that will call `on_fire`. Any thread (it belongs to no wheel yet).
    explicit timer_node(callback on_fire) noexcept : on_fire_(std::move(on_fire)) {}
    timer_node(const timer_node&) = delete;
    timer_node& operator=(const timer_node&) = delete;
    /// Aborts with a message if still armed (the wheel would keep a dangling link). Wheel's thread.
    ~timer_node();

    /// True from schedule() until the timer fires or is cancelled. Wheel's thread only.
    bool armed() const noexcept { return bucket_ != unarmed; }

    /// The tick the timer is due at; meaningful only while armed(). Wheel's thread only.
    std::uint64_t deadline() const noexcept { return deadline_; }

    /// Sets what happens when the timer expires: called once per expiry, on the wheel's thread,
    /// from inside advance_to(). The timer is already disarmed then, so the callback may re-arm
    /// it (a periodic timer), arm or cancel any other timer, or destroy the timer's owner (and
    /// with it this callable: touch nothing captured after doing so). It must not call
    /// advance_to(). Not while armed.
    void set_callback(callback on_fire) noexcept { on_fire_ = std::move(on_fire); }
    bool has_callback() const noexcept { return static_cast<bool>(on_fire_); }

private:
    friend class timing_wheel;
    static constexpr std::uint16_t unarmed = 0xFFFF;

    // Singly-headed doubly-linked list: pprev_ points at whatever points at this node (a bucket
    // head or the previous node's next_), so unlinking needs neither the list nor a sentinel.
    timer_node* next_ = nullptr;
    timer_node** pprev_ = nullptr;
    std::uint64_t deadline_ = 0;
    std::uint16_t bucket_ = unarmed;
    callback on_fire_;
};

class timing_wheel {
public:
    /// A wheel whose now() is start_tick. Constructed on, and thereafter used by, one thread.
    explicit timing_wheel(std::uint64_t start_tick = 0) noexcept;
    timing_wheel(const timing_wheel&) = delete;
    timing_wheel& operator=(const timing_wheel&) = delete;
    /// Disarms every timer still armed (they may then be destroyed freely). Wheel's thread only.
    ~timing_wheel();

    /// Arms `t` to fire at tick now() + delay_ticks (saturating at 2^64 - 1), re-arming it if it
    /// was armed. delay 0 means "as soon as possible": the timer fires at the start of the next
    /// advance_to() call, before any tick is processed, even from inside a callback (so a timer
    /// re-arming itself with delay 0 cannot stall the current advance). t must have a callback.
    /// O(1). Wheel's thread only, including from inside a callback.
    void schedule(timer_node& t, std::uint64_t delay_ticks) noexcept;

    /// Disarms `t`; it will not fire. No-op if it is not armed. O(1). Wheel's thread only,
    /// including from inside a callback (cancelling a timer due in the same tick works).
    void cancel(timer_node& t) noexcept;

    /// Moves now() forward to now_tick (no-op if now_tick <= now()), firing first the delay-0
    /// timers and then every timer with deadline <= now_tick, in deadline order; timers due at
    /// the same tick fire in unspecified order. During a callback now() equals the tick being
    /// processed, which is the timer's deadline. Returns how many timers fired. Callbacks must
    /// not throw (the wheel is mid-update; an escaping exception terminates). Wheel's thread
    /// only, never from inside a callback.
    std::size_t advance_to(std::uint64_t now_tick) noexcept;

    /// The last tick processed. Wheel's thread only.
    std::uint64_t now() const noexcept { return now_; }
    /// The first tick after now() at which advance_to() has work (a timer due, or timers to move
    /// down a level); no timer fires before it. now() + 1 while a delay-0 timer waits, 2^64 - 1
    /// when nothing is armed. What a loop may sleep until. Wheel's thread only.
    std::uint64_t next_due() const noexcept { return heads_[ready_bucket] != nullptr ? now_ + 1 : next_event(); }
    /// Number of armed timers. Wheel's thread only.
    std::size_t size() const noexcept { return size_; }
    /// size() == 0. Wheel's thread only.
    bool empty() const noexcept { return size_ == 0; }

private:
    static constexpr unsigned levels = 4;
    static constexpr unsigned slot_bits = 8;
    static constexpr unsigned slots = 1u << slot_bits;
    static constexpr std::uint16_t overflow_bucket = levels * slots;
    static constexpr std::uint16_t ready_bucket = overflow_bucket + 1;
    static constexpr std::size_t bucket_count = ready_bucket + 1;

    void link(timer_node& t, std::uint16_t bucket) noexcept;
    void unlink(timer_node& t) noexcept;
    void file(timer_node& t) noexcept;  // into its level slot (or overflow), relative to now_
    void refile_bucket(std::uint16_t bucket) noexcept;
    void cascade() noexcept;
    std::size_t fire_bucket(std::uint16_t bucket) noexcept;
    std::uint64_t next_event() const noexcept;

    timer_node* heads_[bucket_count] = {};
    std::uint64_t occupied_[levels][slots / 64] = {};  // bit set <=> level slot list non-empty
    std::uint64_t now_;
    std::uint64_t overflow_min_ = 0;  // <= every overflow deadline while that list is non-empty
    std::size_t size_ = 0;
    bool advancing_ = false;
};

}  // namespace strix
