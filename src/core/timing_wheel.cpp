#include <strix/core/timing_wheel.hpp>

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace strix {
namespace {

[[noreturn]] void die(const char* what) noexcept {
    std::fputs("strix: timing_wheel: ", stderr);
    std::fputs(what, stderr);
    std::fputc('\n', stderr);
    std::abort();
}

constexpr std::uint64_t no_event = std::numeric_limits<std::uint64_t>::max();

// Offset from `start` (0..255) to the first set bit of the 256-bit map, scanning upward and
// wrapping around; -1 when the map is empty.
int first_set_from(const std::uint64_t (&bits)[4], unsigned start) noexcept {
    const unsigned word = start / 64;
    std::uint64_t w = bits[word] & (~std::uint64_t{0} << (start % 64));
    for (unsigned i = word;;) {
        if (w != 0)
            return static_cast<int>(i * 64 + static_cast<unsigned>(std::countr_zero(w))) - static_cast<int>(start);
        if (++i == 4) break;
        w = bits[i];
    }
    for (unsigned i = 0; i <= word; ++i) {
        w = bits[i];
        if (i == word) w &= (std::uint64_t{1} << (start % 64)) - 1;
        if (w != 0)
            return 256 - static_cast<int>(start) +
                   static_cast<int>(i * 64 + static_cast<unsigned>(std::countr_zero(w)));
    }
    return -1;
}

}  // namespace

timer_node::~timer_node() {
    if (armed()) die("a timer_node was destroyed while armed; cancel() it first");
}

timing_wheel::timing_wheel(std::uint64_t start_tick) noexcept : now_(start_tick) {}

timing_wheel::~timing_wheel() {
    for (timer_node*& head : heads_) {
        while (head != nullptr) {
            timer_node* t = head;
            head = t->next_;
            t->next_ = nullptr;
            t->pprev_ = nullptr;
            t->bucket_ = timer_node::unarmed;
        }
    }
}

void timing_wheel::link(timer_node& t, std::uint16_t bucket) noexcept {
    timer_node*& head = heads_[bucket];
    t.next_ = head;
    if (head != nullptr) head->pprev_ = &t.next_;
    head = &t;
    t.pprev_ = &head;
    t.bucket_ = bucket;
    if (bucket < overflow_bucket) occupied_[bucket / slots][(bucket % slots) / 64] |= std::uint64_t{1} << (bucket % 64);
}

void timing_wheel::unlink(timer_node& t) noexcept {
    *t.pprev_ = t.next_;
    if (t.next_ != nullptr) t.next_->pprev_ = t.pprev_;
    // A timer may sit on fire_bucket's local list while its bucket_ still names the slot it came
    // from; that slot is empty then, so clearing its bit is still right.
    if (t.bucket_ < overflow_bucket && heads_[t.bucket_] == nullptr) {
        occupied_[t.bucket_ / slots][(t.bucket_ % slots) / 64] &= ~(std::uint64_t{1} << (t.bucket_ % 64));
    }
    t.next_ = nullptr;
    t.pprev_ = nullptr;
    t.bucket_ = timer_node::unarmed;
}

void timing_wheel::file(timer_node& t) noexcept {
    const std::uint64_t d = t.deadline_;
    const std::uint64_t ahead = d - now_;  // callers guarantee d >= now_
    for (unsigned level = 0; level < levels; ++level) {
        const unsigned shift = level * slot_bits;
        if (ahead < (std::uint64_t{1} << (shift + slot_bits))) {
            link(t, static_cast<std::uint16_t>(level * slots + ((d >> shift) & (slots - 1))));
            return;
        }
    }
    // Track the earliest overflow deadline so advance_to() can jump straight to the 2^32 boundary
    // after which it comes within reach, instead of visiting every boundary on the way. Cancels
    // leave the value early (never late), which costs at most one refile that moves nothing.
    if (heads_[overflow_bucket] == nullptr || d < overflow_min_) overflow_min_ = d;
    link(t, overflow_bucket);
}

void timing_wheel::schedule(timer_node& t, std::uint64_t delay_ticks) noexcept {
    if (!t.on_fire_) die("schedule() of a timer_node without a callback");
    if (t.armed()) {
        unlink(t);
    } else {
        ++size_;
    }
    if (delay_ticks == 0) {
        t.deadline_ = now_;
        link(t, ready_bucket);
        return;
    }
    t.deadline_ = delay_ticks > no_event - now_ ? no_event : now_ + delay_ticks;
    file(t);
}

void timing_wheel::cancel(timer_node& t) noexcept {
    if (!t.armed()) return;
    unlink(t);
    --size_;
}

void timing_wheel::refile_bucket(std::uint16_t bucket) noexcept {
    timer_node* list = heads_[bucket];
    if (list == nullptr) return;
    heads_[bucket] = nullptr;
    if (bucket < overflow_bucket)
        occupied_[bucket / slots][(bucket % slots) / 64] &= ~(std::uint64_t{1} << (bucket % 64));
    // No callback runs here, so the detached list cannot change under us.
    while (list != nullptr) {
        timer_node& t = *list;
        list = t.next_;
        file(t);
    }
}

void timing_wheel::cascade() noexcept {
    // Only at block boundaries; higher levels first so each timer moves down at most once per tick
    // (correctness does not depend on the order, since filing is relative to now_).
    if ((now_ & (slots - 1)) != 0) return;
    if ((now_ & 0xFFFF'FFFFu) == 0) refile_bucket(overflow_bucket);
    for (unsigned level = levels - 1; level >= 1; --level) {
        const unsigned shift = level * slot_bits;
        if ((now_ & ((std::uint64_t{1} << shift) - 1)) == 0) {
            refile_bucket(static_cast<std::uint16_t>(level * slots + ((now_ >> shift) & (slots - 1))));
        }
    }
}

std::size_t timing_wheel::fire_bucket(std::uint16_t bucket) noexcept {
    // Detach the whole list first: callbacks may then arm timers (which go to other buckets) or
    // cancel timers of this list (which unlink from the local list) without disturbing the loop.
    timer_node* due = heads_[bucket];
    if (due == nullptr) return 0;
    heads_[bucket] = nullptr;
    if (bucket < overflow_bucket)
        occupied_[bucket / slots][(bucket % slots) / 64] &= ~(std::uint64_t{1} << (bucket % 64));
    due->pprev_ = &due;

    std::size_t fired = 0;
    while (due != nullptr) {
        timer_node& t = *due;
        if (bucket != ready_bucket && t.deadline_ != now_) die("timer filed in the wrong slot");
        unlink(t);
        --size_;
        ++fired;
        t.on_fire_();  // may destroy t's owner: t is not touched after this
    }
    return fired;
}

std::uint64_t timing_wheel::next_event() const noexcept {
    std::uint64_t best = no_event;
    for (unsigned level = 0; level < levels; ++level) {
        const unsigned shift = level * slot_bits;
        // Level k acts at the start of a block of 2^(8k) ticks; level 0's blocks are single ticks.
        const std::uint64_t block = now_ >> shift;
        const int off = first_set_from(occupied_[level], static_cast<unsigned>((block + 1) & (slots - 1)));
        if (off < 0) continue;
        const std::uint64_t target_block = block + 1 + static_cast<std::uint64_t>(off);
        if (target_block > (no_event >> shift)) continue;  // beyond the end of tick space
        const std::uint64_t tick = target_block << shift;
        if (tick < best) best = tick;
    }
    if (heads_[overflow_bucket] != nullptr) {
        // The boundary at which the earliest overflow timer is less than 2^32 ticks away; filing
        // put it at least 2^32 ahead, so this boundary lies in the future.
        const std::uint64_t boundary = overflow_min_ & ~std::uint64_t{0xFFFF'FFFFu};
        if (boundary < best) best = boundary;
    }
    return best;
}

std::size_t timing_wheel::advance_to(std::uint64_t now_tick) noexcept {
    if (advancing_) die("advance_to() called from inside a timer callback");
    advancing_ = true;
    std::size_t fired = fire_bucket(ready_bucket);
    while (now_ < now_tick) {
        // A single step needs no search: processing an idle tick is as cheap as finding the next.
        const std::uint64_t next = now_tick - now_ == 1 ? now_ + 1 : next_event();
        if (next > now_tick) {
            now_ = now_tick;
            break;
        }
        now_ = next;
        cascade();
        fired += fire_bucket(static_cast<std::uint16_t>(now_ & (slots - 1)));
    }
    advancing_ = false;
    return fired;
}

}  // namespace strix
