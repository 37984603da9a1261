#pragma once
// hold_worker: one of strix-chat-hold's event loops. It owns the connections with index
// i % threads == its number, in one epoll set, and drives each through
//
//   idle -> connecting -> (upgrading: WebSocket) -> logging_in -> (joining: --hold-room) -> held
//
// with at most its share of --in-flight between idle and held and its share of --rate started per
// second. Memory per connection: one hold_conn (32 bytes); the read buffer is the worker's and
// frames are parsed in it, in place. Pings go out from a wheel of 10 ms buckets over the ping
// interval: bucket b holds slots b, b + B, b + 2B..., so a tick touches only what is due. Workers
// tick at phases spread over the 10 ms, so their pings do not reach the server at one instant.

#include "hold_shared.hpp"

#include <flatbuffers/flatbuffers.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

namespace strix::chat::hold {

class hold_worker {
public:
    /// Worker `number` of `count`; counters are its own. Construct on any thread, run on one.
    hold_worker(hold_shared& shared, worker_counters& out, std::uint32_t number, std::uint32_t count);
    ~hold_worker();
    hold_worker(const hold_worker&) = delete;
    hold_worker& operator=(const hold_worker&) = delete;

    /// The loop: returns once shared.stop is set, after counting what each connection missed.
    /// The worker's own thread.
    void run();

private:
    struct retry {
        std::int64_t due_ns;
        std::uint32_t slot;
    };

    std::uint32_t index_of(std::uint32_t slot) const noexcept { return number_ + slot * count_; }
    void ramp(std::int64_t now);
    void start(std::uint32_t slot);
    void on_event(std::uint32_t slot, std::uint32_t events, std::int64_t now);
    void on_connected(std::uint32_t slot);
    void send_login(std::uint32_t slot);
    void send_join(std::uint32_t slot);
    void ping_tick(std::int64_t now);
    void run_retries(std::int64_t now);
    void schedule(std::uint32_t slot, std::int64_t now, std::int64_t delay_ns);
    // Sends out_ (frames appended since begin_out()); WebSocket connections get each wrapped.
    void begin_out() { out_.clear(); }
    void frame_done();
    void flush(std::uint32_t slot);
    void fail(std::uint32_t slot, const char* why, bool retryable, std::int64_t now);
    void close_conn(hold_conn& c);

    // hold_worker_read.cpp: bytes in, units out, frames handled.
    void on_readable(std::uint32_t slot, std::int64_t now);
    std::size_t parse(std::uint32_t slot, std::byte* p, std::size_t n, std::int64_t now, bool& alive);
    bool on_unit(std::uint32_t slot, std::span<std::byte> unit, std::int64_t now);
    bool on_upgrade_answer(std::uint32_t slot, std::span<const std::byte> head);
    bool on_frame(std::uint32_t slot, std::span<const std::byte> frame, std::int64_t now);
    bool on_login_res(std::uint32_t slot, std::span<const std::byte> frame);
    bool on_error_res(std::uint32_t slot, std::span<const std::byte> frame, std::int64_t now);
    void on_chat(hold_conn& c, std::span<const std::byte> frame, std::int64_t now);
    void become_held(hold_conn& c, bool in_room);
    void check_rejoin(const hold_conn& c, std::uint64_t room_last_seq);
    void keep_carry(hold_conn& c, const std::byte* p, std::size_t n, std::size_t need);
    void count_losses();

    hold_shared& shared_;
    worker_counters& out_counters_;
    const std::uint32_t number_, count_;
    const bool ws_;
    std::vector<hold_conn> conns_;
    int epfd_ = -1;
    std::vector<std::byte> buf_;  // the shared read buffer
    std::vector<std::byte> out_;
    std::size_t frame_at_ = 0;  // where the frame being built starts in out_
    flatbuffers::FlatBufferBuilder fbb_{512};
    std::unordered_map<std::uint32_t, std::vector<std::byte>> pending_out_;  // partial writes (rare)
    std::deque<retry> retries_;  // all with the same delay, so in due order
    std::deque<std::uint32_t> restarts_;  // idle slots to connect again, under the in-flight cap
    std::uint32_t next_start_ = 0;
    std::uint32_t in_flight_ = 0;
    std::uint32_t in_flight_cap_;
    double rate_;  // this worker's connects per second, 0: unpaced
    std::int64_t ramp_start_ns_ = 0;
    std::uint32_t ping_buckets_;
    std::int64_t read_every_ns_;  // --read-every: the least time between two reads once all are held
    std::uint64_t tick_ = 0;
    std::int64_t next_tick_ns_ = 0;
    std::uint32_t mask_rng_;
};

/// Steady clock in nanoseconds. Any thread.
std::int64_t now_ns() noexcept;

}  // namespace strix::chat::hold
