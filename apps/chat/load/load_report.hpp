#pragma once
// load_report: everything strix-chat-load prints or writes: the Chat server portfolio's interval
// table (one row per --report-every), the run summary, the sweep table and the --json file.
//
// All rates are per second of the interval the row covers. The last interval of a step also
// holds the deliveries that arrived during the drain after sending stopped (usually well under a
// millisecond's worth), so its bc-deliv/s can exceed app in/s x fan-out by that amount.

#include "load_options.hpp"
#include "load_shared.hpp"
#include "load_stats.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace strix::chat {

/// What one step (the whole run, or one --sweep step) measured.
struct step_result {
    step_plan plan;
    std::vector<load_stats> rows;  ///< one per interval; the last one includes the drain
    load_stats total;              ///< the rows summed
    load_stats warmup;             ///< the step's warmup (verified, not measured)
    double measured_s = 0;         ///< length of the measured window
    double drain_s = 0;            ///< from the end of sending until every delivery owed arrived
    bool drained = false;          ///< false: --drain-timeout expired first
    std::uint64_t lost = 0;        ///< deliveries owed (warmup included) that never arrived
    std::uint64_t excess = 0;      ///< deliveries beyond those owed: of chat_req refused with an
                               ///< error_res, or lost with their connection and never seen by
                               ///< their sender, that were delivered after all
    bool verified = false;  ///< no loss, duplicate, reordering, corruption, error or disconnect
    bool hard_failure = false;  ///< duplicates, reordering, seq gaps, corruption, non-overload errors:
                                ///< wrong at any load (loss, refusals and disconnects may be overload)
    bool sustained = false;  ///< verified, p99 within the sweep limit, no backlog
    std::string verdict;  ///< why not verified / not sustained; empty when all is well
    double load_cpu_s = -1;  ///< CPU seconds the load tool used from step start to finalize
    double server_cpu_s = -1;  ///< the same for --server-pid; -1 when unknown
    double load_wait_s = -1;  ///< seconds the load tool's threads were runnable but had no CPU
                              ///< (run-queue wait, /proc schedstat), same span; -1 when unknown
    double server_wait_s = -1;  ///< the same for --server-pid's threads
    double steal_s = -1;  ///< CPU seconds the hypervisor took ("steal", all CPUs), same span
    double wall_s = 0;  ///< wall seconds from step start to finalize

    /// Measured deliveries per second. Any thread.
    double deliveries_per_s() const noexcept {
        return measured_s > 0 ? static_cast<double>(total.delivered) / measured_s : 0;
    }
};

/// `v` with thousands separators: 1234567 -> "1,234,567". Pure.
std::string thousands(std::uint64_t v);

/// Prints the interval table's header row to stdout. Controller thread.
void print_row_header();

/// Prints one interval row; `seconds` is its length, `label_s` its end (seconds into the
/// measured window). Controller thread.
void print_row(double label_s, double seconds, const load_stats& row);

/// Prints the summary of a normal (non-sweep) run. Controller thread.
void print_run_summary(const load_options& o, const step_result& r, double setup_s);

/// Prints the sweep table's header row. Controller thread.
void print_sweep_header();

/// Prints one sweep step's row. Controller thread.
void print_sweep_step(const load_options& o, const step_result& r);

/// Prints the sweep's conclusion: the highest sustained deliveries/s. Controller thread.
void print_sweep_summary(const load_options& o, const std::vector<step_result>& steps);

/// Writes the --json file: the run summary and its rows, or the sweep and its steps. Returns
/// false (and says why on stderr) when the file cannot be written. Main thread.
bool write_json(const load_options& o, const std::vector<step_result>& steps, double setup_s, bool ok,
                const std::string& failure);

}  // namespace strix::chat
