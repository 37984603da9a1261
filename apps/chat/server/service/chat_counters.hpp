#pragma once
// chat_counters: what one shard's chat service counts about itself. Each shard writes only its
// own counters (single writer: strix::bump, no locked instruction); the metrics thread sums a
// snapshot over the shards.

#include <strix/core/shard.hpp>

#include <atomic>
#include <cstdint>

namespace strix::chat {

struct chat_counters {
    std::atomic<std::uint64_t> app_in{0};          // requests decoded
    std::atomic<std::uint64_t> app_out{0};         // frames the service queued to sessions
    std::atomic<std::uint64_t> logins{0};          // successful logins
    std::atomic<std::uint64_t> login_failures{0};  // wrong password, unknown account, database error
    std::atomic<std::uint64_t> errors{0};          // error_res sent
    std::atomic<std::uint64_t> bad_requests{0};    // malformed bodies and unknown types
    std::atomic<std::uint64_t> rate_limited{0};     // chat_req refused by the chat rate limit
    std::atomic<std::uint64_t> room_rate_limited{0};  // create/join refused by the room-change rate limit
    std::atomic<std::uint64_t> login_throttled{0};  // logins refused by the failed-login throttle (no hash)
    std::atomic<std::uint64_t> login_queue_full{0}; // logins refused: login_queue hashes already pending
    std::atomic<std::uint64_t> notices_coalesced{0};  // join+leave pairs whose notices cancelled out
    std::atomic<std::uint64_t> server_busy{0};     // requests refused because a database queue was full
    std::atomic<std::uint64_t> chat_messages{0};   // messages accepted (seq assigned, queued for the database)
    std::atomic<std::uint64_t> broadcasts{0};      // room events fanned out (messages, joins, leaves)
    std::atomic<std::uint64_t> deliveries{0};      // frames handed to members by broadcasts
    std::atomic<std::uint64_t> cross_shard_posts{0};  // broadcast tasks posted to other shards
    std::atomic<std::uint64_t> sessions{0};        // open sessions (gauge)
    std::atomic<std::uint64_t> players{0};         // logged-in sessions (gauge)
    std::atomic<std::uint64_t> rooms{0};           // rooms this shard owns (gauge)
    std::atomic<std::uint64_t> send_queued_bytes{0};     // output queued on this shard's sessions, last sample
    std::atomic<std::uint64_t> send_queues_in_use{0};    // sessions with output queued, last sample
    std::atomic<std::uint64_t> send_queues_peak{0};      // largest sample so far
};

/// Sets a single-writer gauge. Owning shard only.
inline void set_gauge(std::atomic<std::uint64_t>& g, std::uint64_t v) noexcept { g.store(v, std::memory_order_relaxed); }

}  // namespace strix::chat
