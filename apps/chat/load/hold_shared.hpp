#pragma once
// hold_shared: what strix-chat-hold's main thread and its workers share, and the one small record
// each held connection costs (hold_conn).
//
// Counters are per worker, written by that worker alone (relaxed stores, no read-modify-write on
// a shared line) and summed by the main thread when it reports.

#include "hold_options.hpp"
#include "hold_wire.hpp"

#include <netinet/in.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace strix::chat::hold {

inline constexpr std::size_t max_broadcast = 64;  // hold_conn::got is one bit per message

/// One connection's state: 32 bytes, and a carry buffer only while a unit (frame, WebSocket
/// message or upgrade answer) is split across reads. Owned by one worker.
struct hold_conn {
    std::byte* carry = nullptr;  // malloc'd: the split unit's bytes so far
    std::uint64_t got = 0;       // bit k: broadcast message k arrived
    std::int32_t fd = -1;
    std::uint32_t carry_len = 0;
    std::uint32_t carry_cap = 0;
    std::uint8_t state = 0;   // conn_state
    std::uint8_t next_k = 0;  // one past the highest broadcast index that arrived
    std::uint8_t tries = 0;   // connects retried
    std::uint8_t flags = 0;   // in_room, was_held
};

inline constexpr std::uint8_t flag_in_room = 1;  // hold_conn::flags: held and in the hold room now
inline constexpr std::uint8_t flag_was_held = 2; // held once: a login now is a reconnect (--reconnect)
static_assert(sizeof(hold_conn) == 32, "hold_conn is the per-connection cost; keep it small");

enum class conn_state : std::uint8_t { idle, connecting, upgrading, logging_in, joining, held, closed };

/// A counter one worker writes and the main thread reads.
struct counter {
    std::atomic<std::uint64_t> v{0};
    void add(std::uint64_t n = 1) noexcept {
        v.store(v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    void sub(std::uint64_t n = 1) noexcept {
        v.store(v.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
    }
    std::uint64_t get() const noexcept { return v.load(std::memory_order_relaxed); }
};

struct worker_counters {
    counter held;            // reached the held state (cumulative)
    counter in_room;         // held and in the hold room now
    counter failed;          // gave up before being held
    counter dropped;         // closed by the server (or reset) after being held, not reconnecting
    counter down;            // --reconnect: held once, closed, not held again yet
    counter reconnects;      // --reconnect: held connections closed and started again
    counter seq_gaps;        // --reconnect: the room's last seq at the rejoin is not the last one seen
    counter connect_errors;  // connects that failed and were retried
    counter login_retries;   // logins and joins answered server_busy / rate_limited, sent again
    counter pings, pongs, notices, errors, foreign;
    counter lost, duplicated, out_of_order, corrupt;
    counter done;  // 1 once the worker has counted its losses and stopped
    std::array<counter, max_broadcast> delivered;
    std::array<std::atomic<std::int64_t>, max_broadcast> first_ns{};  // steady clock
    std::array<std::atomic<std::int64_t>, max_broadcast> last_ns{};
};

struct hold_shared {
    hold_options opt;
    jwt_signer jwt;
    sockaddr_in target{};      // where held connections go (TCP or WebSocket port)
    std::uint32_t source_base = 0;  // host order
    std::uint64_t room_id = 0;      // 0: no hold room
    std::uint64_t control_player = 0;
    std::vector<std::string> texts;  // broadcast message k's text
    std::atomic<std::uint64_t> broadcast_base{0};  // the room's seq before message 0
    std::atomic<std::uint32_t> broadcast_sent{0};
    std::atomic<bool> stop{false};
    std::atomic<bool> quiet{false};  // the end: no more pings, the last pongs are awaited
    std::mutex first_error_mutex;
    std::string first_error;  // the first refusal or failure, for the summary

    void note_error(const std::string& why) {
        std::lock_guard lock(first_error_mutex);
        if (first_error.empty()) first_error = why;
    }
};

}  // namespace strix::chat::hold
