#pragma once
// The shard's half of a blocking_socket, and what the two threads share.
//
//   application thread                                   the socket's shard
//   send() ──> shared.out (msg_pipe) ─────────────────> bridge::drain() ──> link::socket::send
//              posts a drain task only when the          up to a budget per loop turn; at
//              drainer went idle (drain_idle)            would_block it waits for on_writable
//   recv() <── shared.in  (msg_pipe) <───────────────── on_message: records, published once per
//              sleeps on wake_seq (futex) only when      turn (on_flush), which also wakes the
//              the pipe is empty (waiting says why)      application if it sleeps on something
//                                                        that happened
// Both wake-ups are Dekker-style: each side publishes, fences, then reads the other side's
// "asleep" flag, so one of the two always sees the other (the shard's doorbell in shard.cpp
// works the same way).

#include "link/blocking/msg_pipe.hpp"

#include <strix/core/reactor_object.hpp>
#include <strix/core/shard.hpp>
#include <strix/core/timing_wheel.hpp>
#include <strix/link/socket.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace strix::link::detail {

/// Sleeps while `word` holds `expected`, for at most `rel` (nullptr: no limit), or until woken.
/// Any thread.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, const timespec* rel) noexcept;
/// Wakes every thread sleeping on `word`. Any thread.
void futex_wake_all(std::atomic<std::uint32_t>& word) noexcept;

/// A context's sockets that are closed but still sending (their linger); the context's
/// destructor waits for none to be left.
struct closing_sockets {
    void add();
    void done();
    void wait_none();

private:
    std::mutex mu_;
    std::condition_variable cv_;
    int n_ = 0;
};

struct direct_link;

/// What the application thread sleeps on.
enum class app_wait : std::uint8_t { none, recv, space, any };

/// Shared by a blocking_socket (its thread) and its bridge (the shard).
struct blocking_shared {
    explicit blocking_shared(const socket_options& o) { follow(o); }
    ~blocking_shared();

    /// Takes the limits from o (the constructor; set_options, on the shard during the
    /// application's round trip, which orders it before the application's next call).
    void follow(const socket_options& o) noexcept {
        out_limit.store(o.sndhwm, std::memory_order_relaxed);
        in_cap.store(o.rcvhwm ? o.rcvhwm : 1000, std::memory_order_relaxed);
        conflate.store(o.conflate, std::memory_order_relaxed);
    }

    msg_pipe out;  // application -> shard
    msg_pipe in;  // shard -> application
    // Read by both threads with relaxed loads (plain loads: nothing added per message), written
    // only by follow().
    std::atomic<std::uint64_t> out_limit;  // sndhwm: send() waits while out holds this many (0: never)
    std::atomic<std::uint64_t> in_cap;  // rcvhwm: the shard pauses receiving while in holds this many

    // The drainer has nothing to do: the next send posts a drain task (and clears the flag).
    alignas(64) std::atomic<bool> drain_idle{true};
    // The application's sleep: it waits for wake_seq to change, with `waiting` saying what for.
    alignas(64) std::atomic<std::uint32_t> wake_seq{0};
    std::atomic<app_wait> waiting{app_wait::none};
    // The shard paused receiving because `in` is full; the application resumes it (once).
    std::atomic<bool> in_paused{false};
    std::atomic<std::uint64_t> writable{0};  // on_writable calls (a send that must wait for one)
    std::atomic<std::uint64_t> event_seq{0};  // monitor events so far
    std::atomic<std::uint64_t> peers{0};  // the socket's peers, as of the shard's last turn
    // blocking_socket::interrupt(): every wait returns as after its timeout.
    std::atomic<bool> interrupted{false};
    // blocking_socket::notify_fd(): an eventfd the shard writes at a turn that changed anything,
    // once until the application clears notify_set (so a busy socket costs one write per look).
    std::atomic<int> notify_fd{-1};
    std::atomic<bool> notify_set{false};
    std::atomic<bool> conflate;  // socket_options::conflate: the drainer sends only the newest message
    std::mutex mu;
    std::deque<socket_event> events;  // the most recent 1,000

    // REP: its direct link to a REQ (src/link/blocking/direct_link.hpp), set once by the REQ's thread at
    // connect; owned by the link registry until the REP closes. Read on the REP's thread.
    std::atomic<direct_link*> direct{nullptr};

    // The application thread's scratch space (its thread only).
    std::vector<msg_pipe::entry> app_entries;
};

/// The shard's half: owns the link::socket, drains `out` into it, fills `in` from it. Lives on
/// its shard from create() until it finished closing (it holds itself meanwhile).
class blocking_bridge final : public reactor_object {
public:
    /// Builds the socket and its bridge. On the shard.
    static blocking_bridge* create(shard& sh, socket_type t, const socket_options& o,
                                   std::shared_ptr<blocking_shared> st, std::shared_ptr<closing_sockets> closing);

    socket& sock() noexcept { return *sock_; }
    /// Sends what `out` holds: at most `budget` messages now, the rest from a later turn, until
    /// would_block (then on_writable goes on). On the shard.
    void drain(std::size_t budget = drain_budget);
    /// The path of a send whose result depends on the shard's state (REQ and REP out of turn,
    /// ROUTER with router_mandatory): `out` first, then m, and the result. On the shard.
    std::error_code send_now(const message& m, bool req);
    /// The application read `in` down: receive again. On the shard.
    void resume_receiving();
    /// blocking_socket::set_options: the socket's options and the pipes' limits. Throws (a
    /// malformed key) before changing anything. On the shard.
    void set_options(const socket_options& o);
    /// The application closed the socket: `out` keeps going out (then the socket's own queues)
    /// until delivered or the linger passes. On the shard.
    void close();

    /// blocking_socket::on_shard_event. On the shard.
    void set_event_hook(std::function<void(const socket_event&)> f) { event_hook_ = std::move(f); }

    void on_io(std::uint32_t) override {}
    void on_flush() override;

    static constexpr std::size_t drain_budget = 512;

private:
    blocking_bridge(shard& sh, std::shared_ptr<blocking_shared> st, std::shared_ptr<closing_sockets> closing);
    void on_message(message_view m);
    void on_writable();
    void on_event(const socket_event& e);
    std::error_code send_front();
    void repost();
    void notify() noexcept;
    void finish(std::chrono::milliseconds linger);
    std::chrono::milliseconds linger_left() const;

    shard& owner_;
    std::shared_ptr<blocking_shared> st_;
    std::shared_ptr<closing_sockets> closing_;
    std::unique_ptr<socket> sock_;
    reactor_object_ptr self_;  // alive until finished
    std::vector<msg_pipe::entry> entries_;
    std::vector<bytes_view> views_;
    std::vector<part> srcs_;
    message_properties_ptr last_props_;  // the properties `in` had put last
    std::function<void(const socket_event&)> event_hook_;
    timer_node linger_timer_;
    std::chrono::steady_clock::time_point deadline_;
    shard::hook_id exit_hook_ = 0;
    bool pushed_ = false;  // records put into `in` this turn (published at on_flush)
    bool paused_ = false;  // receiving paused for a full `in`
    bool blocked_ = false;  // the drainer waits for on_writable
    bool draining_ = false;
    bool closing_now_ = false;
    bool finished_ = false;
};

}  // namespace strix::link::detail
