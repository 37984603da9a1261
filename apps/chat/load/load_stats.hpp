#pragma once
// load_stats: the counters one worker keeps for one interval (or one whole phase), summed across
// workers and intervals by merge(). Everything is counted from the load tool's side of the socket:
//
//   reads / writes         read() and write() syscalls on the client sockets
//   bytes_in / bytes_out   bytes those syscalls moved
//   sent                   chat_req frames appended (the server's "app in")
//   acked                  chat_msg frames a sender got back for its own chat_req ("app out":
//                          one per broadcast)
//   delivered              chat_msg frames accepted by a receiver (sender included), i.e. every
//                          delivery that was neither a duplicate nor corrupt ("bc-deliv")
//   expected               deliveries the messages sent owe: members of the room at send time
//   refused                of those, deliveries owed by chat_req the server answered with
//                          error_res (counted as errors, not as lost)

#include "latency_histogram.hpp"

#include <array>
#include <cstdint>

namespace strix::chat {

/// error_code values are small; anything past the array is folded into the last slot.
inline constexpr std::size_t error_slots = 16;

struct load_stats {
    std::uint64_t reads = 0;
    std::uint64_t writes = 0;
    std::uint64_t bytes_in = 0;
    std::uint64_t bytes_out = 0;
    std::uint64_t sent = 0;
    std::uint64_t acked = 0;
    std::uint64_t delivered = 0;
    std::uint64_t expected = 0;
    std::uint64_t refused = 0;      ///< deliveries owed by chat_req the server refused (error_res)
    std::uint64_t duplicates = 0;
    std::uint64_t out_of_order = 0;
    std::uint64_t gaps = 0;
    std::uint64_t corrupt = 0;      ///< wrong text, unknown sender, wrong room, undecodable body
    std::uint64_t disconnects = 0;  ///< connections the server closed
    std::uint64_t unexpected = 0;   ///< other unexpected frames (member_left during the run, ...)
    std::uint64_t send_lag_max_ns = 0;  ///< worst lateness of a send against its schedule
    std::uint64_t busy_ns = 0;          ///< event-loop time spent between epoll waits
    std::uint64_t max_turn_ns = 0;      ///< longest such stretch: the most a receipt can be delayed
    std::array<std::uint64_t, error_slots> errors{};  ///< error_res by error_code
    latency_histogram latency;
    /// The same path cut at the server's timestamp (server_ts_us, taken when the room sequences
    /// the message; wall clock, mapped onto ours): sender to server per message (its own copy),
    /// server to each receiver per delivery.
    latency_histogram to_server;
    latency_histogram from_server;

    /// Adds `o` into this one (sums, and the maximum of the maxima). Owner thread only.
    void merge(const load_stats& o) noexcept {
        reads += o.reads;
        writes += o.writes;
        bytes_in += o.bytes_in;
        bytes_out += o.bytes_out;
        sent += o.sent;
        acked += o.acked;
        delivered += o.delivered;
        expected += o.expected;
        refused += o.refused;
        duplicates += o.duplicates;
        out_of_order += o.out_of_order;
        gaps += o.gaps;
        corrupt += o.corrupt;
        disconnects += o.disconnects;
        unexpected += o.unexpected;
        if (o.send_lag_max_ns > send_lag_max_ns) send_lag_max_ns = o.send_lag_max_ns;
        busy_ns += o.busy_ns;
        if (o.max_turn_ns > max_turn_ns) max_turn_ns = o.max_turn_ns;
        for (std::size_t i = 0; i < error_slots; ++i) errors[i] += o.errors[i];
        latency.merge(o.latency);
        to_server.merge(o.to_server);
        from_server.merge(o.from_server);
    }

    /// Total error_res frames of every code. Owner thread only.
    std::uint64_t error_total() const noexcept {
        std::uint64_t n = 0;
        for (std::uint64_t e : errors) n += e;
        return n;
    }
};

}  // namespace strix::chat
