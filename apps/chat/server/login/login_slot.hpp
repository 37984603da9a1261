#pragma once
// login_slot: one of the --login-queue places a login's password hash holds while it is queued or
// running, counted over all shards in one atomic (chat_context::logins_in_flight). try_take()
// takes a place; the place goes back exactly once, at release() or when the slot is destroyed,
// whichever comes first, and a moved-from slot holds none. So every way a login ends (refused by
// the throttle, refused by the database queue, answered by a worker, or dropped with a job that
// never ran) gives its place back without a decrement written on that path.

#include <atomic>
#include <cstddef>
#include <utility>

namespace strix::chat {

class login_slot {
public:
    /// A place in `in_flight` if fewer than `limit` are taken, else an empty slot. Any thread.
    static login_slot try_take(std::atomic<std::size_t>& in_flight, std::size_t limit) noexcept {
        if (in_flight.fetch_add(1, std::memory_order_relaxed) >= limit) {
            in_flight.fetch_sub(1, std::memory_order_relaxed);
            return {};
        }
        return login_slot(in_flight);
    }

    /// Holds no place.
    login_slot() noexcept = default;
    login_slot(login_slot&& other) noexcept : in_flight_(std::exchange(other.in_flight_, nullptr)) {}
    login_slot& operator=(login_slot&& other) noexcept {
        if (this != &other) {
            release();
            in_flight_ = std::exchange(other.in_flight_, nullptr);
        }
        return *this;
    }
    login_slot(const login_slot&) = delete;
    login_slot& operator=(const login_slot&) = delete;
    ~login_slot() { release(); }

    /// Whether this slot holds a place.
    explicit operator bool() const noexcept { return in_flight_ != nullptr; }

    /// Gives the place back now (nothing if none is held). The thread that owns the slot.
    void release() noexcept {
        if (in_flight_ != nullptr) std::exchange(in_flight_, nullptr)->fetch_sub(1, std::memory_order_relaxed);
    }

private:
    explicit login_slot(std::atomic<std::size_t>& in_flight) noexcept : in_flight_(&in_flight) {}

    std::atomic<std::size_t>* in_flight_ = nullptr;
};

}  // namespace strix::chat
