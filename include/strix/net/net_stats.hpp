#pragma once
// Per-shard network counters. Each shard writes its own (single writer, relaxed, no lock prefix);
// server::stats() sums a snapshot from any thread.

#include <atomic>
#include <cstdint>

namespace strix {

struct net_counters {
    std::atomic<std::uint64_t> accepted{0};       // sessions opened: accepted, or connected (below)
    std::atomic<std::uint64_t> connected{0};      // outbound connections established
    std::atomic<std::uint64_t> connect_failures{0};  // outbound attempts that failed or timed out
    std::atomic<std::uint64_t> closed{0};
    std::atomic<std::uint64_t> active{0};
    std::atomic<std::uint64_t> reads{0};          // read system calls that returned data
    std::atomic<std::uint64_t> writes{0};         // gather write system calls that wrote data
    std::atomic<std::uint64_t> bytes_in{0};
    std::atomic<std::uint64_t> bytes_out{0};
    std::atomic<std::uint64_t> frames_in{0};
    std::atomic<std::uint64_t> sends{0};          // session::send calls (messages queued)
    std::atomic<std::uint64_t> frame_errors{0};
    std::atomic<std::uint64_t> slow_consumers{0};
    std::atomic<std::uint64_t> idle_timeouts{0};
    std::atomic<std::uint64_t> frame_timeouts{0};      // frames not completed within frame_timeout
    std::atomic<std::uint64_t> handshake_timeouts{0};  // handshake_done() not called within handshake_timeout
    std::atomic<std::uint64_t> refused_max_sessions{0};  // accepted and closed at once: max_sessions reached
    std::atomic<std::uint64_t> refused_per_address{0};   // ... max_sessions_per_address reached
    std::atomic<std::uint64_t> accept_pauses{0};  // EMFILE/ENFILE/ENOMEM: accepting paused
    std::atomic<std::uint64_t> read_pauses{0};    // backpressure: reading paused at high water
    std::atomic<std::uint64_t> recv_buffers_in_use{0};
    std::atomic<std::uint64_t> recv_buffers_peak{0};
    std::atomic<std::uint64_t> recv_buffer_takes{0};    // receive buffers taken from the pool
    std::atomic<std::uint64_t> recv_buffer_returns{0};  // receive buffers given back to it
};

/// A plain copy of the counters, summed over shards.
struct net_stats {
    std::uint64_t accepted = 0, connected = 0, connect_failures = 0, closed = 0, active = 0, reads = 0, writes = 0, bytes_in = 0,
                  bytes_out = 0, frames_in = 0, sends = 0, frame_errors = 0, slow_consumers = 0,
                  idle_timeouts = 0, frame_timeouts = 0, handshake_timeouts = 0, refused_max_sessions = 0,
                  refused_per_address = 0, accept_pauses = 0, read_pauses = 0, recv_buffers_in_use = 0,
                  recv_buffers_peak = 0, recv_buffer_takes = 0, recv_buffer_returns = 0;
    void add(const net_counters& c) noexcept;
};

}  // namespace strix
