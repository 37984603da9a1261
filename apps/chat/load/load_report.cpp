#include "load_report.hpp"

#include <strix/proto/chat_generated.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

namespace strix::chat {
namespace {

constexpr const char* band_names[] = {"<=100us", "<=500us", "<=1ms", "<=5ms", "<=50ms", ">50ms"};
constexpr const char* band_keys[] = {"le_100us", "le_500us", "le_1ms", "le_5ms", "le_50ms", "gt_50ms"};

double us(std::uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

std::uint64_t per_s(std::uint64_t n, double seconds) {
    return seconds > 0 ? static_cast<std::uint64_t>(static_cast<double>(n) / seconds + 0.5) : 0;
}

std::string us_str(std::uint64_t ns) { return thousands((ns + 500) / 1000); }

double pct(std::uint64_t part, std::uint64_t whole) {
    return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

const char* error_key(std::size_t code) {
    if (code >= error_slots - 1) return "other";
    const auto e = static_cast<proto::error_code>(code);
    return code <= static_cast<std::size_t>(proto::error_code::MAX) ? proto::EnumNameerror_code(e) : "other";
}

using json = nlohmann::ordered_json;

// A measured figure for the JSON file, to the thousandth (a microsecond of a millisecond, a
// thousandth of a percent): finer digits are noise between runs.
double figure(double v) { return std::round(v * 1000.0) / 1000.0; }

json split_json(const latency_histogram& h) {
    return {{"p50", figure(us(h.percentile_ns(50)))},
            {"p99", figure(us(h.percentile_ns(99)))},
            {"p999", figure(us(h.percentile_ns(99.9)))},
            {"count", h.count()}};
}

void add_latency(json& j, const latency_histogram& h) {
    j["latency_us"] = {{"avg", figure(h.mean_ns() / 1000.0)},
                       {"p50", figure(us(h.percentile_ns(50)))},
                       {"p90", figure(us(h.percentile_ns(90)))},
                       {"p99", figure(us(h.percentile_ns(99)))},
                       {"p999", figure(us(h.percentile_ns(99.9)))},
                       {"max", figure(us(h.max_ns()))},
                       {"count", h.count()}};
    json buckets = json::object();
    for (std::size_t b = 0; b < latency_histogram::band_count; ++b) buckets[band_keys[b]] = h.bands()[b];
    j["latency_buckets"] = std::move(buckets);
}

json errors_json(const load_stats& s) {
    json by_code = json::object();
    for (std::size_t i = 0; i < error_slots; ++i) {
        if (s.errors[i] != 0) by_code[error_key(i)] = s.errors[i];
    }
    return {{"total", s.error_total()}, {"by_code", std::move(by_code)}};
}

// --reconnect's counters (all zero without it).
json reconnect_json(const load_stats& a) {
    const latency_histogram& h = a.resume_time;
    return {{"drops", a.drops},
            {"lost_connections", a.lost_connections},
            {"reconnects", a.reconnects},
            {"reconnect_retries", a.reconnect_retries},
            {"reconnect_failures", a.reconnect_failures},
            {"tokens_refused", a.tokens_refused},
            {"resumes", a.resumes},
            {"refilled", a.refilled},
            {"resume_gaps", a.resume_gaps},
            {"gap_seqs", a.gap_seqs},
            {"gaps_over_resume_max", a.gaps_over_max},
            {"history_refilled", a.history_refilled},
            {"history_retries", a.history_retries},
            {"refill_missing", a.refill_missing},
            {"presence_notices", a.presence},
            {"rejoin_as_member_joined", a.rejoin_as_joined},
            {"unconfirmed_deliveries", a.dropped_owed - a.reclaimed_owed},
            {"resume_ms_p50", figure(static_cast<double>(h.percentile_ns(50)) / 1e6)},
            {"resume_ms_max", figure(static_cast<double>(h.max_ns()) / 1e6)}};
}

// The conversations workload's layout and its group room and direct messages apart (measured
// window, like sent / delivered at the top level).
json conversations_json(const load_options& o, const step_result& r) {
    const load_stats& t = r.total;
    const auto part = [](std::uint64_t sent, std::uint64_t expected, std::uint64_t delivered,
                         const latency_histogram& h) {
        json j = {{"sent", sent}, {"expected_deliveries", expected}, {"delivered", delivered}};
        add_latency(j, h);
        return j;
    };
    return {{"rooms_per_client", o.rooms_per_client},
            {"room_size", o.room_size},
            {"group_rooms", o.rooms},
            {"dm_share", figure(o.dm_share)},
            {"dm_partners", o.dm_partners},
            {"direct_pairs", o.clients * (o.dm_partners / 2)},
            {"room", part(t.sent - t.direct_sent, t.expected - t.direct_expected, t.delivered - t.direct_delivered,
                          t.room_latency)},
            {"direct", part(t.direct_sent, t.direct_expected, t.direct_delivered, t.direct_latency)}};
}

// One line per kind of conversation for the summary.
void print_conversations(const load_options& o, const step_result& r) {
    const load_stats& t = r.total;
    std::printf("  rooms       %u per client, %u members each (%u rooms), %u direct partners, %.0f %% direct\n",
                o.rooms_per_client, o.room_size, o.rooms, o.dm_partners, 100.0 * o.dm_share);
    const auto line = [&](const char* what, std::uint64_t sent, std::uint64_t expected, std::uint64_t delivered,
                          const latency_histogram& h) {
        std::printf("  %-11s %s sent, %s of %s expected deliveries, p50 %s us, p99 %s us, p999 %s us\n", what,
                    thousands(sent).c_str(), thousands(delivered).c_str(), thousands(expected).c_str(),
                    us_str(h.percentile_ns(50)).c_str(), us_str(h.percentile_ns(99)).c_str(),
                    us_str(h.percentile_ns(99.9)).c_str());
    };
    line("group", t.sent - t.direct_sent, t.expected - t.direct_expected, t.delivered - t.direct_delivered,
         t.room_latency);
    line("direct", t.direct_sent, t.direct_expected, t.direct_delivered, t.direct_latency);
}

void add_verification(json& j, const step_result& r) {
    j["sent"] = r.total.sent;
    j["acked"] = r.total.acked;
    j["delivered"] = r.total.delivered;
    j["expected_deliveries"] = r.total.expected;
    j["lost"] = r.lost;
    j["duplicates"] = r.total.duplicates + r.warmup.duplicates;
    j["out_of_order"] = r.total.out_of_order + r.warmup.out_of_order;
    j["gaps"] = r.total.gaps + r.warmup.gaps;
    j["corrupt"] = r.total.corrupt + r.warmup.corrupt;
    j["disconnects"] = r.total.disconnects + r.warmup.disconnects;
    j["unexpected_frames"] = r.total.unexpected + r.warmup.unexpected;
    j["deliveries_per_s"] = figure(r.deliveries_per_s());
    j["app_in_per_s"] = figure(r.measured_s > 0 ? static_cast<double>(r.total.sent) / r.measured_s : 0.0);
    add_latency(j, r.total.latency);
    j["latency_to_server_us"] = split_json(r.total.to_server);
    j["latency_from_server_us"] = split_json(r.total.from_server);
    j["latency_same_node_us"] = split_json(r.total.same_node);
    j["latency_cross_node_us"] = split_json(r.total.cross_node);
    load_stats all = r.total;
    all.merge(r.warmup);
    j["errors"] = errors_json(all);
    j["send_lag_max_us"] = figure(us(std::max(r.total.send_lag_max_ns, r.warmup.send_lag_max_ns)));
    j["loop_busy_pct"] =
        figure(r.measured_s > 0 ? 100.0 * static_cast<double>(r.total.busy_ns) / 1e9 / r.measured_s : 0.0);
    j["loop_max_turn_us"] = figure(us(r.total.max_turn_ns));
    j["drain_s"] = figure(r.drain_s);
    j["wall_s"] = figure(r.wall_s);
    if (r.load_cpu_s >= 0) j["load_cpu_pct"] = figure(100.0 * r.load_cpu_s / r.wall_s);
    if (r.server_cpu_s >= 0) j["server_cpu_pct"] = figure(100.0 * r.server_cpu_s / r.wall_s);
    // Milliseconds per second of wall time that the threads, together, were ready to run but
    // waited for a CPU: how much the programs sharing this machine's CPUs delayed each other.
    if (r.load_wait_s >= 0) j["load_run_queue_wait_ms_per_s"] = figure(1000.0 * r.load_wait_s / r.wall_s);
    if (r.server_wait_s >= 0) j["server_run_queue_wait_ms_per_s"] = figure(1000.0 * r.server_wait_s / r.wall_s);
    if (r.steal_s >= 0) j["steal_ms_per_s"] = figure(1000.0 * r.steal_s / r.wall_s);
    j["drained"] = r.drained;
    j["refused_deliveries"] = r.total.refused + r.warmup.refused;
    j["excess_deliveries"] = r.excess;
    j["reconnect"] = reconnect_json(all);
    j["verified"] = r.verified;
    j["hard_failure"] = r.hard_failure;
    j["verdict"] = r.verdict;
}

}  // namespace

std::string thousands(std::uint64_t v) {
    std::string digits = std::to_string(v);
    std::string out;
    const std::size_t n = digits.size();
    for (std::size_t i = 0; i < n; ++i) {
        out += digits[i];
        if ((n - i - 1) % 3 == 0 && i + 1 < n) out += ',';
    }
    return out;
}

void print_row_header() {
    std::printf("%6s %9s %9s %9s %9s %11s %12s %11s %8s %8s %8s %8s", "sec", "io r/s", "io s/s", "app in/s",
                "app out/s", "bytes r/s", "bytes s/s", "bc-deliv/s", "avg(us)", "p50(us)", "p90(us)", "p99(us)");
    for (const char* b : band_names) std::printf(" %7s", b);
    std::printf("\n");
    std::fflush(stdout);
}

void print_row(double label_s, double seconds, const load_stats& row) {
    const latency_histogram& h = row.latency;
    char sec[32];
    std::snprintf(sec, sizeof(sec), "%gs", label_s);
    std::printf("%6s %9s %9s %9s %9s %11s %12s %11s %8s %8s %8s %8s", sec, thousands(per_s(row.reads, seconds)).c_str(),
                thousands(per_s(row.writes, seconds)).c_str(), thousands(per_s(row.sent, seconds)).c_str(),
                thousands(per_s(row.acked, seconds)).c_str(), thousands(per_s(row.bytes_in, seconds)).c_str(),
                thousands(per_s(row.bytes_out, seconds)).c_str(), thousands(per_s(row.delivered, seconds)).c_str(),
                thousands(static_cast<std::uint64_t>(h.mean_ns() / 1000.0 + 0.5)).c_str(),
                us_str(h.percentile_ns(50)).c_str(), us_str(h.percentile_ns(90)).c_str(),
                us_str(h.percentile_ns(99)).c_str());
    for (std::size_t b = 0; b < latency_histogram::band_count; ++b) {
        std::printf(" %6.2f%%", pct(h.bands()[b], h.count()));
    }
    std::printf("\n");
    std::fflush(stdout);
}

void print_run_summary(const load_options& o, const step_result& r, double setup_s) {
    const load_stats& t = r.total;
    const latency_histogram& h = t.latency;
    load_stats all = t;
    all.merge(r.warmup);
    std::printf("\nsummary: %g s measured after %g s warmup; %u clients in %u rooms, %.1f rps per client, "
                "payload %s, %u thread(s); setup %.1f s\n",
                r.measured_s, o.warmup_s, o.clients, o.rooms, r.plan.rps, o.mix.to_string().c_str(), o.threads,
                setup_s);
    std::printf("  sent        %s chat_req (%s/s), %s acknowledged by their own chat_msg\n", thousands(t.sent).c_str(),
                thousands(per_s(t.sent, r.measured_s)).c_str(), thousands(t.acked).c_str());
    std::printf("  delivered   %s of %s expected (%s/s), fan-out x%.2f\n", thousands(t.delivered).c_str(),
                thousands(t.expected).c_str(), thousands(per_s(t.delivered, r.measured_s)).c_str(),
                t.sent == 0 ? 0.0 : static_cast<double>(t.expected) / static_cast<double>(t.sent));
    if (o.rooms_per_client > 0) print_conversations(o, r);
    std::printf("  verified    lost %s | duplicates %s | out of order %s | corrupt %s | errors %s | disconnects %s"
                " | unexpected %s   (warmup included: %s messages sent)\n",
                thousands(r.lost).c_str(), thousands(all.duplicates).c_str(), thousands(all.out_of_order).c_str(),
                thousands(all.corrupt).c_str(), thousands(all.error_total()).c_str(),
                thousands(all.disconnects).c_str(), thousands(all.unexpected).c_str(),
                thousands(r.warmup.sent).c_str());
    for (std::size_t i = 0; i < error_slots; ++i) {
        if (all.errors[i] != 0) std::printf("    error %-16s %s\n", error_key(i), thousands(all.errors[i]).c_str());
    }
    if (o.reconnect) {
        std::printf(
            "  reconnect   %s dropped on purpose, %s lost | %s back with a resume token (%s retried attempts, "
            "%s tokens refused, %s gave up) | %s resumed whole, %s refilled by resume | %s gap answers "
            "(%s seqs, %s over --resume-max), %s refilled by history (%s asked again), %s missing | %s deliveries of "
            "unconfirmed "
            "sends not owed | "
            "back in p50 %.1f ms, max %.1f ms | notices: %s member_presence, %s member_joined of "
            "returning members\n",
            thousands(all.drops).c_str(), thousands(all.lost_connections).c_str(), thousands(all.reconnects).c_str(),
            thousands(all.reconnect_retries).c_str(), thousands(all.tokens_refused).c_str(),
            thousands(all.reconnect_failures).c_str(), thousands(all.resumes).c_str(), thousands(all.refilled).c_str(),
            thousands(all.resume_gaps).c_str(), thousands(all.gap_seqs).c_str(), thousands(all.gaps_over_max).c_str(),
            thousands(all.history_refilled).c_str(), thousands(all.history_retries).c_str(),
            thousands(all.refill_missing).c_str(), thousands(all.dropped_owed - all.reclaimed_owed).c_str(),
            static_cast<double>(all.resume_time.percentile_ns(50)) / 1e6,
            static_cast<double>(all.resume_time.max_ns()) / 1e6, thousands(all.presence).c_str(),
            thousands(all.rejoin_as_joined).c_str());
    }
    std::printf("  latency     avg %s | p50 %s | p90 %s | p99 %s | p99.9 %s | max %s (us, send to receipt)\n",
                thousands(static_cast<std::uint64_t>(h.mean_ns() / 1000.0 + 0.5)).c_str(),
                us_str(h.percentile_ns(50)).c_str(), us_str(h.percentile_ns(90)).c_str(),
                us_str(h.percentile_ns(99)).c_str(), us_str(h.percentile_ns(99.9)).c_str(), us_str(h.max_ns()).c_str());
    std::printf("  split       sender to server p50 %s | p99 %s | p99.9 %s; server to receiver p50 %s | p99 %s | "
                "p99.9 %s (us, at the server's timestamp)\n",
                us_str(t.to_server.percentile_ns(50)).c_str(), us_str(t.to_server.percentile_ns(99)).c_str(),
                us_str(t.to_server.percentile_ns(99.9)).c_str(), us_str(t.from_server.percentile_ns(50)).c_str(),
                us_str(t.from_server.percentile_ns(99)).c_str(), us_str(t.from_server.percentile_ns(99.9)).c_str());
    if (o.targets.size() > 1) {
        std::printf("  nodes       receiver on the sender's node p50 %s | p99 %s (%s); on another node p50 %s | p99 %s "
                    "(%s deliveries; us)\n",
                    us_str(t.same_node.percentile_ns(50)).c_str(), us_str(t.same_node.percentile_ns(99)).c_str(),
                    thousands(t.same_node.count()).c_str(), us_str(t.cross_node.percentile_ns(50)).c_str(),
                    us_str(t.cross_node.percentile_ns(99)).c_str(), thousands(t.cross_node.count()).c_str());
    }
    std::printf("  buckets    ");
    for (std::size_t b = 0; b < latency_histogram::band_count; ++b) {
        std::printf(" %s %s (%.2f%%)%s", band_names[b], thousands(h.bands()[b]).c_str(), pct(h.bands()[b], h.count()),
                    b + 1 < latency_histogram::band_count ? " |" : "\n");
    }
    std::printf(
        "  load tool   io r/s %s, io s/s %s, deliveries per read %.2f, loop busy %.0f %%, longest turn %.0f us, "
        "worst send lag %.0f us, drain %.3f s\n",
        thousands(per_s(t.reads, r.measured_s)).c_str(), thousands(per_s(t.writes, r.measured_s)).c_str(),
        t.reads == 0 ? 0.0 : static_cast<double>(t.delivered) / static_cast<double>(t.reads),
        100.0 * static_cast<double>(t.busy_ns) / 1e9 / r.measured_s, us(t.max_turn_ns),
        us(std::max(t.send_lag_max_ns, r.warmup.send_lag_max_ns)), r.drain_s);
    if (r.load_cpu_s >= 0 && r.wall_s > 0) {
        std::printf("  cpu         load tool %.1f %%", 100.0 * r.load_cpu_s / r.wall_s);
        if (r.server_cpu_s >= 0) std::printf(", server %.1f %%", 100.0 * r.server_cpu_s / r.wall_s);
        std::printf(" of one core, over %.1f s (warmup, measured window and drain)\n", r.wall_s);
    }
    if (r.load_wait_s >= 0 && r.wall_s > 0) {
        std::printf("  cpu wait    load tool %.0f ms/s", 1000.0 * r.load_wait_s / r.wall_s);
        if (r.server_wait_s >= 0) std::printf(", server %.0f ms/s", 1000.0 * r.server_wait_s / r.wall_s);
        if (r.steal_s >= 0) std::printf(", steal %.0f ms/s", 1000.0 * r.steal_s / r.wall_s);
        std::printf(" (threads ready to run but without a CPU, summed)\n");
    }
    std::printf("  result      %s%s%s\n", r.verified ? "PASS" : "FAIL", r.verdict.empty() ? "" : ": ",
                r.verdict.c_str());
    std::fflush(stdout);
}

void print_sweep_header() {
    std::printf("%4s %9s %11s %11s %12s %11s %8s %8s %8s %8s %6s %8s %6s %6s  %s\n", "step", "rps/cl", "app in/s",
                "sent", "delivered", "deliv/s", "p50(us)", "p99(us)", "p999(us)", "lost", "dup+ooo", "drain(s)",
                "tool%", "srv%", "result");
    std::fflush(stdout);
}

void print_sweep_step(const load_options& o, const step_result& r) {
    const latency_histogram& h = r.total.latency;
    char tool[16] = "-";
    char srv[16] = "-";
    if (r.load_cpu_s >= 0 && r.wall_s > 0) std::snprintf(tool, sizeof(tool), "%.0f", 100.0 * r.load_cpu_s / r.wall_s);
    if (r.server_cpu_s >= 0 && r.wall_s > 0) std::snprintf(srv, sizeof(srv), "%.0f", 100.0 * r.server_cpu_s / r.wall_s);
    std::printf(
        "%4u %9.1f %11s %11s %12s %11s %8s %8s %8s %8s %6s %8.3f %6s %6s  %s%s%s\n", r.plan.index + 1, r.plan.rps,
        thousands(per_s(r.total.sent, r.measured_s)).c_str(), thousands(r.total.sent).c_str(),
        thousands(r.total.delivered).c_str(), thousands(per_s(r.total.delivered, r.measured_s)).c_str(),
        us_str(h.percentile_ns(50)).c_str(), us_str(h.percentile_ns(99)).c_str(), us_str(h.percentile_ns(99.9)).c_str(),
        thousands(r.lost).c_str(),
        thousands(r.total.duplicates + r.total.out_of_order + r.warmup.duplicates + r.warmup.out_of_order).c_str(),
        r.drain_s, tool, srv, r.sustained ? "sustained" : "not sustained", r.verdict.empty() ? "" : ": ",
        r.verdict.c_str());
    (void)o;
    std::fflush(stdout);
}

void print_sweep_summary(const load_options& o, const std::vector<step_result>& steps) {
    const step_result* best = nullptr;
    for (const step_result& r : steps) {
        if (r.sustained && (best == nullptr || r.deliveries_per_s() > best->deliveries_per_s())) best = &r;
    }
    if (best == nullptr) {
        std::printf("\nsweep: no step was sustained (p99 <= %.1f ms, nothing lost, no backlog)\n", o.sweep_p99_ms);
    } else {
        std::printf("\nsweep: highest sustained %s deliveries/s at %.1f rps per client (%s chat_req/s), p99 %s us\n",
                    thousands(static_cast<std::uint64_t>(best->deliveries_per_s() + 0.5)).c_str(), best->plan.rps,
                    thousands(per_s(best->total.sent, best->measured_s)).c_str(),
                    us_str(best->total.latency.percentile_ns(99)).c_str());
    }
    std::fflush(stdout);
}

bool write_json(const load_options& o, const std::vector<step_result>& steps, double setup_s, bool ok,
                const std::string& failure) {
    // Field names, nesting and order are what scripts/chat_report.py and chat_load_smoke_test.sh read.
    json j = {{"mode", o.sweep ? "sweep" : "run"},
              {"ok", ok},
              {"failure", failure},
              {"command", o.command_line},
              {"tls", o.tls},
              {"clients", o.clients},
              {"rooms", o.rooms},
              {"rps", figure(o.rps)},
              {"threads", o.threads},
              {"payload_mix", o.mix.to_string()},
              {"mean_text_bytes", figure(o.mix.mean_len())},
              {"fan_out", figure(planned_fan_out(o))},
              {"duration_s", figure(o.duration_s)},
              {"warmup_s", figure(o.warmup_s)},
              {"report_every_s", figure(o.report_every_s)},
              {"setup_s", figure(setup_s)}};
    if (!o.sweep) {
        if (!steps.empty()) {
            const step_result& r = steps.front();
            add_verification(j, r);
            if (o.rooms_per_client > 0) j["conversations"] = conversations_json(o, r);
            j["io"] = {{"reads", r.total.reads},
                       {"writes", r.total.writes},
                       {"bytes_in", r.total.bytes_in},
                       {"bytes_out", r.total.bytes_out}};
            j["warmup"] = {{"sent", r.warmup.sent},
                           {"delivered", r.warmup.delivered},
                           {"expected_deliveries", r.warmup.expected}};
            json intervals = json::array();
            for (std::size_t i = 0; i < r.rows.size(); ++i) {
                const load_stats& row = r.rows[i];
                const double len =
                    i + 1 < r.rows.size() ? o.report_every_s : r.measured_s - o.report_every_s * static_cast<double>(i);
                json row_json = {{"sec", figure(std::min(r.measured_s, o.report_every_s * static_cast<double>(i + 1)))},
                                 {"seconds", figure(len)},
                                 {"io_r_s", per_s(row.reads, len)},
                                 {"io_s_s", per_s(row.writes, len)},
                                 {"app_in_s", per_s(row.sent, len)},
                                 {"app_out_s", per_s(row.acked, len)},
                                 {"bytes_r_s", per_s(row.bytes_in, len)},
                                 {"bytes_s_s", per_s(row.bytes_out, len)},
                                 {"bc_deliv_s", per_s(row.delivered, len)},
                                 {"sent", row.sent},
                                 {"delivered", row.delivered},
                                 {"expected_deliveries", row.expected}};
                add_latency(row_json, row.latency);
                intervals.push_back(std::move(row_json));
            }
            j["intervals"] = std::move(intervals);
        }
    } else {
        j["sweep_factor"] = figure(o.sweep_factor);
        j["sweep_p99_ms"] = figure(o.sweep_p99_ms);
        json step_rows = json::array();
        const step_result* best = nullptr;
        for (const step_result& r : steps) {
            if (r.sustained && (best == nullptr || r.deliveries_per_s() > best->deliveries_per_s())) best = &r;
            json step = {{"step", r.plan.index + 1}, {"rps", figure(r.plan.rps)}, {"duration_s", figure(r.measured_s)}};
            add_verification(step, r);
            if (o.rooms_per_client > 0) step["conversations"] = conversations_json(o, r);
            step["sustained"] = r.sustained;
            step_rows.push_back(std::move(step));
        }
        j["steps"] = std::move(step_rows);
        if (best == nullptr) {
            j["highest_sustained"] = nullptr;
        } else {
            j["highest_sustained"] = {{"step", best->plan.index + 1},
                                      {"rps", figure(best->plan.rps)},
                                      {"deliveries_per_s", figure(best->deliveries_per_s())},
                                      {"p99_us", figure(us(best->total.latency.percentile_ns(99)))}};
        }
    }

    std::ofstream f(o.json);
    if (!f) {
        std::fprintf(stderr, "strix-chat-load: cannot write --json %s\n", o.json.c_str());
        return false;
    }
    // The command line and the verdict may hold bytes that are not UTF-8; write them replaced, not throw.
    f << j.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
    f.close();
    if (!f) {
        std::fprintf(stderr, "strix-chat-load: writing --json %s failed\n", o.json.c_str());
        return false;
    }
    return true;
}

}  // namespace strix::chat
