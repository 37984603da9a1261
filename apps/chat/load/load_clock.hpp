#pragma once
// The load tool's clock and its one blocking call. All timestamps (client_ts, schedules, interval
// boundaries) are steady_clock nanoseconds of this process, so a receiver's receipt time and a
// sender's client_ts are directly comparable.

#include <sys/epoll.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <ctime>

namespace strix::chat {

/// steady_clock now, in nanoseconds. Any thread.
inline std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/// system_clock minus steady_clock, in nanoseconds: maps a wall-clock stamp of this machine (the
/// server's server_ts_us) onto now_ns(). The tightest of a few bracketed reads. Any thread.
inline std::int64_t wall_minus_steady_ns() noexcept {
    std::int64_t best_gap = INT64_MAX, offset = 0;
    for (int i = 0; i < 16; ++i) {
        const std::int64_t a = now_ns();
        const std::int64_t w =
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        const std::int64_t b = now_ns();
        if (b - a < best_gap) {
            best_gap = b - a;
            offset = w - (a + (b - a) / 2);
        }
    }
    return offset;
}

/// epoll_wait for at most `timeout_ns` (<= 0: poll without blocking). Uses epoll_pwait2's
/// nanosecond timeout where the kernel has it (5.11+), so sends paced 200 us apart are not rounded
/// to milliseconds; falls back to epoll_wait with the timeout rounded up to a millisecond.
/// Returns what epoll_wait returns. The calling worker's thread.
inline int wait_events(int ep, epoll_event* events, int max, std::int64_t timeout_ns) noexcept {
    if (timeout_ns < 0) timeout_ns = 0;
    if (timeout_ns > 1'000'000'000) timeout_ns = 1'000'000'000;
    static std::atomic<bool> have_pwait2{true};  // cleared by the first ENOSYS
    if (have_pwait2.load(std::memory_order_relaxed)) {
        timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
        const int n = ::epoll_pwait2(ep, events, max, &ts, nullptr);
        if (n >= 0 || errno != ENOSYS) return n;
        have_pwait2.store(false, std::memory_order_relaxed);
    }
    return ::epoll_wait(ep, events, max, static_cast<int>((timeout_ns + 999'999) / 1'000'000));
}

}  // namespace strix::chat
