#pragma once
// admission: caps on the sessions that listeners accept, shared by every shard of a server (or by
// any set of session groups): how many at once in total, and how many from one source address.
// A connection over a cap is accepted and closed at once (with a reset, so the server keeps no
// TIME_WAIT state for it) and counted in net_counters (refused_max_sessions,
// refused_per_address); the application never sees it.
//
//     strix::server_config cfg;
//     cfg.max_sessions = 10000;              // server builds one admission for all its shards
//     cfg.max_sessions_per_address = 256;
//
// Cost: one atomic add per accepted connection and, when a per-address cap is set, one short
// critical section (a hash-map update) per accept and per close. Nothing on the read or write path.
// Outbound connections (session_group::connect) are not counted. Unix-socket peers have no source
// address: only the total cap applies to them.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace strix {

struct admission_limits {
    std::size_t max_sessions = 0;              // sessions open at once; 0 = no cap
    std::size_t max_sessions_per_address = 0;  // sessions open at once from one IP address; 0 = no cap
};

class admission {
public:
    enum class verdict : std::uint8_t { admitted, over_total, over_address };

    /// Any thread; then shared by the groups that use it (it must outlive them).
    explicit admission(admission_limits limits) noexcept : limits_(limits) {}
    admission(const admission&) = delete;
    admission& operator=(const admission&) = delete;

    /// Counts one more session from `peer` (as session::peer() spells it) if the caps allow;
    /// anything but `admitted` counted nothing. Any thread.
    verdict try_admit(std::string_view peer);

    /// Gives back what an admitted try_admit(peer) counted. Any thread.
    void release(std::string_view peer) noexcept;

    /// Sessions counted now. Any thread.
    std::size_t sessions() const noexcept { return total_.load(std::memory_order_relaxed); }
    /// Sessions counted now from the address of `peer`. Any thread.
    std::size_t sessions_from(std::string_view peer) const;
    const admission_limits& limits() const noexcept { return limits_; }

    /// True the first time only: the servers that share these caps check the descriptor limit
    /// for them once (strix::server::start). Any thread.
    bool claim_descriptor_check() noexcept { return !descriptors_checked_.exchange(true); }

    /// The address part of a peer: "10.0.0.1" of "10.0.0.1:5000", "[::1]" of "[::1]:5000"; empty
    /// for a Unix-socket peer ("unix"). Any thread.
    static std::string_view address_of(std::string_view peer) noexcept;

private:
    const admission_limits limits_;
    std::atomic<std::size_t> total_{0};
    std::atomic<bool> descriptors_checked_{false};
    mutable std::mutex mu_;  // guards per_address_
    std::unordered_map<std::string, std::size_t> per_address_;
};

}  // namespace strix
