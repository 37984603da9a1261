#include "load_report.hpp"

#include <strix/proto/chat_generated.h>

#include <cinttypes>
#include <cstdio>
#include <string_view>

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

// A tiny JSON writer: enough for flat objects, nested objects and arrays of numbers and strings.
class json_out {
public:
    explicit json_out(std::FILE* f) : f_(f) {}
    void open(const char* key, char bracket) {
        sep(key);
        std::fputc(bracket, f_);
        first_ = true;
    }
    void close(char bracket) {
        std::fputc(bracket, f_);
        first_ = false;
    }
    void num(const char* key, std::uint64_t v) {
        sep(key);
        std::fprintf(f_, "%" PRIu64, v);
    }
    void num(const char* key, double v) {
        sep(key);
        std::fprintf(f_, "%.3f", v);
    }
    void boolean(const char* key, bool v) {
        sep(key);
        std::fputs(v ? "true" : "false", f_);
    }
    void null(const char* key) {
        sep(key);
        std::fputs("null", f_);
    }
    void str(const char* key, std::string_view v) {
        sep(key);
        std::fputc('"', f_);
        for (char c : v) {
            if (c == '"' || c == '\\') {
                std::fputc('\\', f_);
                std::fputc(c, f_);
            } else if (static_cast<unsigned char>(c) < 0x20) {
                std::fprintf(f_, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            } else {
                std::fputc(c, f_);
            }
        }
        std::fputc('"', f_);
    }

private:
    void sep(const char* key) {
        if (!first_) std::fputc(',', f_);
        first_ = false;
        if (key != nullptr) std::fprintf(f_, "\n\"%s\":", key);
    }
    std::FILE* f_;
    bool first_ = true;
};

void split_json(json_out& j, const char* key, const latency_histogram& h) {
    j.open(key, '{');
    j.num("p50", us(h.percentile_ns(50)));
    j.num("p99", us(h.percentile_ns(99)));
    j.num("p999", us(h.percentile_ns(99.9)));
    j.num("count", h.count());
    j.close('}');
}

void latency_json(json_out& j, const latency_histogram& h) {
    j.open("latency_us", '{');
    j.num("avg", h.mean_ns() / 1000.0);
    j.num("p50", us(h.percentile_ns(50)));
    j.num("p90", us(h.percentile_ns(90)));
    j.num("p99", us(h.percentile_ns(99)));
    j.num("p999", us(h.percentile_ns(99.9)));
    j.num("max", us(h.max_ns()));
    j.num("count", h.count());
    j.close('}');
    j.open("latency_buckets", '{');
    for (std::size_t b = 0; b < latency_histogram::band_count; ++b) j.num(band_keys[b], h.bands()[b]);
    j.close('}');
}

void errors_json(json_out& j, const load_stats& s) {
    j.open("errors", '{');
    j.num("total", s.error_total());
    j.open("by_code", '{');
    for (std::size_t i = 0; i < error_slots; ++i) {
        if (s.errors[i] != 0) j.num(error_key(i), s.errors[i]);
    }
    j.close('}');
    j.close('}');
}

void verification_json(json_out& j, const step_result& r) {
    j.num("sent", r.total.sent);
    j.num("acked", r.total.acked);
    j.num("delivered", r.total.delivered);
    j.num("expected_deliveries", r.total.expected);
    j.num("lost", r.lost);
    j.num("duplicates", r.total.duplicates + r.warmup.duplicates);
    j.num("out_of_order", r.total.out_of_order + r.warmup.out_of_order);
    j.num("gaps", r.total.gaps + r.warmup.gaps);
    j.num("corrupt", r.total.corrupt + r.warmup.corrupt);
    j.num("disconnects", r.total.disconnects + r.warmup.disconnects);
    j.num("unexpected_frames", r.total.unexpected + r.warmup.unexpected);
    j.num("deliveries_per_s", r.deliveries_per_s());
    j.num("app_in_per_s", r.measured_s > 0 ? static_cast<double>(r.total.sent) / r.measured_s : 0.0);
    latency_json(j, r.total.latency);
    split_json(j, "latency_to_server_us", r.total.to_server);
    split_json(j, "latency_from_server_us", r.total.from_server);
    load_stats all = r.total;
    all.merge(r.warmup);
    errors_json(j, all);
    j.num("send_lag_max_us", us(std::max(r.total.send_lag_max_ns, r.warmup.send_lag_max_ns)));
    j.num("loop_busy_pct", r.measured_s > 0 ? 100.0 * static_cast<double>(r.total.busy_ns) / 1e9 / r.measured_s : 0.0);
    j.num("loop_max_turn_us", us(r.total.max_turn_ns));
    j.num("drain_s", r.drain_s);
    j.num("wall_s", r.wall_s);
    if (r.load_cpu_s >= 0) j.num("load_cpu_pct", 100.0 * r.load_cpu_s / r.wall_s);
    if (r.server_cpu_s >= 0) j.num("server_cpu_pct", 100.0 * r.server_cpu_s / r.wall_s);
    j.boolean("drained", r.drained);
    j.num("refused_deliveries", r.total.refused + r.warmup.refused);
    j.boolean("verified", r.verified);
    j.boolean("hard_failure", r.hard_failure);
    j.str("verdict", r.verdict);
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
    std::printf("  verified    lost %s | duplicates %s | out of order %s | corrupt %s | errors %s | disconnects %s"
                " | unexpected %s   (warmup included: %s messages sent)\n",
                thousands(r.lost).c_str(), thousands(all.duplicates).c_str(), thousands(all.out_of_order).c_str(),
                thousands(all.corrupt).c_str(), thousands(all.error_total()).c_str(),
                thousands(all.disconnects).c_str(), thousands(all.unexpected).c_str(),
                thousands(r.warmup.sent).c_str());
    for (std::size_t i = 0; i < error_slots; ++i) {
        if (all.errors[i] != 0) std::printf("    error %-16s %s\n", error_key(i), thousands(all.errors[i]).c_str());
    }
    std::printf("  latency     avg %s | p50 %s | p90 %s | p99 %s | p99.9 %s | max %s (us, send to receipt)\n",
                thousands(static_cast<std::uint64_t>(h.mean_ns() / 1000.0 + 0.5)).c_str(),
                us_str(h.percentile_ns(50)).c_str(), us_str(h.percentile_ns(90)).c_str(),
                us_str(h.percentile_ns(99)).c_str(), us_str(h.percentile_ns(99.9)).c_str(),
                us_str(h.max_ns()).c_str());
    std::printf("  split       sender to server p50 %s | p99 %s | p99.9 %s; server to receiver p50 %s | p99 %s | "
                "p99.9 %s (us, at the server's timestamp)\n",
                us_str(t.to_server.percentile_ns(50)).c_str(), us_str(t.to_server.percentile_ns(99)).c_str(),
                us_str(t.to_server.percentile_ns(99.9)).c_str(), us_str(t.from_server.percentile_ns(50)).c_str(),
                us_str(t.from_server.percentile_ns(99)).c_str(), us_str(t.from_server.percentile_ns(99.9)).c_str());
    std::printf("  buckets    ");
    for (std::size_t b = 0; b < latency_histogram::band_count; ++b) {
        std::printf(" %s %s (%.2f%%)%s", band_names[b], thousands(h.bands()[b]).c_str(), pct(h.bands()[b], h.count()),
                    b + 1 < latency_histogram::band_count ? " |" : "\n");
    }
    std::printf("  load tool   io r/s %s, io s/s %s, deliveries per read %.2f, loop busy %.0f %%, longest turn %.0f us, "
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
    std::printf("  result      %s%s%s\n", r.verified ? "PASS" : "FAIL", r.verdict.empty() ? "" : ": ",
                r.verdict.c_str());
    std::fflush(stdout);
}

void print_sweep_header() {
    std::printf("%4s %9s %11s %11s %12s %11s %8s %8s %8s %8s %6s %8s %6s %6s  %s\n", "step", "rps/cl",
                "app in/s", "sent", "delivered", "deliv/s", "p50(us)", "p99(us)", "p999(us)", "lost", "dup+ooo",
                "drain(s)", "tool%", "srv%", "result");
    std::fflush(stdout);
}

void print_sweep_step(const load_options& o, const step_result& r) {
    const latency_histogram& h = r.total.latency;
    char tool[16] = "-";
    char srv[16] = "-";
    if (r.load_cpu_s >= 0 && r.wall_s > 0) std::snprintf(tool, sizeof(tool), "%.0f", 100.0 * r.load_cpu_s / r.wall_s);
    if (r.server_cpu_s >= 0 && r.wall_s > 0) std::snprintf(srv, sizeof(srv), "%.0f", 100.0 * r.server_cpu_s / r.wall_s);
    std::printf("%4u %9.1f %11s %11s %12s %11s %8s %8s %8s %8s %6s %8.3f %6s %6s  %s%s%s\n", r.plan.index + 1, r.plan.rps,
                thousands(per_s(r.total.sent, r.measured_s)).c_str(), thousands(r.total.sent).c_str(),
                thousands(r.total.delivered).c_str(), thousands(per_s(r.total.delivered, r.measured_s)).c_str(),
                us_str(h.percentile_ns(50)).c_str(), us_str(h.percentile_ns(99)).c_str(),
                us_str(h.percentile_ns(99.9)).c_str(), thousands(r.lost).c_str(),
                thousands(r.total.duplicates + r.total.out_of_order + r.warmup.duplicates + r.warmup.out_of_order)
                    .c_str(),
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
    std::FILE* f = std::fopen(o.json.c_str(), "w");
    if (f == nullptr) {
        std::fprintf(stderr, "strix-chat-load: cannot write --json %s\n", o.json.c_str());
        return false;
    }
    json_out j(f);
    j.open(nullptr, '{');
    j.str("mode", o.sweep ? "sweep" : "run");
    j.boolean("ok", ok);
    j.str("failure", failure);
    j.str("command", o.command_line);
    j.num("clients", std::uint64_t{o.clients});
    j.num("rooms", std::uint64_t{o.rooms});
    j.num("rps", o.rps);
    j.num("threads", std::uint64_t{o.threads});
    j.str("payload_mix", o.mix.to_string());
    j.num("mean_text_bytes", o.mix.mean_len());
    j.num("fan_out", static_cast<double>(o.clients) / static_cast<double>(o.rooms));
    j.num("duration_s", o.duration_s);
    j.num("warmup_s", o.warmup_s);
    j.num("report_every_s", o.report_every_s);
    j.num("setup_s", setup_s);
    if (!o.sweep) {
        if (!steps.empty()) {
            const step_result& r = steps.front();
            verification_json(j, r);
            j.open("io", '{');
            j.num("reads", r.total.reads);
            j.num("writes", r.total.writes);
            j.num("bytes_in", r.total.bytes_in);
            j.num("bytes_out", r.total.bytes_out);
            j.close('}');
            j.open("warmup", '{');
            j.num("sent", r.warmup.sent);
            j.num("delivered", r.warmup.delivered);
            j.num("expected_deliveries", r.warmup.expected);
            j.close('}');
            j.open("intervals", '[');
            for (std::size_t i = 0; i < r.rows.size(); ++i) {
                const load_stats& row = r.rows[i];
                const double len = i + 1 < r.rows.size() ? o.report_every_s
                                                         : r.measured_s - o.report_every_s * static_cast<double>(i);
                j.open(nullptr, '{');
                j.num("sec", std::min(r.measured_s, o.report_every_s * static_cast<double>(i + 1)));
                j.num("seconds", len);
                j.num("io_r_s", per_s(row.reads, len));
                j.num("io_s_s", per_s(row.writes, len));
                j.num("app_in_s", per_s(row.sent, len));
                j.num("app_out_s", per_s(row.acked, len));
                j.num("bytes_r_s", per_s(row.bytes_in, len));
                j.num("bytes_s_s", per_s(row.bytes_out, len));
                j.num("bc_deliv_s", per_s(row.delivered, len));
                j.num("sent", row.sent);
                j.num("delivered", row.delivered);
                j.num("expected_deliveries", row.expected);
                latency_json(j, row.latency);
                j.close('}');
            }
            j.close(']');
        }
    } else {
        j.num("sweep_factor", o.sweep_factor);
        j.num("sweep_p99_ms", o.sweep_p99_ms);
        j.open("steps", '[');
        const step_result* best = nullptr;
        for (const step_result& r : steps) {
            if (r.sustained && (best == nullptr || r.deliveries_per_s() > best->deliveries_per_s())) best = &r;
            j.open(nullptr, '{');
            j.num("step", std::uint64_t{r.plan.index + 1});
            j.num("rps", r.plan.rps);
            j.num("duration_s", r.measured_s);
            verification_json(j, r);
            j.boolean("sustained", r.sustained);
            j.close('}');
        }
        j.close(']');
        if (best == nullptr) {
            j.null("highest_sustained");
        } else {
            j.open("highest_sustained", '{');
            j.num("step", std::uint64_t{best->plan.index + 1});
            j.num("rps", best->plan.rps);
            j.num("deliveries_per_s", best->deliveries_per_s());
            j.num("p99_us", us(best->total.latency.percentile_ns(99)));
            j.close('}');
        }
    }
    j.close('}');
    std::fputc('\n', f);
    const bool good = std::ferror(f) == 0;
    if (std::fclose(f) != 0 || !good) {
        std::fprintf(stderr, "strix-chat-load: writing --json %s failed\n", o.json.c_str());
        return false;
    }
    return true;
}

}  // namespace strix::chat
