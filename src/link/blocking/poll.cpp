// poll(): readiness of several blocking sockets, sleeping on all their wake-up words at once.
#include <strix/link/poll.hpp>

#include "link/blocking/blocking_bridge.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <thread>

namespace strix::link {
namespace detail {

struct poll_access {
    static blocking_shared& shared(blocking_socket& s) noexcept { return *s.st_; }
    static bool readable(blocking_socket& s) noexcept { return s.next_in() != nullptr; }
    static bool writable(blocking_socket& s) noexcept {
        if (!s.can_send_) return false;
        // REQ and REP send in turn; the other types whenever the outgoing pipe has room.
        if ((s.type_ == socket_type::req || s.type_ == socket_type::rep) && !s.queueable()) return false;
        blocking_shared& st = *s.st_;
        const std::uint64_t limit = st.out_limit.load(std::memory_order_relaxed);
        return limit == 0 || st.out.backlog() < limit;
    }
};

}  // namespace detail

using detail::poll_access;

bool readable(blocking_socket& s) noexcept { return poll_access::readable(s); }
bool writable(blocking_socket& s) noexcept { return poll_access::writable(s); }

namespace {

std::size_t look(std::span<poll_item> items) noexcept {
    std::size_t n = 0;
    for (auto& it : items) {
        it.revents = 0;
        if (!it.socket) continue;
        if ((it.events & poll_in) && poll_access::readable(*it.socket)) it.revents |= poll_in;
        if ((it.events & poll_out) && poll_access::writable(*it.socket)) it.revents |= poll_out;
        n += it.revents != 0;
    }
    return n;
}

bool any_interrupted(std::span<poll_item> items) noexcept {
    for (auto& it : items)
        if (it.socket && it.socket->interrupted()) return true;
    return false;
}

void set_waiting(std::span<poll_item> items, detail::app_wait w) noexcept {
    for (auto& it : items)
        if (it.socket && it.events) poll_access::shared(*it.socket).waiting.store(w, std::memory_order_relaxed);
}

// Sleeps until one of the words changes from its value in `w` or the absolute CLOCK_MONOTONIC
// deadline (nullptr: none). False when the kernel has no futex_waitv.
bool wait_any(futex_waitv* w, unsigned n, const timespec* deadline) noexcept {
    const long r = ::syscall(SYS_futex_waitv, w, n, 0, deadline, CLOCK_MONOTONIC);
    return !(r < 0 && errno == ENOSYS);
}

}  // namespace

std::size_t poll(std::span<poll_item> items, std::chrono::milliseconds timeout) {
    if (items.size() > FUTEX_WAITV_MAX) throw std::invalid_argument("link::poll takes at most 128 items");
    std::size_t n = look(items);
    if (n || timeout.count() == 0) return n;
    const bool forever = timeout.count() < 0;
    const auto deadline = std::chrono::steady_clock::now() + timeout;  // CLOCK_MONOTONIC on Linux
    timespec abs{};
    if (!forever) {
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
        abs.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
        abs.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    }
    futex_waitv words[FUTEX_WAITV_MAX];
    for (;;) {
        unsigned k = 0;
        for (auto& it : items) {
            if (!it.socket || !it.events) continue;
            auto& seq = poll_access::shared(*it.socket).wake_seq;
            words[k].val = seq.load(std::memory_order_acquire);
            words[k].uaddr = reinterpret_cast<std::uintptr_t>(&seq);
            words[k].flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
            words[k].__reserved = 0;
            ++k;
        }
        // Dekker with each bridge's on_flush, as a blocking recv does: it publishes, fences,
        // then reads `waiting` (any: it wakes us for whatever it flushed).
        set_waiting(items, detail::app_wait::any);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        n = look(items);
        if (n || any_interrupted(items)) break;
        if (!forever && std::chrono::steady_clock::now() >= deadline) break;
        if (k == 0 || !wait_any(words, k, forever ? nullptr : &abs)) {
            // Nothing to wait on, or a kernel without futex_waitv: look again shortly.
            auto nap = std::chrono::milliseconds(1);
            if (!forever)
                nap = std::min(nap, std::chrono::ceil<std::chrono::milliseconds>(deadline -
                                                                                 std::chrono::steady_clock::now()));
            if (nap.count() > 0) std::this_thread::sleep_for(nap);
        }
        set_waiting(items, detail::app_wait::none);
        n = look(items);
        if (n || any_interrupted(items)) return n;
    }
    set_waiting(items, detail::app_wait::none);
    return n;
}

}  // namespace strix::link
