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
//   dropped_owed           of those, deliveries owed by chat_req whose connection went before
//                          their ack (the server may or may not have taken them); reclaimed_owed
//                          adds back the ones the sender later saw (refilled or live): owed =
//                          expected - refused - dropped_owed + reclaimed_owed
//   direct_*               the conversations workload: the part of sent / expected / delivered
//                          that went to direct rooms (the rest went to group rooms)

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
    // --reconnect / --reconnect-share only (zero otherwise).
    std::uint64_t drops = 0;               ///< connections the tool reset on purpose
    std::uint64_t lost_connections = 0;    ///< connections lost from the server's side (reset, closed)
    std::uint64_t reconnects = 0;          ///< resume logins that succeeded
    std::uint64_t reconnect_retries = 0;   ///< reconnect attempts that failed (refused, reset) and were retried
    std::uint64_t reconnect_failures = 0;  ///< clients that gave up reconnecting
    std::uint64_t tokens_refused = 0;      ///< resume tokens refused (invalid_token): logged in with the password
    std::uint64_t resumes = 0;             ///< reconnects whose missed seqs were all refilled
    std::uint64_t refilled = 0;            ///< messages resume_res brought
    std::uint64_t resume_gaps = 0;         ///< resume_res answers with status gap
    std::uint64_t gap_seqs = 0;            ///< seqs those gap answers covered
    std::uint64_t gaps_over_max = 0;       ///< of the gap answers, those for more than 1000 seqs (--resume-max)
    std::uint64_t history_refilled = 0;    ///< messages history_req brought after a gap answer
    std::uint64_t history_retries = 0;     ///< history answers with a hole or short of the range, asked again
    std::uint64_t refill_missing = 0;      ///< missed seqs neither resume nor history gave: lost
    std::uint64_t presence = 0;            ///< member_presence notices (members dropping and coming back)
    std::uint64_t rejoin_as_joined = 0;    ///< member_joined for a member coming back (docs: member_presence)
    std::uint64_t dropped_owed = 0;        ///< see the table above
    std::uint64_t reclaimed_owed = 0;      ///< see the table above
    std::uint64_t direct_sent = 0;       ///< of sent, to direct rooms (conversations workload)
    std::uint64_t direct_expected = 0;   ///< of expected, owed by those
    std::uint64_t direct_delivered = 0;  ///< of delivered, in direct rooms
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
    /// --targets with several nodes: the same send-to-receipt latency, apart for deliveries whose
    /// receiver is on the sender's node and on another one (the cross-node hop through Redis).
    latency_histogram same_node;
    latency_histogram cross_node;
    /// --reconnect: from losing a connection until every missed seq was refilled (or given up).
    latency_histogram resume_time;
    /// The conversations workload: the send-to-receipt latency of group room and of direct
    /// messages apart (both also in `latency`).
    latency_histogram room_latency;
    latency_histogram direct_latency;

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
        drops += o.drops;
        lost_connections += o.lost_connections;
        reconnects += o.reconnects;
        reconnect_retries += o.reconnect_retries;
        reconnect_failures += o.reconnect_failures;
        tokens_refused += o.tokens_refused;
        resumes += o.resumes;
        refilled += o.refilled;
        resume_gaps += o.resume_gaps;
        gap_seqs += o.gap_seqs;
        gaps_over_max += o.gaps_over_max;
        history_refilled += o.history_refilled;
        history_retries += o.history_retries;
        refill_missing += o.refill_missing;
        presence += o.presence;
        rejoin_as_joined += o.rejoin_as_joined;
        dropped_owed += o.dropped_owed;
        reclaimed_owed += o.reclaimed_owed;
        direct_sent += o.direct_sent;
        direct_expected += o.direct_expected;
        direct_delivered += o.direct_delivered;
        if (o.send_lag_max_ns > send_lag_max_ns) send_lag_max_ns = o.send_lag_max_ns;
        busy_ns += o.busy_ns;
        if (o.max_turn_ns > max_turn_ns) max_turn_ns = o.max_turn_ns;
        for (std::size_t i = 0; i < error_slots; ++i) errors[i] += o.errors[i];
        latency.merge(o.latency);
        to_server.merge(o.to_server);
        from_server.merge(o.from_server);
        same_node.merge(o.same_node);
        cross_node.merge(o.cross_node);
        resume_time.merge(o.resume_time);
        room_latency.merge(o.room_latency);
        direct_latency.merge(o.direct_latency);
    }

    /// Total error_res frames of every code. Owner thread only.
    std::uint64_t error_total() const noexcept {
        std::uint64_t n = 0;
        for (std::uint64_t e : errors) n += e;
        return n;
    }
};

}  // namespace strix::chat
