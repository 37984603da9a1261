#pragma once
// session: one connection, owned by one shard.
//
//   socket --readv--> ring_buffer --frames--> handler.on_frame --send()--> buffer_chain
//                                                                              |
//   socket <--------------- one sendmsg (gather) per loop turn, in on_flush <--+
//
// send() never writes: it appends to the chain and marks the session dirty, so a handler that
// sends once per message still costs one system call per connection per turn.

#include <strix/core/buffer_chain.hpp>
#include <strix/core/reactor_object.hpp>
#include <strix/core/ring_buffer.hpp>
#include <strix/core/shared_buffer.hpp>
#include <strix/core/timing_wheel.hpp>

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <system_error>

namespace strix {

class shard;
class session_handler;
namespace detail {
class net_shard;
}

/// How a session cuts its byte stream into frames.
enum class frame_format : std::uint8_t {
    length_prefix_le32,  // 4-byte little-endian total length (header included), then the body (seed 001)
    strix_header,        // strix's 12-byte header with optional CRC32C (docs/wire_format.md)
};

/// Per-connection limits. Every one is checked before memory is committed.
struct session_limits {
    std::uint32_t max_frame = 64 * 1024;       // larger length fields close the connection
    std::size_t recv_buffer = 64 * 1024;       // ring capacity; raised to fit max_frame
    std::size_t high_water = 256 * 1024;       // queued output that pauses reading from the peer
    std::size_t low_water = 64 * 1024;         // ... and resumes it
    std::size_t max_queued = 1024 * 1024;      // queued output that disconnects a slow consumer
    std::chrono::milliseconds idle_timeout{0};  // 0 = never
    std::chrono::milliseconds stall_timeout{10000};  // reading paused this long = slow consumer; 0 = never
    std::chrono::milliseconds close_linger{5000};  // how long close() waits to flush
};

class session final : public reactor_object {
public:
    ~session() override;

    /// Queues a copy of bytes for the peer (coalesced with other sends this turn).
    /// Owning shard only. No-op once the session is closing.
    void send(std::span<const std::byte> bytes);

    /// Queues a reference to an immutable shared buffer (no copy). Owning shard only.
    void send(shared_buffer_ptr buf);
    void send(shared_buffer_ptr buf, std::size_t offset, std::size_t length);

    /// Stops reading, flushes what is queued (up to close_linger), then closes. Owning shard only.
    void close(std::error_code reason = {});

    /// Closes now, dropping queued output. Owning shard only.
    void abort(std::error_code reason);

    /// Changes the frame size limit from now on (e.g. larger once a client logged in).
    /// Owning shard only.
    void set_max_frame(std::uint32_t max_frame) noexcept;

    std::uint64_t id() const noexcept { return id_; }
    shard& owner() const noexcept;
    bool is_open() const noexcept { return state_ == state::open; }
    std::size_t queued_bytes() const noexcept { return tx_.size(); }
    const std::string& peer() const noexcept { return peer_; }

    /// Free for the application (e.g. a pointer to its per-connection state). Owning shard only.
    void* user_data = nullptr;

    /// Frees the send chain's chunks and returns the receive ring to the shard's pool if nothing
    /// is queued and nothing arrived for quiet_ticks. True if it freed anything.
    /// Called by the shard's periodic sweep, so a busy session keeps its chunk between turns and
    /// an idle one costs little memory. Owning shard only.
    bool trim_if_idle(std::uint64_t quiet_ticks) noexcept;

    void on_io(std::uint32_t events) override;
    void on_flush() override;

private:
    friend class detail::net_shard;
    enum class state : std::uint8_t { open, closing, closed };

    session(detail::net_shard& ns, int fd, std::uint64_t id, std::string peer);
    void start();
    void queued();
    void publish_sends() noexcept;
    void do_read();
    enum class frame_check : std::uint8_t { ok, need_more, too_small, too_large, bad };
    frame_check check_frame(const std::byte* p, std::size_t avail, std::size_t& len) const noexcept;
    bool process_frames();
    void protocol_error(std::error_code ec);
    void flush_now();
    void flush_writes();
    void want_writable(bool on);
    void finalize(std::error_code reason);
    void pause_reading();
    void resume_reading();
    bool acquire_rx();
    void release_rx(bool cold = false);
    static void on_timer(timer_node& t);
    void arm_timer();

    detail::net_shard& ns_;
    int fd_;
    const std::uint64_t id_;
    std::string peer_;
    ring_buffer rx_;
    buffer_chain tx_;
    timer_node timer_;
    std::uint64_t last_rx_tick_ = 0;
    std::uint64_t close_deadline_tick_ = 0;
    std::uint64_t paused_since_tick_ = 0;
    std::uint64_t unpublished_sends_ = 0;  // send() calls not yet added to the shard's counter
    std::uint32_t max_frame_;
    state state_ = state::open;
    bool read_paused_ = false;
    bool read_pending_ = false;   // the socket may still hold data we did not read (paused)
    bool holds_shard_ = false;    // a graceful close holds the shard's drain
    bool write_interest_ = false; // EPOLLOUT registered: a write hit a full socket buffer
    std::error_code close_reason_;
};

using session_ptr = intrusive_ptr<session>;

}  // namespace strix
