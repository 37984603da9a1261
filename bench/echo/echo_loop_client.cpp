// strix-echo-loop: an independent single-threaded pipelined echo client, written the way a new
// user writes one to try a server, as a cross-check on strix-echo-bench.
//
// One thread, one level-triggered epoll loop, and per readable event on a connection:
//
//   read() once (what is there, up to the free room of its input buffer)
//   -> check every whole echo it completes: length field, then body against the expected
//      (connection id, sequence number) pattern, so content, count and order are all verified
//   -> write() once: as many new messages as echoes came back, so --depth stay in flight
//
// Unlike strix-echo-bench there is no batch-then-flush pass over the events and no read until a
// short read: the server sees the send pattern of a naive client. A write the socket does not
// take whole keeps its rest in a pending buffer and asks for EPOLLOUT until it is gone (it does
// not happen at these depths, but the client must stay correct when it does). A timerfd in the
// same epoll set ticks once a second: one line of rates per tick and a summary over the measured
// window (after --warmup). Exits 0 only when every message sent came back intact and in order;
// a mismatch, a closed connection or echoes missing after --drain-timeout exit 1; usage errors 2.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "echo_args.hpp"
#include "echo_stats.hpp"
#include "echo_wire.hpp"

namespace strix {
namespace {

struct options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 0;
    std::uint32_t connections = 100;
    std::size_t size = 8;
    std::uint32_t depth = 1;
    int duration_s = 5;
    int warmup_s = 1;
    long server_pid = 0;
    std::string json;
    int drain_timeout_s = 10;
};

// Each connection's input buffer holds at least one whole message and at most what can be in
// flight; 256 KiB bounds its memory for deep pipelines of small messages.
constexpr std::size_t max_in_buffer = 256 * 1024;
constexpr std::uint64_t timer_tag = ~std::uint64_t{0};

struct conn {
    int fd = -1;
    std::uint32_t id = 0;
    std::uint64_t sent = 0;     // messages handed to write() (whole or into pending)
    std::uint64_t echoed = 0;   // echoes verified; the next one must carry this sequence number
    std::vector<std::uint8_t> in;  // [0, held) holds the start of the next echo
    std::size_t held = 0;
    std::vector<std::uint8_t> pending;  // bytes a short write left behind
    bool want_out = false;              // EPOLLOUT asked for while pending is not empty
};

// Counters of the loop, read by the once-a-second sampling in the same thread; the context
// switches are filled in only when the window's ends are sampled (switches_now).
struct counts {
    std::uint64_t echoes = 0, bytes_in = 0, bytes_out = 0;
    std::uint64_t waits = 0, reads = 0, writes = 0;
    std::uint64_t client_vol = 0, client_invol = 0;  // this process's context switches
    std::uint64_t server_vol = 0, server_invol = 0;  // the server's, summed over its threads
    bool server_ok = false;
};

// The context switches of this process (getrusage) and, when pid != 0, of every thread of pid
// (/proc/pid/task/*/status), added to c.
void switches_now(counts& c, long pid) {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    c.client_vol = static_cast<std::uint64_t>(ru.ru_nvcsw);
    c.client_invol = static_cast<std::uint64_t>(ru.ru_nivcsw);
    if (pid == 0) return;
    const std::string dir = "/proc/" + std::to_string(pid) + "/task";
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator(dir, ec)) {
        std::ifstream status(task.path() / "status");
        std::string line;
        while (std::getline(status, line)) {
            if (line.rfind("voluntary_ctxt_switches:", 0) == 0) c.server_vol += std::stoull(line.substr(24));
            if (line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) c.server_invol += std::stoull(line.substr(27));
        }
    }
    c.server_ok = !ec;
}

class loop_client {
public:
    explicit loop_client(const options& o)
        : opt_(o), wire_(echo_header_size + o.size), expected_(std::max<std::size_t>(o.size, 1)) {}
    ~loop_client() {
        for (auto& c : conns_) ::close(c.fd);
        if (timer_ >= 0) ::close(timer_);
        if (ep_ >= 0) ::close(ep_);
    }

  /// Connects every connection and sets up the loop; false (after saying why) on failure.
    bool open();
  /// Runs warmup + duration, then drains; returns the process exit status.
    int run();

private:
    [[gnu::format(printf, 3, 4)]] void fail(const conn& c, const char* fmt, ...);
    void send_more(conn& c, std::uint64_t n);
    void on_readable(conn& c);
    void on_writable(conn& c);
    void set_want_out(conn& c, bool on);
    void tick();
    sample take() const;
    int finish();

    const options& opt_;
    const std::size_t wire_;
    std::vector<std::uint8_t> expected_;
    std::vector<std::uint8_t> scratch_;
    std::vector<conn> conns_;
    int ep_ = -1;
    int timer_ = -1;
    counts n_;
    std::uint64_t outstanding_ = 0;
    bool stop_sending_ = false;
    bool failed_ = false;
    int ticks_ = 0;
    sample start_, prev_, window_start_, window_end_;
    counts window_counts_start_, window_counts_end_;
    std::string cpus_;
};

// Any failure ends the run: a benchmark that lost or damaged a byte is void.
void loop_client::fail(const conn& c, const char* fmt, ...) {
    std::fprintf(stderr, "strix-echo-loop: ERROR: connection %u: ", c.id);
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
    failed_ = true;
}

bool loop_client::open() {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(opt_.port);
    if (::inet_pton(AF_INET, opt_.host.c_str(), &addr.sin_addr) != 1) {
        std::fprintf(stderr, "strix-echo-loop: --host must be a numeric IPv4 address, got '%s'\n", opt_.host.c_str());
        return false;
    }
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    timer_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ep_ < 0 || timer_ < 0) {
        std::fprintf(stderr, "strix-echo-loop: epoll/timerfd: %s\n", std::strerror(errno));
        return false;
    }
    const std::size_t in_cap = std::max(wire_, std::min<std::size_t>(opt_.depth * wire_, max_in_buffer));
    conns_.resize(opt_.connections);
    for (std::uint32_t i = 0; i < opt_.connections; ++i) {
        conn& c = conns_[i];
        c.id = i;
        c.in.resize(in_cap);
        c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c.fd < 0 || ::connect(c.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
            std::fprintf(stderr, "strix-echo-loop: connection %u to %s:%u failed: %s (is the server up?)\n", i,
                         opt_.host.c_str(), opt_.port, std::strerror(errno));
            return false;
        }
        const int one = 1;
        ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::fcntl(c.fd, F_SETFL, ::fcntl(c.fd, F_GETFL) | O_NONBLOCK);
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;  // level-triggered
        ev.data.u64 = i;
        if (::epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev) != 0) {
            std::fprintf(stderr, "strix-echo-loop: epoll_ctl: %s\n", std::strerror(errno));
            return false;
        }
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = timer_tag;
    itimerspec every_second{{1, 0}, {1, 0}};
    if (::epoll_ctl(ep_, EPOLL_CTL_ADD, timer_, &ev) != 0 ||
        ::timerfd_settime(timer_, 0, &every_second, nullptr) != 0) {
        std::fprintf(stderr, "strix-echo-loop: timerfd: %s\n", std::strerror(errno));
        return false;
    }
    cpus_ = cpus_allowed();
    return true;
}

// Writes the next n messages of c with one write(); what the socket does not take waits in
// pending, behind which later messages queue, until EPOLLOUT.
void loop_client::send_more(conn& c, std::uint64_t n) {
    scratch_.resize(static_cast<std::size_t>(n) * wire_);
    std::uint8_t* p = scratch_.data();
    for (std::uint64_t k = 0; k < n; ++k, p += wire_) {
        echo_store_u32le(p, static_cast<std::uint32_t>(wire_));
        echo_fill_body(p + echo_header_size, opt_.size, c.id, c.sent++);
    }
    outstanding_ += n;
    if (!c.pending.empty()) {
        c.pending.insert(c.pending.end(), scratch_.begin(), scratch_.end());
        on_writable(c);
        return;
    }
    ++n_.writes;
    const ssize_t w = ::write(c.fd, scratch_.data(), scratch_.size());
    const std::size_t done = w > 0 ? static_cast<std::size_t>(w) : 0;
    if (w < 0 && errno != EAGAIN && errno != EINTR) {
        fail(c, "write failed: %s", std::strerror(errno));
        return;
    }
    n_.bytes_out += done;
    if (done < scratch_.size()) {
        c.pending.assign(scratch_.begin() + static_cast<std::ptrdiff_t>(done), scratch_.end());
        set_want_out(c, true);
    }
}

void loop_client::on_writable(conn& c) {
    if (c.pending.empty()) return;
    ++n_.writes;
    const ssize_t w = ::write(c.fd, c.pending.data(), c.pending.size());
    if (w < 0 && errno != EAGAIN && errno != EINTR) {
        fail(c, "write failed: %s", std::strerror(errno));
        return;
    }
    if (w > 0) {
        n_.bytes_out += static_cast<std::size_t>(w);
        c.pending.erase(c.pending.begin(), c.pending.begin() + w);
    }
    set_want_out(c, !c.pending.empty());
}

void loop_client::set_want_out(conn& c, bool on) {
    if (c.want_out == on) return;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (on ? EPOLLOUT : 0u);
    ev.data.u64 = c.id;
    if (::epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &ev) != 0) fail(c, "epoll_ctl failed: %s", std::strerror(errno));
    c.want_out = on;
}

// One read, then every whole echo in the buffer is checked in order, then one write.
void loop_client::on_readable(conn& c) {
    ++n_.reads;
    const ssize_t r = ::read(c.fd, c.in.data() + c.held, c.in.size() - c.held);
    if (r == 0) {
        fail(c, "the server closed the connection after %llu of %llu echoes", static_cast<unsigned long long>(c.echoed),
             static_cast<unsigned long long>(c.sent));
        return;
    }
    if (r < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        fail(c, "read failed: %s", std::strerror(errno));
        return;
    }
    n_.bytes_in += static_cast<std::uint64_t>(r);
    c.held += static_cast<std::size_t>(r);
    std::size_t off = 0;
    std::uint64_t got = 0;
    while (c.held - off >= echo_header_size) {
        const std::uint8_t* m = c.in.data() + off;
        const std::uint32_t len = echo_load_u32le(m);
        if (len != wire_) {
            fail(c, "framing error: echo #%llu has length field %u, expected %zu",
                 static_cast<unsigned long long>(c.echoed), len, wire_);
            return;
        }
        if (c.held - off < wire_) break;
        if (c.echoed == c.sent) {
            fail(c, "unexpected echo: all %llu messages sent were already echoed",
                 static_cast<unsigned long long>(c.sent));
            return;
        }
        echo_fill_body(expected_.data(), opt_.size, c.id, c.echoed);
        if (std::memcmp(expected_.data(), m + echo_header_size, opt_.size) != 0) {
            std::uint64_t carried = 0;
            std::memcpy(&carried, m + echo_header_size, std::min<std::size_t>(8, opt_.size));
            fail(c, "content mismatch in echo #%llu (its sequence field reads %llu)",
                 static_cast<unsigned long long>(c.echoed), static_cast<unsigned long long>(carried));
            return;
        }
        ++c.echoed;
        ++got;
        off += wire_;
    }
  // At most one partial message is left: move it to the front (a few bytes).
    if (off > 0) {
        std::memmove(c.in.data(), c.in.data() + off, c.held - off);
        c.held -= off;
    }
    n_.echoes += got;
    outstanding_ -= got;
    if (got > 0 && !stop_sending_) send_more(c, got);
}

sample loop_client::take() const {
    sample s;
    s.at = steady::now();
    s.msgs_in = n_.echoes;
    s.bytes_in = n_.bytes_in;
    s.bytes_out = n_.bytes_out;
    s.client_cpu_s = self_cpu_s();
    if (opt_.server_pid != 0) s.server = read_proc(opt_.server_pid);
    return s;
}

void loop_client::tick() {
    std::uint64_t expirations = 0;
    [[maybe_unused]] auto r = ::read(timer_, &expirations, sizeof expirations);
    if (stop_sending_) return;
    const sample s = take();
    if (opt_.server_pid != 0 && !s.server.ok) {
        std::fprintf(stderr, "strix-echo-loop: ERROR: server pid %ld is gone\n", opt_.server_pid);
        failed_ = true;
        return;
    }
    ++ticks_;
    std::printf("[%3d s%s] %s\n", ticks_, ticks_ <= opt_.warmup_s ? " warmup" : "",
                format_rates(between(prev_, s, wire_)).c_str());
    std::fflush(stdout);
    prev_ = s;
    if (ticks_ == opt_.warmup_s) {
        window_start_ = s;
        window_counts_start_ = n_;
        switches_now(window_counts_start_, opt_.server_pid);
    }
    if (ticks_ == opt_.warmup_s + opt_.duration_s) {
        window_end_ = s;
        window_counts_end_ = n_;
        switches_now(window_counts_end_, opt_.server_pid);
        stop_sending_ = true;
    }
}

int loop_client::run() {
    std::printf(
        "strix-echo-loop: %s:%u, %u connections, body %zu B (wire %zu B), depth %u, warmup %d s, duration %d s, "
        "one thread, level-triggered epoll, one read and one write per readable event, client CPUs %s\n",
        opt_.host.c_str(), opt_.port, opt_.connections, opt_.size, wire_, opt_.depth, opt_.warmup_s, opt_.duration_s,
        cpus_.c_str());
    std::fflush(stdout);
    start_ = prev_ = window_start_ = take();
    switches_now(window_counts_start_, opt_.server_pid);  // the window starts here when --warmup 0
    for (auto& c : conns_) {
        if (failed_) break;
        send_more(c, opt_.depth);
    }
    std::vector<epoll_event> events(512);
    steady::time_point drain_deadline{};
    while (!failed_) {
        if (stop_sending_) {
            if (outstanding_ == 0) break;
            if (drain_deadline == steady::time_point{})
                drain_deadline = steady::now() + std::chrono::seconds(opt_.drain_timeout_s);
            if (steady::now() > drain_deadline) {
                std::fprintf(stderr, "strix-echo-loop: ERROR: %llu echoes still missing %d s after sending stopped\n",
                             static_cast<unsigned long long>(outstanding_), opt_.drain_timeout_s);
                failed_ = true;
                break;
            }
        }
        ++n_.waits;
        const int n = ::epoll_wait(ep_, events.data(), static_cast<int>(events.size()), 100);
        if (n < 0 && errno != EINTR) {
            std::fprintf(stderr, "strix-echo-loop: ERROR: epoll_wait: %s\n", std::strerror(errno));
            failed_ = true;
        }
        for (int i = 0; i < n && !failed_; ++i) {
            const epoll_event& e = events[static_cast<std::size_t>(i)];
            if (e.data.u64 == timer_tag) {
                tick();
                continue;
            }
            conn& c = conns_[e.data.u64];
            if (e.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) on_readable(c);
            if (!failed_ && (e.events & EPOLLOUT)) on_writable(c);
        }
    }
    return finish();
}

nlohmann::ordered_json json_figure(double v) {
    if (v < 0) return nullptr;
    return std::round(v * 1000.0) / 1000.0;
}

// A small ratio (per echo) keeps its significant digits; null when not measured (negative).
nlohmann::ordered_json json_precise(double v) {
    if (v < 0) return nullptr;
    return v;
}

int loop_client::finish() {
    const bool completed = ticks_ == opt_.warmup_s + opt_.duration_s;
    std::uint64_t verified = 0;
    for (auto& c : conns_) verified += c.echoed;
    const bool ok = !failed_ && completed && outstanding_ == 0 && verified > 0;
    const rates r = completed ? between(window_start_, window_end_, wire_) : rates{};
  // The client's own system calls per echo over the measured window: how many echoes each read
  // brought back is how much the server coalesced.
    const counts& a = window_counts_start_;
    const counts& b = window_counts_end_;
    const double echoes = completed ? static_cast<double>(b.echoes - a.echoes) : 0;
    auto per = [&](std::uint64_t x0, std::uint64_t x1) {
        return echoes > 0 ? static_cast<double>(x1 - x0) / echoes : -1.0;
    };
    const double reads_per = per(a.reads, b.reads), writes_per = per(a.writes, b.writes),
                 waits_per = per(a.waits, b.waits);
  // Context switches per echo, voluntary (blocked: a wait with nothing to do) and involuntary
  // (preempted), of the client and, with --server-pid, of the server.
    const double c_vol = per(a.client_vol, b.client_vol), c_invol = per(a.client_invol, b.client_invol);
    const bool srv = a.server_ok && b.server_ok;
    const double s_vol = srv ? per(a.server_vol, b.server_vol) : -1,
                 s_invol = srv ? per(a.server_invol, b.server_invol) : -1;
    std::printf("summary over %.2f s after %d s warmup: %s\n", r.seconds, opt_.warmup_s, format_rates(r).c_str());
    if (echoes > 0)
        std::printf("client system calls per echo: read %.3f, write %.3f, epoll_wait %.3f (echoes per read %.1f)\n",
                    reads_per, writes_per, waits_per, 1.0 / reads_per);
    if (echoes > 0)
        std::printf("context switches per 1000 echoes: client %.2f voluntary, %.2f involuntary", c_vol * 1000,
                    c_invol * 1000);
    if (echoes > 0 && srv) std::printf("; server %.2f voluntary, %.2f involuntary", s_vol * 1000, s_invol * 1000);
    if (echoes > 0) std::printf("\n");
    std::printf("verified %llu echoes (content, count and order), outstanding %llu, errors=%d\n",
                static_cast<unsigned long long>(verified), static_cast<unsigned long long>(outstanding_),
                failed_ ? 1 : 0);
    if (!completed && !failed_) std::printf("run did not complete its %d s\n", opt_.warmup_s + opt_.duration_s);
    std::printf("result: %s\n", ok ? "PASS" : "FAIL");
    if (!opt_.json.empty()) {
    // The fields strix-echo-bench writes, in its order (scripts/echo_report.py reads them), then
    // this client's own system calls per echo.
        const nlohmann::ordered_json summary = {
            {"ok", ok},
            {"msgs_in_per_s", json_figure(completed ? r.msgs_in : -1)},
            {"msgs_out_per_s", json_figure(completed ? r.msgs_out : -1)},
            {"mb_in_per_s", json_figure(completed ? r.mb_in : -1)},
            {"mb_out_per_s", json_figure(completed ? r.mb_out : -1)},
            {"server_cpu_pct", json_figure(r.server_cpu_pct)},
            {"server_rss_mib", json_figure(r.server_rss_mib)},
            {"client_cpu_pct", json_figure(completed ? r.client_cpu_pct : -1)},
            {"verified", verified},
            {"outstanding", outstanding_},
            {"errors", failed_ ? 1 : 0},
            {"connections", opt_.connections},
            {"size", opt_.size},
            {"depth", opt_.depth},
            {"threads", 1},
            {"warmup_s", opt_.warmup_s},
            {"duration_s", opt_.duration_s},
            {"measured_s", json_figure(r.seconds)},
            {"mode", "loop"},
            {"client_threads", 1},
            {"client_cpus", cpus_},
            {"client_reads_per_echo", json_figure(reads_per)},
            {"client_writes_per_echo", json_figure(writes_per)},
            {"client_waits_per_echo", json_figure(waits_per)},
            {"client_voluntary_cs_per_echo", json_precise(c_vol)},
            {"client_involuntary_cs_per_echo", json_precise(c_invol)},
            {"server_voluntary_cs_per_echo", json_precise(s_vol)},
            {"server_involuntary_cs_per_echo", json_precise(s_invol)},
        };
        std::ofstream js(opt_.json);
        js << summary.dump(2) << '\n';
        if (!js) {
            std::fprintf(stderr, "strix-echo-loop: cannot write %s\n", opt_.json.c_str());
            return 1;
        }
    }
    return ok ? 0 : 1;
}

options parse_options(int argc, char** argv) {
    options o;
    CLI::App app{
        "strix-echo-loop: a single-threaded pipelined echo client (one level-triggered epoll loop, one read and "
        "one write per readable event) that verifies every echo's content, count and order",
        "strix-echo-loop"};
    app.footer("Same wire format and options as strix-echo-bench. MB/s counts wire bytes, 1 MB = 10^6 bytes.");
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_option("--host", o.host, "numeric IPv4 address of the echo server")->capture_default_str();
    app.add_option("--port", o.port, "server port")->required()->check(CLI::Range(1, 65535));
    app.add_option("--connections", o.connections, "TCP connections")
        ->capture_default_str()
        ->check(CLI::Range(1, 100000));
    app.add_option("--size", o.size,
                   "body bytes per message (the first 8 carry the sequence number); on the wire 4 + B")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 20));
    app.add_option("--depth", o.depth, "messages kept in flight per connection")
        ->capture_default_str()
        ->check(CLI::Range(1, 1 << 16));
    app.add_option("--duration", o.duration_s, "measured seconds after the warmup")
        ->capture_default_str()
        ->check(CLI::Range(1, 86400));
    app.add_option("--warmup", o.warmup_s, "seconds run before measuring")
        ->capture_default_str()
        ->check(CLI::Range(0, 3600));
    app.add_option("--server-pid", o.server_pid, "report the server's CPU % and RSS from /proc/PID")
        ->check(CLI::Range(0LL, 1LL << 31));
    app.add_option("--json", o.json, "write the summary as JSON to FILE");
    app.add_option("--drain-timeout", o.drain_timeout_s, "how long to wait for outstanding echoes at the end, seconds")
        ->capture_default_str()
        ->check(CLI::Range(1, 3600));
    echo_parse_args(app, argc, argv);
    if (o.server_pid != 0 && !read_proc(o.server_pid).ok)
        echo_usage_error(app, "cannot read /proc/" + std::to_string(o.server_pid) + "/stat: is --server-pid right?");
    return o;
}

int run(int argc, char** argv) {
    const options o = parse_options(argc, argv);
    std::signal(SIGPIPE, SIG_IGN);
    loop_client client(o);
    if (!client.open()) return 1;
    return client.run();
}

}  // namespace
}  // namespace strix

int main(int argc, char** argv) { return strix::run(argc, argv); }
