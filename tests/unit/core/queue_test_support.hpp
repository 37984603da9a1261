#pragma once
// Helpers shared by spsc_queue_test.cpp and mpsc_queue_test.cpp.

#include <strix/core/asan_poison.hpp>  // STRIX_ASAN
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace queue_test {

// Sanitizers slow every access (ThreadSanitizer most); the concurrent tests scale their counts
// down so each stays within a few seconds there too.
#if defined(__SANITIZE_THREAD__)
inline constexpr std::uint64_t load_divisor = 20;
#elif STRIX_ASAN
inline constexpr std::uint64_t load_divisor = 2;
#else
inline constexpr std::uint64_t load_divisor = 1;
#endif

struct life_counts {
    int constructed = 0;
    int destroyed = 0;
    int live() const { return constructed - destroyed; }
};

// Counts its constructions and destructions; not default-constructible on purpose. Its
// constructors are noexcept, so both queues build it straight in the cell (the constructed
// counts in the tests rely on that).
struct tracked {
    tracked(int v, life_counts* c) noexcept : value(v), counts(c) { ++counts->constructed; }
    tracked(const tracked& o) noexcept : value(o.value), counts(o.counts) { ++counts->constructed; }
    tracked(tracked&& o) noexcept : value(o.value), counts(o.counts) { ++counts->constructed; }
    tracked& operator=(const tracked&) = default;
    tracked& operator=(tracked&&) noexcept = default;
    ~tracked() { ++counts->destroyed; }
    int value;
    life_counts* counts;
};

// Turns a lost item, which would leave the consumer polling forever, into a test failure rather
// than a hang until the ctest timeout. Not a timing assertion: it only fires after the consumer
// has seen no item at all for `limit`, far beyond any scheduling delay.
class stall_watch {
public:
    /// Call on each empty poll with the count received so far; true (and a recorded failure)
    /// once it has not moved for `limit`. The consumer then stops and sets `abandon`, which
    /// producers check when their push fails.
    bool stalled(std::uint64_t received) {
        if (++polls_ % 256 != 0) return false;
        const auto now = std::chrono::steady_clock::now();
        if (received != seen_ || polls_ == 256) {
            seen_ = received;
            since_ = now;
            return false;
        }
        if (now - since_ <= limit) return false;
        ADD_FAILURE() << "no item arrived for " << limit.count() << " s after " << received
                      << " items: an item was lost or a cell is stuck";
        return true;
    }

    static constexpr std::chrono::seconds limit{10};
    std::atomic<bool> abandon{false};

private:
    std::uint64_t polls_ = 0;
    std::uint64_t seen_ = 0;
    std::chrono::steady_clock::time_point since_{};
};

}  // namespace queue_test
