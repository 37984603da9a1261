#include "load_controller.hpp"

#include "load_clock.hpp"
#include "load_worker.hpp"

#include <strix/proto/chat_generated.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

namespace strix::chat {
namespace {

constexpr std::int64_t tick_ns = 5'000'000;
constexpr std::int64_t sec_ns = 1'000'000'000;
// A step counts as keeping up only if the deliveries still owed when sending stopped arrived
// within this long; beyond it the server was queueing faster than it delivered.
constexpr double backlog_limit_s = 1.0;
// A load tool that sends this late against its schedule is measuring itself, not the server.
constexpr std::uint64_t lag_limit_ns = 100'000'000;

double seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

// CPU seconds (user + system) this process has used, all threads.
double own_cpu_s() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// CPU seconds process `pid` has used, from /proc/PID/stat; -1 when it cannot be read.
double process_cpu_s(long pid) {
    if (pid <= 0) return -1;
    std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (f == nullptr) return -1;
    char buf[1024];
    const std::size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    const char* p = std::strrchr(buf, ')');
    if (p == nullptr) return -1;
    unsigned long long utime = 0, stime = 0;
    if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) return -1;
    return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Seconds the threads of process `pid` (0: this process) spent runnable but waiting for a CPU,
// summed over its threads' /proc/PID/task/TID/schedstat (second field, in ns); -1 when none can
// be read (a kernel without schedstat). A thread that exits in between takes its share along,
// so callers clamp a difference at 0.
double process_run_queue_wait_s(long pid) {
    const std::string dir = pid > 0 ? "/proc/" + std::to_string(pid) + "/task" : "/proc/self/task";
    std::error_code ec;
    double total = -1;
    for (const auto& t : std::filesystem::directory_iterator(dir, ec)) {
        std::FILE* f = std::fopen((t.path() / "schedstat").c_str(), "r");
        if (f == nullptr) continue;
        unsigned long long on_cpu = 0, waiting = 0;
        if (std::fscanf(f, "%llu %llu", &on_cpu, &waiting) == 2)
            total = (total < 0 ? 0 : total) + static_cast<double>(waiting) / 1e9;
        std::fclose(f);
    }
    return total;
}

// CPU seconds the hypervisor ran something else while this machine's CPUs had work ("steal"
// in /proc/stat, all CPUs together); -1 when it cannot be read.
double machine_steal_s() {
    std::FILE* f = std::fopen("/proc/stat", "r");
    if (f == nullptr) return -1;
    unsigned long long v[8] = {};
    const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                              &v[5], &v[6], &v[7]);
    std::fclose(f);
    if (n != 8) return -1;
    return static_cast<double>(v[7]) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace

load_controller::load_controller(load_shared& shared, load_worker& w0) : shared_(shared), w0_(w0) {}

template <class F>
std::uint64_t load_controller::sum(F field) const {
    std::uint64_t n = 0;
    for (const worker_mailbox& b : shared_.boxes) n += field(b).load(std::memory_order_acquire);
    return n;
}

void load_controller::set_phase(load_phase p) { shared_.phase.store(p, std::memory_order_release); }

std::int64_t load_controller::tick(std::int64_t now) {
    if (t_start_ == 0) t_start_ = t_phase_ = next_progress_ = now;
    if (shared_.failed()) return now + tick_ns;
    const load_phase p = shared_.phase.load(std::memory_order_relaxed);
    if (p == load_phase::running) {
        tick_step(now);
    } else if (p != load_phase::finished) {
        tick_setup(now);
    }
    return now + tick_ns;
}

void load_controller::tick_setup(std::int64_t now) {
    const load_options& o = shared_.opt;
    const load_phase p = shared_.phase.load(std::memory_order_relaxed);
    const auto logged = static_cast<std::uint32_t>(sum([](const worker_mailbox& b) -> auto& { return b.logged_in; }));
    const auto connected =
        static_cast<std::uint32_t>(sum([](const worker_mailbox& b) -> auto& { return b.connected; }));
    const auto created = static_cast<std::uint32_t>(sum([](const worker_mailbox& b) -> auto& { return b.created; }));
    const auto joined = static_cast<std::uint32_t>(sum([](const worker_mailbox& b) -> auto& { return b.joined; }));
    const auto retries = sum([](const worker_mailbox& b) -> auto& { return b.login_retries; });
    if (now >= next_progress_ && p == load_phase::connecting) {
        // printf for the %.1f (strix::format has no precision); PRIu64 instead of a cast for the count.
        std::printf("login: %u/%u connected, %u/%u logged in, %" PRIu64 " retried after \"retry later\" (%.1f s)\n",
                    connected, o.clients, logged, o.clients, retries, seconds(now - t_start_));
        std::fflush(stdout);
        next_progress_ = now + sec_ns;
    }
    // Joins owed: every membership but the creators'.
    const std::uint32_t joins = (shared_.layout ? o.clients * o.rooms_per_client : o.clients) - o.rooms;
    if (!setup_in_time(now, logged, created, joined, joins)) return;
    switch (p) {
        case load_phase::connecting:
            if (logged < o.clients) return;
            for (std::uint32_t i = 0; i < o.clients; ++i) {
                const std::uint64_t id = shared_.player_ids[i].load(std::memory_order_acquire);
                if (!shared_.index_of_player.emplace(id, i).second) {
                    shared_.fail("the server gave player id " + std::to_string(id) + " to two accounts");
                    return;
                }
            }
            std::printf("login: %u clients logged in (%.1f s, %" PRIu64 " logins retried after \"retry later\"); "
                        "creating %u rooms\n",
                        o.clients, seconds(now - t_start_), retries, o.rooms);
            std::fflush(stdout);
            set_phase(load_phase::creating);
            return;
        case load_phase::creating:
            if (created < o.rooms) return;
            set_phase(load_phase::joining);
            return;
        case load_phase::joining:
            if (joined < joins) return;
            if (shared_.layout && shared_.layout->rounds() > 0) {
                shared_.dm_round.store(0, std::memory_order_release);
                set_phase(load_phase::directs);
                return;
            }
            set_phase(load_phase::checking);
            t_phase_ = now;
            return;
        case load_phase::directs: tick_directs(now); return;
        case load_phase::checking:
            // list_rooms_res lists 500 rooms at most: beyond, the join replies are the check.
            if (!rooms_asked_ && o.rooms > 500) {
                finish_setup(now);
                return;
            }
            if (!rooms_asked_) {
                w0_.request_room_list();
                rooms_asked_ = true;
                return;
            }
            if (w0_.rooms_check() == 0 && now - t_phase_ < 5 * sec_ns) return;
            if (w0_.rooms_check() != 1) {
            // The member counts may lag the join replies on a sharded server; ask again a few times.
                if (w0_.rooms_check() == 2 && ++room_retries_ < 20) {
                    w0_.request_room_list();
                    return;
                }
                std::fprintf(stderr, "strix-chat-load: warning: the room list does not match the joins:%s\n",
                             w0_.rooms_check() == 0 ? " no list_rooms_res within 5 s" : w0_.rooms_problem().c_str());
            }
            finish_setup(now);
            return;
        default: return;
    }
}

// False (the run failed) past --setup-timeout; the conversations workload's progress line each second.
bool load_controller::setup_in_time(std::int64_t now, std::uint32_t logged, std::uint32_t created, std::uint32_t joined,
                                    std::uint32_t joins) {
    const load_options& o = shared_.opt;
    if (seconds(now - t_start_) > o.setup_timeout_s) {
        std::string why = "setup did not finish within --setup-timeout " + std::to_string(o.setup_timeout_s) +
                          " s: " + std::to_string(logged) + "/" + std::to_string(o.clients) + " logged in, " +
                          std::to_string(created) + "/" + std::to_string(o.rooms) + " rooms created, " +
                          std::to_string(joined) + "/" + std::to_string(joins) + " joined";
        if (shared_.layout) why += ", " + directs_progress();
        shared_.fail(why);
        return false;
    }
    if (shared_.layout && shared_.phase.load(std::memory_order_relaxed) != load_phase::connecting &&
        now >= next_progress_) {
        std::printf("setup: %u/%u rooms created, %u/%u joined, %s (%.1f s)\n", created, o.rooms, joined, joins,
                    directs_progress().c_str(), seconds(now - t_start_));
        std::fflush(stdout);
        next_progress_ = now + sec_ns;
    }
    return true;
}

void load_controller::finish_setup(std::int64_t now) {
    const load_options& o = shared_.opt;
    setup_s_ = seconds(now - t_start_);
    if (shared_.layout) {
        std::printf("setup: %u clients, each in %u of %u rooms (%u members each) and %u direct pairs of %u, "
                    "%" PRIu64 " room requests retried after \"retry later\", after %.1f s\n",
                    o.clients, o.rooms_per_client, o.rooms, o.room_size, o.dm_partners, shared_.layout->pair_count(),
                    sum([](const worker_mailbox& b) -> auto& { return b.setup_retries; }), setup_s_);
    } else {
        std::printf("setup: %u clients in %u rooms (%u members each) after %.1f s\n", o.clients, o.rooms,
                    shared_.room_members.front(), setup_s_);
    }
    std::fflush(stdout);
    set_phase(load_phase::running);
    start_step(now, o.rps);
}

void load_controller::tick_directs(std::int64_t now) {
    // Every side of the round's pairs in its direct room, the opening message seen.
    const std::uint32_t r = shared_.dm_round.load(std::memory_order_relaxed);
    if (directs_ready() < 2 * shared_.layout->pairs_through(r)) return;
    if (r + 1 < shared_.layout->rounds()) {
        shared_.dm_round.store(r + 1, std::memory_order_release);
        return;
    }
    set_phase(load_phase::checking);
    t_phase_ = now;
}

std::uint32_t load_controller::directs_ready() const {
    return static_cast<std::uint32_t>(sum([](const worker_mailbox& b) -> auto& { return b.directs_ready; }));
}

std::string load_controller::directs_progress() const {
    if (!shared_.layout || shared_.layout->pair_count() == 0) return "no direct pairs";
    std::string s = std::to_string(directs_ready()) + "/" + std::to_string(2 * shared_.layout->pair_count()) +
                    " direct sides ready";
    if (shared_.phase.load(std::memory_order_relaxed) == load_phase::directs) {
        s += " (round " + std::to_string(shared_.dm_round.load(std::memory_order_relaxed) + 1) + " of " +
             std::to_string(shared_.layout->rounds()) + ")";
    }
    return s;
}

void load_controller::start_step(std::int64_t now, double rps) {
    const load_options& o = shared_.opt;
    step_plan p;
    p.index = static_cast<std::uint32_t>(results_.size());
    p.rps = rps;
    // Far enough ahead that every worker has adopted the plan before the first send is due.
    p.t_send_start = now + 100'000'000;
    p.t_measure = p.t_send_start + static_cast<std::int64_t>(o.warmup_s * 1e9);
    p.t_end = p.t_measure + static_cast<std::int64_t>(o.duration_s * 1e9);
    p.interval_ns = static_cast<std::int64_t>(o.report_every_s * 1e9);
    p.intervals = static_cast<std::uint32_t>(std::ceil(o.duration_s / o.report_every_s - 1e-9));
    if (p.intervals == 0) p.intervals = 1;
    for (worker_mailbox& b : shared_.boxes) {
        std::lock_guard<std::mutex> lock(b.mu);
        b.rows.clear();
    }
    {
        std::lock_guard<std::mutex> lock(shared_.plan_mu);
        shared_.plan = p;
    }
    plan_ = p;
    t_step_start_ = now;
    cpu_at_start_ = own_cpu_s();
    server_cpu_at_start_ = process_cpu_s(o.server_pid);
    wait_at_start_ = process_run_queue_wait_s(0);
    server_wait_at_start_ = o.server_pid > 0 ? process_run_queue_wait_s(o.server_pid) : -1;
    steal_at_start_ = machine_steal_s();
    state_ = step_state::sending;
    drained_ = false;
    rows_printed_ = 0;
    shared_.plan_gen.fetch_add(1, std::memory_order_release);
    if (o.sweep) {
        if (p.index == 0) {
            std::printf("sweep: from %g rps per client, x%g per step of %g s (+%g s warmup), until p99 > %g ms or "
                        "deliveries fall behind (at most %u steps)\n",
                        rps, o.sweep_factor, o.duration_s, o.warmup_s, o.sweep_p99_ms, o.sweep_steps);
            print_sweep_header();
        }
    } else {
        std::printf("running: %g rps per client (%.0f chat_req/s, ~%.0f deliveries/s) for %g s after %g s warmup\n",
                    rps, rps * o.clients, rps * o.clients * planned_fan_out(o), o.duration_s, o.warmup_s);
        print_row_header();
    }
    std::fflush(stdout);
}

void load_controller::print_ready_rows() {
    const load_options& o = shared_.opt;
    for (;;) {
        load_stats row;
        for (worker_mailbox& b : shared_.boxes) {
            std::lock_guard<std::mutex> lock(b.mu);
            if (b.rows.size() <= rows_printed_) return;
        }
        for (worker_mailbox& b : shared_.boxes) {
            std::lock_guard<std::mutex> lock(b.mu);
            row.merge(b.rows[rows_printed_]);
        }
        const double end = std::min(o.duration_s, o.report_every_s * (rows_printed_ + 1));
        const double len = end - o.report_every_s * rows_printed_;
        if (!o.sweep) print_row(end, len, row);
        ++rows_printed_;
    }
}

void load_controller::tick_step(std::int64_t now) {
    print_ready_rows();
    const std::uint32_t step_done = plan_.index + 1;
    switch (state_) {
        case step_state::sending: {
            for (const worker_mailbox& b : shared_.boxes) {
                if (b.sends_done.load(std::memory_order_acquire) < step_done) return;
            }
            state_ = step_state::draining;
            [[fallthrough]];
        }
        case step_state::draining: {
            const std::uint64_t expected = sum([](const worker_mailbox& b) -> auto& { return b.expected_all; });
            const std::uint64_t delivered = sum([](const worker_mailbox& b) -> auto& { return b.delivered_all; });
            const bool timed_out = seconds(now - plan_.t_end) > shared_.opt.drain_timeout_s;
            // --reconnect: clients still on their way back owe themselves a refill.
            const std::uint64_t away = sum([](const worker_mailbox& b) -> auto& { return b.away; });
            if ((delivered < expected || away != 0) && !timed_out) return;
            drained_ = delivered >= expected;
            t_drained_ = now;
            shared_.finish_request.store(step_done, std::memory_order_release);
            state_ = step_state::finalizing;
            return;
        }
        case step_state::finalizing:
            for (worker_mailbox& b : shared_.boxes) {
                std::lock_guard<std::mutex> lock(b.mu);
                if (b.finished < step_done) return;
            }
            finalize(now);
            return;
    }
}

void load_controller::finalize(std::int64_t now) {
    const load_options& o = shared_.opt;
    print_ready_rows();
    step_result r;
    r.plan = plan_;
    r.rows.resize(plan_.intervals);
    for (worker_mailbox& b : shared_.boxes) {
        std::lock_guard<std::mutex> lock(b.mu);
        for (std::uint32_t i = 0; i < plan_.intervals; ++i) r.rows[i].merge(b.rows[i]);
        r.warmup.merge(b.warmup);
    }
    for (const load_stats& row : r.rows) r.total.merge(row);
    r.measured_s = o.duration_s;
    r.drain_s = seconds(t_drained_ - plan_.t_end);
    if (r.drain_s < 0) r.drain_s = 0;
    r.drained = drained_;
    r.wall_s = seconds(now - t_step_start_);
    r.load_cpu_s = own_cpu_s() - cpu_at_start_;
    const double server_cpu = process_cpu_s(o.server_pid);
    if (server_cpu >= 0 && server_cpu_at_start_ >= 0) r.server_cpu_s = server_cpu - server_cpu_at_start_;
    const double wait = process_run_queue_wait_s(0);
    if (wait >= 0 && wait_at_start_ >= 0) r.load_wait_s = std::max(0.0, wait - wait_at_start_);
    const double server_wait = o.server_pid > 0 ? process_run_queue_wait_s(o.server_pid) : -1;
    if (server_wait >= 0 && server_wait_at_start_ >= 0)
        r.server_wait_s = std::max(0.0, server_wait - server_wait_at_start_);
    const double steal = machine_steal_s();
    if (steal >= 0 && steal_at_start_ >= 0) r.steal_s = steal - steal_at_start_;
    load_stats all = r.total;
    all.merge(r.warmup);
    // Deliveries owed: those of refused chat_req and of chat_req lost with their connection (and
    // never seen since) are not (see load_stats.hpp).
    const std::uint64_t owed = all.expected - all.refused - all.dropped_owed + all.reclaimed_owed;
    const std::uint64_t got = all.delivered;
    r.lost = owed > got ? owed - got : 0;
    r.excess = got > owed ? got - owed : 0;
    judge(r);
    results_.push_back(std::move(r));
    const step_result& last = results_.back();
    if (!o.sweep) {
        set_phase(load_phase::finished);
        shared_.stop.store(true, std::memory_order_release);
        return;
    }
    print_sweep_step(o, last);
    if (!last.sustained || results_.size() >= o.sweep_steps) {
        set_phase(load_phase::finished);
        shared_.stop.store(true, std::memory_order_release);
        return;
    }
    start_step(now_ns(), last.plan.rps * o.sweep_factor);
}

void load_controller::judge(step_result& r) const {
    load_stats all = r.total;
    all.merge(r.warmup);
    std::string hard;  // what no overload excuses
    std::string soft;  // what a correct server may show when pushed past its capacity
    auto add = [](std::string& to, const std::string& s) { to += (to.empty() ? "" : "; ") + s; };
    if (all.duplicates != 0) add(hard, std::to_string(all.duplicates) + " duplicates");
    if (all.out_of_order != 0) add(hard, std::to_string(all.out_of_order) + " out of order");
    if (all.gaps != 0) add(hard, std::to_string(all.gaps) + " gaps in a room's seq");
    if (all.corrupt != 0) add(hard, std::to_string(all.corrupt) + " corrupt");
    if (all.refill_missing != 0)
        add(hard, std::to_string(all.refill_missing) + " missed seqs neither resume nor history gave back");
    if (r.excess != 0)
        add(hard, std::to_string(r.excess) +
                      " deliveries beyond those owed (of chat_req refused with an error_res, or lost with their "
                      "connection and never seen by their sender, that were delivered after all)");
    if (all.unexpected != 0) add(hard, std::to_string(all.unexpected) + " unexpected frames");
    // rate_limited and server_busy are the server's own overload answers; anything else is a bug.
    const std::uint64_t overload_errors = all.errors[static_cast<std::size_t>(proto::error_code::rate_limited)] +
                                          all.errors[static_cast<std::size_t>(proto::error_code::server_busy)];
    if (all.error_total() != overload_errors) {
        add(hard, std::to_string(all.error_total() - overload_errors) + " error replies");
    }
    if (r.lost != 0) {
        // Once every delivery owed has had --drain-timeout to arrive, a shortfall is a loss; a
        // timed-out drain may still be a backlog (decided hard only in a normal run, below).
        add(soft, std::to_string(r.lost) +
                      (r.drained ? " deliveries lost" : " deliveries outstanding when the drain timed out"));
    }
    if (overload_errors != 0)
        add(soft, std::to_string(overload_errors) + " requests refused (rate_limited/server_busy)");
    if (all.disconnects != 0) add(soft, std::to_string(all.disconnects) + " disconnects");
    if (all.reconnect_failures != 0)
        add(soft, std::to_string(all.reconnect_failures) + " clients did not get back (reconnect and resume)");
    if (r.total.sent == 0) add(hard, "nothing was sent in the measured window");
    r.hard_failure = !hard.empty();
    r.verified = hard.empty() && soft.empty();
    std::string why = hard;
    if (!soft.empty()) add(why, soft);
    if (r.verified) {
        const double p99_ms = static_cast<double>(r.total.latency.percentile_ns(99)) / 1e6;
        if (p99_ms > shared_.opt.sweep_p99_ms) {
            char buf[96];
            std::snprintf(buf, sizeof(buf), "p99 %.2f ms > %.1f ms", p99_ms, shared_.opt.sweep_p99_ms);
            add(why, buf);
        }
        if (r.drain_s > backlog_limit_s) {
            char buf[96];
            std::snprintf(buf, sizeof(buf), "backlog: deliveries took %.2f s to drain", r.drain_s);
            add(why, buf);
        }
        if (std::max(r.total.send_lag_max_ns, r.warmup.send_lag_max_ns) > lag_limit_ns) {
            add(why, "the load tool fell behind its send schedule (raise --threads)");
        }
    }
    r.sustained = why.empty();
    // A normal run fails on anything unverified; the latency limit is the sweep's business.
    r.verdict = shared_.opt.sweep || !r.verified ? why : "";
}

}  // namespace strix::chat
