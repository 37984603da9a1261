#pragma once
// load_shared: what the load tool's threads share. The controller (ticked from worker 0's loop)
// moves the run through its phases and steps; every worker reads the phase and the current step
// plan once per loop turn, publishes hot counters through relaxed atomics and hands finished
// interval rows over under its mailbox's mutex (once per --report-every, not per message).
//
//   phase:  connecting -> creating -> joining -> checking -> running (steps 0..n) -> finished
//
// The conversations workload (--rooms-per-client) opens its direct pairs between joining and
// checking: phase `directs`, round dm_round = 0 .. layout->rounds() - 1.
//
// Ownership: player_ids / room_ids are written once by the worker owning that client and read by
// everyone after the controller has published the next phase (release store, acquire load).
// index_of_player is filled by the controller before it publishes `creating` and is read-only
// from then on.

#include "apps/chat/common/client_tls.hpp"
#include "conversation_layout.hpp"
#include "load_options.hpp"
#include "load_clock.hpp"
#include "load_stats.hpp"
#include "message_text.hpp"

#include <strix/core/format.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace strix::chat {

enum class load_phase : int { connecting, creating, joining, directs, checking, running, finished };

/// One measured step: send at `rps` per client from t_send_start until t_end, measure from
/// t_measure. Times are steady_clock nanoseconds.
struct step_plan {
    std::uint32_t index = 0;
    double rps = 0;
    std::int64_t t_send_start = 0;
    std::int64_t t_measure = 0;
    std::int64_t t_end = 0;
    std::int64_t interval_ns = 0;
    std::uint32_t intervals = 0;
};

/// One worker's reports to the controller.
struct alignas(64) worker_mailbox {
    // Setup progress, cumulative.
    std::atomic<std::uint32_t> connected{0};
    std::atomic<std::uint32_t> logged_in{0};
    std::atomic<std::uint32_t> created{0};
    std::atomic<std::uint32_t> joined{0};
    std::atomic<std::uint32_t> login_retries{0};  ///< login_req sent again after server_busy / rate_limited
    /// Conversations workload: sides of direct pairs in their room with the opening message.
    std::atomic<std::uint32_t> directs_ready{0};
    std::atomic<std::uint32_t> setup_retries{0};  ///< room requests sent again after "retry later"
    // Totals over the whole run, for the drain check.
    std::atomic<std::uint64_t> expected_all{0};
    std::atomic<std::uint64_t> delivered_all{0};
    std::atomic<std::uint64_t> disconnects{0};
    /// --reconnect: clients between losing their connection and resuming (the drain waits for 0).
    std::atomic<std::uint32_t> away{0};
    /// Index + 1 of the last step whose sending this worker has finished (it saw now >= t_end).
    std::atomic<std::uint32_t> sends_done{0};

    std::mutex mu;  // guards everything below
    std::vector<load_stats> rows;  ///< completed interval rows of the current step, in order
    load_stats warmup;             ///< the current step's warmup, valid once finished == index + 1
    std::uint32_t finished = 0;    ///< index + 1 of the last step whose rows are all in `rows`
};

struct load_shared {
    load_shared(const load_options& o, std::size_t workers)
        : opt(o),
          text(o.mix),
          player_ids(o.clients),
          room_ids(o.rooms),
          room_members(o.rooms, 0),
          node_of(o.clients),
          boxes(workers) {
        if (o.rooms_per_client > 0) {
            layout =
                std::make_unique<const conversation_layout>(o.clients, o.rooms_per_client, o.room_size, o.dm_partners);
            room_members.assign(o.rooms, o.room_size);
        } else {
            for (std::uint32_t i = 0; i < o.clients; ++i) ++room_members[i % o.rooms];
        }
    }

    const load_options& opt;
    const message_text text;
    const std::int64_t wall_minus_steady_ns = chat::wall_minus_steady_ns();  ///< see load_clock.hpp
    std::atomic<load_phase> phase{load_phase::connecting};
    std::vector<std::atomic<std::uint64_t>> player_ids;  ///< by client index; 0 until logged in
    std::vector<std::atomic<std::uint64_t>> room_ids;    ///< by room index; 0 until created
    std::vector<std::uint32_t> room_members;             ///< fixed: clients in each room
    /// The conversations workload's layout (--rooms-per-client); null for the single-room one.
    std::unique_ptr<const conversation_layout> layout;
    /// Phase directs: the round of direct pairs being opened (set before the phase).
    std::atomic<std::uint32_t> dm_round{0};
    /// By client index: the --targets node its connection goes to now (written by the owning
    /// worker at each connect, read relaxed by receivers to sort latency by same / cross node).
    std::vector<std::atomic<std::uint32_t>> node_of;
    const client_tls_context* tls = nullptr;             ///< --tls: what every connection verifies with
    std::unordered_map<std::uint64_t, std::uint32_t> index_of_player;

    // The current step. The controller writes `plan` under plan_mu, then bumps plan_gen.
    std::mutex plan_mu;
    step_plan plan;
    std::atomic<std::uint32_t> plan_gen{0};
    /// Index + 1 of the step the controller wants finalized (after its drain).
    std::atomic<std::uint32_t> finish_request{0};
    std::atomic<bool> stop{false};

    std::deque<worker_mailbox> boxes;

    /// Records the first fatal error (setup cannot go on) and stops the run. Any thread.
    void fail(const std::string& why) {
        {
            std::lock_guard<std::mutex> lock(fatal_mu_);
            if (fatal_.empty()) fatal_ = why;
        }
        failed_.store(true, std::memory_order_release);
        stop.store(true, std::memory_order_release);
    }
    /// True after fail(). Any thread.
    bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
    /// The first fatal error. Any thread, after failed() returned true.
    std::string fatal() {
        std::lock_guard<std::mutex> lock(fatal_mu_);
        return fatal_;
    }

    /// Prints one diagnostic line to stderr, at most `limit` lines per `kind` counter.
    /// Any thread.
    template <class... Args>
    void warn(std::atomic<std::uint32_t>& kind, std::uint32_t limit, strix::format_string_for<Args...> fmt,
              const Args&... args) {
        if (kind.fetch_add(1, std::memory_order_relaxed) >= limit) return;
        strix::print(stderr, "strix-chat-load: {}\n", strix::format(fmt, args...));
    }

    std::atomic<std::uint32_t> warned_corrupt{0};
    std::atomic<std::uint32_t> warned_errors{0};
    std::atomic<std::uint32_t> warned_order{0};
    std::atomic<std::uint32_t> warned_other{0};
    std::atomic<std::uint32_t> warned_resume{0};

private:
    std::mutex fatal_mu_;
    std::string fatal_;
    std::atomic<bool> failed_{false};
};

}  // namespace strix::chat
