#pragma once
// listener: a listening socket on one shard; the shard's backend accepts (acceptor_io) and the
// listener hands each connection to its accept function (adopt it on this shard, or pass it on).
// When the process runs out of descriptors (EMFILE/ENFILE) or memory, it pauses accepting for
// a moment instead of spinning on a readiness it cannot clear, and retries on a timer.

#include <strix/core/reactor_object.hpp>
#include <strix/core/stream_user.hpp>
#include <strix/core/timing_wheel.hpp>
#include <strix/core/unique_fd.hpp>
#include <strix/net/session_group.hpp>

#include <memory>
#include <string>

namespace strix::detail {

class acceptor_io;

class listener final : public reactor_object, private accept_user {
public:
    /// unlink_path: a socket file to remove when the listener closes (empty: none).
    listener(session_group& g, unique_fd fd, session_group::accept_fn on_accept, std::string unlink_path = {});
    ~listener() override;

    /// Registers with the shard. On the shard's thread.
    void start();
    /// Stops accepting and closes the socket. On the shard's thread; idempotent.
    void close();

private:
    void on_io(std::uint32_t events) override;
    void accepted(unique_fd fd, const sockaddr_storage* addr, socklen_t len) override;
    bool accept_failed(int e) override;
    void on_retry();

    session_group& group_;
    unique_fd fd_;
    std::unique_ptr<acceptor_io> io_;  // the backend's half: accepts
    session_group::accept_fn on_accept_;
    std::string unlink_path_;
    timer_node retry_;
};

}  // namespace strix::detail
