#pragma once
// reactor_object: the base of everything a shard's reactor drives (sessions, listeners, doorbells).

#include <strix/core/intrusive_ptr.hpp>

#include <cstddef>
#include <cstdint>

namespace strix {

/// Readiness bits passed to on_io (same values as EPOLLIN/EPOLLOUT/EPOLLERR/EPOLLHUP/EPOLLRDHUP,
/// so the epoll backend passes them through; io_uring's poll translates).
namespace io_events {
inline constexpr std::uint32_t readable = 0x001;
inline constexpr std::uint32_t writable = 0x004;
inline constexpr std::uint32_t error = 0x008;
inline constexpr std::uint32_t hangup = 0x010;
inline constexpr std::uint32_t read_hangup = 0x2000;
}  // namespace io_events

/// An object owned by one shard and driven by its reactor. Reference-counted with a non-atomic
/// count: every reference must be taken and dropped on the owning shard's thread.
class reactor_object : public ref_counted<reactor_object> {
public:
    virtual ~reactor_object() = default;

    /// Readiness of the fd this object registered. Called on the owning shard only.
    virtual void on_io(std::uint32_t events) = 0;

    /// End-of-turn hook, called once per loop turn after shard::mark_dirty(this). Sessions flush
    /// their coalesced sends here: one gather write per connection per turn.
    virtual void on_flush() {}

private:
    friend class shard;
    bool dirty_ = false;  // already queued for on_flush this turn
};

using reactor_object_ptr = intrusive_ptr<reactor_object>;

}  // namespace strix
