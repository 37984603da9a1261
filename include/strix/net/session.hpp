#pragma once
// session: one connection, owned by one shard.
//
//   socket --backend--> ring_buffer --framer cuts frames--> handler.on_frame --send()--> buffer_chain
//                                                                                           |
//   socket <--backend-- one gather send per loop turn, in the flush <-----------------------+
//
// send() never writes: it appends to the chain and marks the session dirty, so a handler that
// sends once per message still costs one system call per connection per turn.
//
// The bytes move through the shard's backend (epoll or io_uring), which the session meets only
// as a stream: it lends the free space of its ring (recv_space), hears what arrived (received),
// takes whole frames where they lie when the backend received into a buffer of its own
// (received_in_place: io_uring's provided buffers, saving a copy into the ring),
// and hands the chain over once per turn (see strix/core/stream_user.hpp). A transport that
// changes the bytes (TLS) sits at that seam: a stream_user towards the backend, feeding the
// session's ring above it.
//
// Sessions come from a session_group: accepted by one of its listeners, or connected by one of
// its connections (origin()). Every function here is for the owning shard's thread only.

#include <strix/core/buffer_chain.hpp>
#include <strix/core/metrics.hpp>
#include <strix/core/reactor_object.hpp>
#include <strix/core/ring_buffer.hpp>
#include <strix/core/shared_buffer.hpp>
#include <strix/core/stream_user.hpp>
#include <strix/core/timing_wheel.hpp>
#include <strix/core/unique_fd.hpp>

#include <boost/container/string.hpp>

#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace strix {

namespace detail {
class stream_io;
class tls_stream;
}// namespace detail
struct tls_info;
class shard;
class framer;
class frame_error;
class connection;
class session_group;

/// Per-connection limits. Every one is checked before memory is committed.
struct session_limits {
    std::uint32_t max_frame = 64 * 1024;       // larger frames close the connection (any framer)
    // Frames above max_frame up to this size are not refused but collected outside the ring, in
    // a buffer that grows with the bytes that arrive (not with what the header claims), and
    // handed to on_frame whole. 0 = none (above max_frame closes). For protocols whose messages
    // may be far larger than a connection's ring should be (ZMTP: libzmq's default has no limit).
    std::size_t max_large_frame = 0;
    std::size_t recv_buffer = 64 * 1024;       // ring capacity; raised to fit max_frame
    std::size_t high_water = 256 * 1024;       // queued output that pauses reading from the peer
    std::size_t low_water = 64 * 1024;         // ... and resumes it
    std::size_t max_queued = 1024 * 1024;      // queued output that disconnects a slow consumer
    // Output at least this large after a read's frames is sent at once, mid-turn, while its bytes
    // (and the request bytes they came from) are still in the CPU's cache; smaller output waits
    // for the turn's end and joins its gather write. 0 = only at the turn's end.
    std::size_t flush_bytes = 32 * 1024;
    std::chrono::milliseconds idle_timeout{0};  // 0 = never
    std::chrono::milliseconds stall_timeout{10000};  // reading paused this long = slow consumer; 0 = never
    std::chrono::milliseconds close_linger{5000};  // how long close() waits to flush
    // A frame still incomplete this long after its first byte arrived closes the connection
    // (frame_timeout), however slowly the rest trickles in: every read resets idle_timeout, this
    // one only a completed frame. Time spent with reading paused or suspended does not count. 0 = never.
    std::chrono::milliseconds frame_timeout{0};
    // handshake_done() not called this long after the session opened closes it
    // (handshake_timeout): a login, a protocol greeting. 0 = never.
    std::chrono::milliseconds handshake_timeout{0};
};

namespace detail {
// Type-erased holder of a session's application state (see session::emplace_state).
struct session_state_base {
    virtual ~session_state_base() = default;
    const void* tag = nullptr;
};
template <class T>
inline constexpr char state_tag = 0;  // one address per type: what state<T>() compares
template <class T>
struct session_state final : session_state_base {
    template <class... A>
    explicit session_state(A&&... a) : value(std::forward<A>(a)...) {
        tag = &state_tag<T>;
    }
    T value;
};
}  // namespace detail

class session final : public reactor_object, private stream_user {
public:
    ~session() override;

    /// Queues a copy of bytes for the peer (coalesced with other sends this turn).
    /// No-op once the session is closing. Never calls back into the handler: output beyond
    /// max_queued (a slow consumer) is dropped and the session closes at the end of the turn.
    void send(std::span<const std::byte> bytes);

    /// Queues a copy of head followed by body, as one message (a protocol header built on the
    /// stack and its payload, e.g. a WebSocket frame, without first copying them together).
    void send(std::span<const std::byte> head, std::span<const std::byte> body);

    /// Queues a reference to an immutable shared buffer (no copy).
    void send(shared_buffer_ptr buf);
    void send(shared_buffer_ptr buf, std::size_t offset, std::size_t length);

    /// Stops reading, flushes what is queued (up to close_linger), then closes.
    void close(std::error_code reason = {});

    /// Closes now, dropping queued output.
    void abort(std::error_code reason);

    /// Stops (true) or resumes (false) reading from the peer on the application's behalf, e.g.
    /// while a consumer on another thread catches up. Unlike backpressure this never counts as
    /// a stall. Called from on_frame it takes effect at once: the frames after this one wait in
    /// the receive ring. On resume they are handed over first, then the socket is read again.
    void suspend_reading(bool on);

    /// The application's handshake (login, greeting) is complete: handshake_timeout no longer
    /// applies to this session.
    void handshake_done() noexcept { life_.handshake_done = true; }
    bool handshake_pending() const noexcept { return !life_.handshake_done; }

    /// Asks for handler.on_drained(*this) once, the next time a flush leaves nothing queued.
    void notify_when_drained() noexcept { life_.drain_watch = true; }

    /// Changes the frame size limit from now on (e.g. larger once a client logged in), up to the
    /// receive ring's size.
    void set_max_frame(std::uint32_t max_frame) noexcept;
    std::uint32_t max_frame() const noexcept { return in_.max_frame; }

    /// Cuts the following frames with f instead (a protocol that changes framing after a
    /// handshake). Takes effect for the next frame, also within the current read. f must outlive
    /// the session (framers are normally static).
    void set_framer(const framer& f) noexcept;
    const framer& current_framer() const noexcept { return *in_.framing; }

    // --- application state ------------------------------------------------------------------
    // One object of any type per session, owned by it and destroyed right after on_close (so it
    // may hold a session_ptr back to the session without a cycle outliving the connection).

    /// Builds the session's state as a T (replacing any previous state) and returns it.
    template <class T, class... A>
    T& emplace_state(A&&... args) {
        auto holder = std::make_unique<detail::session_state<T>>(std::forward<A>(args)...);
        T& ref = holder->value;
        state_ = std::move(holder);
        return ref;
    }
    /// The state if there is one and it is a T, else nullptr.
    template <class T>
    T* state() noexcept {
        if (!state_ || state_->tag != &detail::state_tag<T>) return nullptr;
        return &static_cast<detail::session_state<T>*>(state_.get())->value;
    }
    /// Destroys the state now.
    void reset_state() noexcept { state_.reset(); }

    // --- identity ---------------------------------------------------------------------------

    std::uint64_t id() const noexcept { return id_; }
    shard& owner() const noexcept { return owner_; }
    session_group& group() const noexcept { return group_; }
    /// The connection that made this session, or nullptr for an accepted one.
    connection* origin() const noexcept;
    bool is_open() const noexcept { return life_.state == phase::open; }
    std::size_t queued_bytes() const noexcept { return out_.tx.size(); }
    /// The peer's address as text ("a.b.c.d:port", "[v6]:port", "unix", or an outgoing
    /// connection's target). Valid while the session lives.
    std::string_view peer() const noexcept { return {peer_.data(), peer_.size()}; }
    /// The connected socket's descriptor, for queries such as getpeername (never close it, and
    /// never read or write it: the session does).
    int native_handle() const noexcept { return fd_.get(); }
    /// What TLS negotiated, or nullptr for a plain session (and before a TLS handshake is done:
    /// handlers hear on_open only after it, so from on_open on this is set for a TLS session).
    const tls_info* tls() const noexcept;

private:
    friend class session_group;
    enum class phase : std::uint8_t { open, closing, closed };
    static constexpr std::uint64_t no_deadline = UINT64_MAX;

    session(session_group& g, unique_fd fd, std::uint64_t id, std::string peer, intrusive_ptr<connection> origin);
    void start();
    std::error_code open_stream();
    void open_handler();
    void on_io(std::uint32_t events) override;
    void on_flush() override;
    // stream_user: what the backend tells the session.
    int recv_space(iovec (&iov)[2]) override;
    bool received(std::size_t n) override;
    std::size_t received_in_place(std::span<std::byte> data) override;
    void peer_closed() override;
    void stream_failed(std::error_code ec) override;
    void sent(std::size_t n) override;
    void send_ready() override;
    void established() override;

    // The idle sweep's look at a session on its list: freed (buffers handed back) and settled
    // (idle and holding nothing: off the list).
    struct sweep_result {
        bool freed = false;
        bool settled = false;
    };
    sweep_result trim_if_idle(std::uint64_t quiet_ticks) noexcept;
    void queued();
    void drop_slow_consumer() noexcept;
    void publish_sends() noexcept;
    bool process_frames();
    std::size_t hand_frames(std::span<const std::byte> span, std::uint64_t& frames, frame_error& bad);
    std::size_t rest_of_ring_frame();
    void protocol_error(std::error_code ec);
    void flush_now();
    void flush_early();
    void finalize(std::error_code reason);
    void pause_reading();
    void resume_reading();
    void update_receiving();
    bool acquire_rx();
    void release_rx(bool cold = false);
    void on_timer();
    void arm_timer();
    std::size_t collect_large(std::span<const std::byte> bytes, std::uint64_t& frames, frame_error& bad);
    void drop_large() noexcept;
    void track_partial(std::uint64_t frames) noexcept;
    void restart_partial() noexcept;
    void expire(std::error_code reason, counter& count);

    session_group& group_;
    shard& owner_;
    unique_fd fd_;
    std::unique_ptr<detail::stream_io> io_;  // the backend's half: moves the bytes (or TLS over it)
    detail::tls_stream* tls_ = nullptr;      // io_, when it is TLS
    const std::uint64_t id_;
    // Up to 22 bytes in place, every IPv4 "a.b.c.d:port" among them (a std::string keeps 15 and
    // put those on the heap: 32 bytes more per connection).
    boost::container::string peer_;
    intrusive_ptr<connection> origin_;  // keeps the connection alive to hear of the close
    std::unique_ptr<detail::session_state_base> state_;
    timer_node timer_;  // every deadline below (arm_timer)

    struct input {
        ring_buffer rx;
        const framer* framing = nullptr;  // cuts the frames
        std::uint64_t last_rx_tick = 0;
        std::uint64_t paused_since_tick = 0;
        std::uint64_t partial_deadline_tick = no_deadline;  // frame_timeout of the incomplete frame in rx
        std::uint32_t max_frame = 0;
        bool length_prefix = false;  // framer is length_prefix_framer(): cut inline
        bool large = false;          // a frame above max_frame is being collected (the group holds it)
        bool paused = false;     // backpressure: output reached high water, reading stopped
        bool suspended = false;  // suspend_reading(true): the application stopped reading
    } in_;

    struct output {
        buffer_chain tx;
        std::uint64_t unpublished_sends = 0;  // send() calls not yet added to the group's counter
    } out_;

    struct lifecycle {
        std::uint64_t opened_tick = 0;
        std::uint64_t close_deadline_tick = 0;
        std::error_code close_reason;
        phase state = phase::open;
        bool holds_shard = false;     // a graceful close holds the shard's drain
        bool handshake_done = false;  // handshake_done(): handshake_timeout no longer applies
        bool admitted = false;        // counted by the group's admission (released on close)
        bool handler_open = false;    // the handler heard on_open (and so will hear on_close)
        bool sweep_listed = false;    // on the group's idle sweep list (session_group::list_for_sweep)
        bool drain_watch = false;     // notify_when_drained() asked for on_drained
    } life_;
};

using session_ptr = intrusive_ptr<session>;

}  // namespace strix
