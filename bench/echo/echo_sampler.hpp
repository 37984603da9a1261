#pragma once
// strix-echo-bench's run-wide state (what every worker thread and the main thread share: stop and
// abort flags, the error count, per-worker counters) and the sampler that reads the counters once
// a second and keeps the measured window.

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "echo_bench_options.hpp"
#include "echo_errors.hpp"
#include "echo_stats.hpp"

namespace strix {

// State every thread sees. Errors abort the whole run: a benchmark that lost a byte is void.
struct shared_state : run_errors {
    std::atomic<bool> stop_sending{false};
    // --broadcast: each connection's last sequence number + 1, published by its worker once it
    // has seen stop_sending (after which it appends nothing); frozen counts those workers.
    std::vector<std::atomic<std::uint64_t>> final_sent;
    std::atomic<std::uint32_t> frozen{0};
};

// Published by one worker once per loop turn, read by the main thread once per second.
struct alignas(64) worker_counters {
    std::atomic<std::uint64_t> msgs_in{0};
    std::atomic<std::uint64_t> bytes_in{0};
    std::atomic<std::uint64_t> bytes_out{0};
    std::atomic<std::uint64_t> outstanding{0};
};

// Takes a sample at each whole second after begin(), prints its rates, and keeps the measured
// window (from the end of the warmup to the last sample). Owned by the sampling thread: the main
// thread in multi mode, the only thread in single mode.
class sampler {
public:
    sampler(const echo_bench_options& o, shared_state& shared, const std::vector<worker_counters>& counters)
        : opt_(o),
          shared_(shared),
          counters_(counters),
          wire_(echo_client_wire_size(o)),
          total_(o.warmup_s + o.duration_s) {}

  /// Takes the starting sample; the first tick is due one second later.
    void begin() { start_ = prev_ = window_start_ = window_end_ = take(); }

  /// When the next tick is due.
    steady::time_point next_due() const { return start_.at + std::chrono::seconds(k_ + 1); }

  /// True once the last tick was taken, or the run aborted, or the server went away.
    bool done() const { return done_; }

  /// True when every tick was taken.
    bool completed() const { return completed_; }

  /// Takes the next tick's sample and prints its line; sets done() after the last one, or at once
  /// when the run has aborted or the server is gone.
    void tick() {
        if (done_) return;
        if (shared_.abort.load()) {
            done_ = true;
            return;
        }
        const sample s = take();
        if (opt_.server_pid != 0 && !s.server.ok) {
            report_error(shared_, "server pid %ld is gone", opt_.server_pid);
            done_ = true;
            return;
        }
        ++k_;
        std::printf("[%3d s%s] %s\n", k_, k_ <= opt_.warmup_s ? " warmup" : "",
                    format_rates(between(prev_, s, wire_)).c_str());
        std::fflush(stdout);
        if (k_ == opt_.warmup_s) window_start_ = s;
        prev_ = s;
        window_end_ = s;
        completed_ = k_ == total_;
        done_ = completed_;
    }

  /// The counters now, summed over the workers, with the client's and the server's CPU time.
    sample take() const {
        sample s;
        s.at = steady::now();
        for (auto& c : counters_) {
            s.msgs_in += c.msgs_in.load(std::memory_order_relaxed);
            s.bytes_in += c.bytes_in.load(std::memory_order_relaxed);
            s.bytes_out += c.bytes_out.load(std::memory_order_relaxed);
        }
        s.client_cpu_s = self_cpu_s();
        if (opt_.server_pid != 0) s.server = read_proc(opt_.server_pid);
        return s;
    }

  /// The rates over the measured window.
    rates window() const { return between(window_start_, window_end_, wire_); }

private:
    const echo_bench_options& opt_;
    shared_state& shared_;
    const std::vector<worker_counters>& counters_;
    const std::size_t wire_;
    const int total_;
    int k_ = 0;  // ticks taken
    bool done_ = false;
    bool completed_ = false;
    sample start_, prev_, window_start_, window_end_;
};

}  // namespace strix
