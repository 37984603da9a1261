#pragma once
// listener: a listening socket registered with one shard; accepts until EAGAIN.
// When the process runs out of descriptors (EMFILE/ENFILE) or memory, it pauses accepting for
// a moment instead of spinning on a readiness it cannot clear, and retries on a timer.

#include <strix/core/reactor_object.hpp>
#include <strix/core/timing_wheel.hpp>

namespace strix::detail {

class net_shard;

class listener final : public reactor_object {
public:
    /// `handoff`: give accepted connections to the shards in turn (Unix sockets, which have no
    /// SO_REUSEPORT spreading) instead of keeping them on this shard.
    listener(net_shard& ns, int fd, bool handoff);
    ~listener() override;

    /// Registers with the shard. On the shard's thread.
    void start();
    /// Stops accepting and closes the socket. On the shard's thread; idempotent.
    void close();

    void on_io(std::uint32_t events) override;

private:
    void accept_all();
    static void on_retry(timer_node& t);

    net_shard& ns_;
    int fd_;
    bool handoff_;
    bool paused_ = false;
    timer_node retry_;
};

}  // namespace strix::detail
