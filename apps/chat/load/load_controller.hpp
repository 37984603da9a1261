#pragma once
// load_controller: drives a run through its phases and steps. It never blocks: worker 0 ticks it
// between loop turns (every few milliseconds), it looks at what the workers published and moves
// the shared phase or step plan forward.
//
//   connecting  every client connects and logs in (progress line each second)
//   creating    clients 0 .. rooms-1 create one room each
//   joining     every other client i joins room i % rooms
//   directs     the conversations workload (--rooms-per-client): after creating and joining its
//               K group rooms per client, the direct pairs are opened round by round
//   checking    client 0 lists the rooms: each must show its expected member count
//   running     steps: one for a normal run, up to --sweep-steps for --sweep; each step is
//               warmup, measured window, drain (until every delivery owed arrived), finalize
//   finished    the workers stop; main prints the summary and writes --json

#include "load_report.hpp"
#include "load_shared.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace strix::chat {

class load_worker;

class load_controller {
public:
    /// A controller for `shared`, ticked by worker 0 (`w0`, which also owns client 0).
    /// Main thread; tick() then runs on worker 0's thread.
    load_controller(load_shared& shared, load_worker& w0);

    /// Advances the run; returns the steady-clock time at which it wants the next tick.
    /// Worker 0's thread only.
    std::int64_t tick(std::int64_t now);

    /// The finished steps, in order. Main thread, after the workers stopped.
    const std::vector<step_result>& results() const noexcept { return results_; }

    /// Seconds from the first connect until every client was in its room. Main thread, after.
    double setup_s() const noexcept { return setup_s_; }

private:
    enum class step_state { sending, draining, finalizing };

    void tick_setup(std::int64_t now);
    bool setup_in_time(std::int64_t now, std::uint32_t logged, std::uint32_t created, std::uint32_t joined,
                       std::uint32_t joins);
    void tick_directs(std::int64_t now);
    void finish_setup(std::int64_t now);
    std::uint32_t directs_ready() const;
    std::string directs_progress() const;
    void start_step(std::int64_t now, double rps);
    void tick_step(std::int64_t now);
    void print_ready_rows();
    void finalize(std::int64_t now);
    void judge(step_result& r) const;
    void set_phase(load_phase p);
    template <class F>
    std::uint64_t sum(F field) const;

    load_shared& shared_;
    load_worker& w0_;
    std::int64_t t_start_ = 0;
    std::int64_t t_phase_ = 0;
    std::int64_t next_progress_ = 0;
    double setup_s_ = 0;
    bool rooms_asked_ = false;
    std::uint32_t room_retries_ = 0;

    step_plan plan_{};
    step_state state_ = step_state::sending;
    std::int64_t t_drained_ = 0;
    bool drained_ = false;
    std::uint32_t rows_printed_ = 0;
    std::vector<step_result> results_;
    std::int64_t t_step_start_ = 0;
    double cpu_at_start_ = 0;
    double server_cpu_at_start_ = -1;
    double wait_at_start_ = -1;
    double server_wait_at_start_ = -1;
    double steal_at_start_ = -1;
};

}  // namespace strix::chat
