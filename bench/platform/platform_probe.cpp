// strix-platform-probe: what the machine itself allows, measured before a latency benchmark so its
// figures can be read against the floor they stand on.
//
//   strix-platform-probe [--hiccup-seconds S] [--segment-seconds S] [--connections N] [--size B]
//                        [--json FILE]
//
// 1. Hiccups. One thread per usable CPU (pinned) does nothing but read the monotonic clock; every
//    gap between two reads above 50 us is time the CPU was taken away (host preemption, interrupts,
//    kernel threads). It reports the gaps per CPU and the share of wall time lost in them. A run's
//    p99 latency cannot be steadier than the share of time its CPUs simply stop.
// 2. Segment ceiling. For each transport (TCP over 127.0.0.1 with TCP_NODELAY, and a Unix stream
//    socket pair): N connections; one thread pinned to the first CPU writes one --size byte message
//    to each connection in turn with one send() each (a blocking socket, so every call moves the
//    whole message), another pinned to the second CPU reads them through epoll. It reports sends/s,
//    reads/s and each thread's CPU time per call: the most separate small writes one core can push
//    through this kernel, and what reading them costs the other core. Every byte sent is checked to
//    arrive (the counts must match after the drain, else the probe fails).
//
// Output: a markdown table on stdout and, with --json, the same figures for scripts to quote.
// Exit status 0 when both measurements ran and every byte arrived, 1 otherwise, 2 on bad usage.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct options {
    double hiccup_s = 5;
    double segment_s = 3;
    int connections = 500;
    int size = 256;
    std::string json;
};

[[noreturn]] void usage_error(const std::string& why) {
    std::fprintf(stderr, "strix-platform-probe: %s (see --help)\n", why.c_str());
    std::exit(2);
}

options parse(int argc, char** argv) {
    options o;
    CLI::App app{"strix-platform-probe: clock hiccups per CPU and the loopback small-segment ceiling (TCP, Unix)",
                 "strix-platform-probe"};
    // A repeated option keeps its last value, so a wrapper script can override what it passed.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_option("--hiccup-seconds", o.hiccup_s, "seconds one thread per CPU watches the clock, in (0, 600]")
        ->capture_default_str();
    app.add_option("--segment-seconds", o.segment_s, "seconds of sending per transport, in (0, 600]")
        ->capture_default_str();
    app.add_option("--connections", o.connections, "connections per transport")
        ->capture_default_str()
        ->check(CLI::Range(1, 20000));
    app.add_option("--size", o.size, "bytes per send()")->capture_default_str()->check(CLI::Range(1, 65536));
    app.add_option("--json", o.json, "also write the figures as JSON to FILE");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) std::exit(app.exit(e));  // --help: prints it, status 0
        usage_error(e.what());
    }
    // CLI::Range is inclusive at both ends; zero seconds would measure nothing.
    if (!(o.hiccup_s > 0 && o.hiccup_s <= 600)) usage_error("--hiccup-seconds must be in (0, 600]");
    if (!(o.segment_s > 0 && o.segment_s <= 600)) usage_error("--segment-seconds must be in (0, 600]");
    return o;
}

std::int64_t now_ns() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

double thread_cpu_s() {
    timespec t{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

std::vector<int> usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (::sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
    if (cpus.empty()) cpus.push_back(0);
    return cpus;
}

void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set);
}

// ---- 1. hiccups -------------------------------------------------------------------------------

struct hiccups {
    int cpu = 0;
    std::uint64_t over_50us = 0, over_200us = 0, over_1ms = 0, over_5ms = 0;
    std::int64_t max_ns = 0, lost_ns = 0, span_ns = 0;
    double lost_pct() const {
        return span_ns ? 100.0 * static_cast<double>(lost_ns) / static_cast<double>(span_ns) : 0;
    }
};

hiccups spin_and_watch(int cpu, double seconds) {
    pin(cpu);
    hiccups h;
    h.cpu = cpu;
    const std::int64_t start = now_ns();
    const std::int64_t end = start + static_cast<std::int64_t>(seconds * 1e9);
    std::int64_t prev = start;
    while (prev < end) {
        const std::int64_t t = now_ns();
        const std::int64_t gap = t - prev;
        if (gap > 50'000) {
            ++h.over_50us;
            h.lost_ns += gap;
            if (gap > 200'000) ++h.over_200us;
            if (gap > 1'000'000) ++h.over_1ms;
            if (gap > 5'000'000) ++h.over_5ms;
            h.max_ns = std::max(h.max_ns, gap);
        }
        prev = t;
    }
    h.span_ns = prev - start;
    return h;
}

// ---- 2. segment ceiling -----------------------------------------------------------------------

struct segments {
    std::string transport;
    double seconds = 0;
    std::uint64_t sends = 0, reads = 0, bytes_sent = 0, bytes_read = 0;
    double sender_cpu_s = 0, reader_cpu_s = 0;
    std::string error;
    double per_s(std::uint64_t v) const { return seconds > 0 ? static_cast<double>(v) / seconds : 0; }
};

bool make_pairs(bool tcp, int n, std::vector<int>& writers, std::vector<int>& readers, std::string& err) {
    int ls = -1;
    sockaddr_in addr{};
    if (tcp) {
        ls = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof addr;
        if (ls < 0 || ::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(ls, 1024) != 0 ||
            ::getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
            err = std::string("tcp listener: ") + std::strerror(errno);
            if (ls >= 0) ::close(ls);
            return false;
        }
    }
    for (int i = 0; i < n; ++i) {
        int w = -1, r = -1;
        if (tcp) {
            r = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (r < 0 || ::connect(r, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
                (w = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC)) < 0) {
                err = std::string("tcp connection: ") + std::strerror(errno);
                if (r >= 0) ::close(r);
                break;
            }
            int one = 1;
            ::setsockopt(w, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        } else {
            int sv[2];
            if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
                err = std::string("socketpair: ") + std::strerror(errno);
                break;
            }
            w = sv[0];
            r = sv[1];
        }
        writers.push_back(w);
        readers.push_back(r);
    }
    if (ls >= 0) ::close(ls);
    return err.empty();
}

segments measure_segments(bool tcp, const options& o, int send_cpu, int read_cpu) {
    segments s;
    s.transport = tcp ? "tcp" : "unix";
    std::vector<int> writers, readers;
    if (!make_pairs(tcp, o.connections, writers, readers, s.error)) {
        for (int fd : writers) ::close(fd);
        for (int fd : readers) ::close(fd);
        return s;
    }
    const int n = static_cast<int>(readers.size());
    std::atomic<bool> sending_done{false};
    std::atomic<std::uint64_t> total_sent{0};
    std::uint64_t reads = 0, bytes_read = 0;
    double reader_cpu = 0;
    std::string reader_error;

    std::thread reader([&] {
        pin(read_cpu);
        const double cpu0 = thread_cpu_s();
        const int ep = ::epoll_create1(EPOLL_CLOEXEC);
        for (int i = 0; i < n; ++i) {
            ::fcntl(readers[static_cast<std::size_t>(i)], F_SETFL, O_NONBLOCK);
            epoll_event ev{};
            ev.events = EPOLLIN | EPOLLET;
            ev.data.u32 = static_cast<std::uint32_t>(i);
            ::epoll_ctl(ep, EPOLL_CTL_ADD, readers[static_cast<std::size_t>(i)], &ev);
        }
        std::vector<epoll_event> events(512);
        std::vector<char> buf(256 * 1024);
        std::int64_t drain_deadline = 0;
        for (;;) {
            if (sending_done.load(std::memory_order_acquire)) {
                if (bytes_read == total_sent.load(std::memory_order_relaxed)) break;
                if (drain_deadline == 0) drain_deadline = now_ns() + 5'000'000'000;
                if (now_ns() > drain_deadline) {
                    reader_error = "bytes missing after a 5 s drain";
                    break;
                }
            }
            const int k = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 10);
            for (int j = 0; j < k; ++j) {
                const int fd = readers[events[static_cast<std::size_t>(j)].data.u32];
                for (;;) {
                    const ssize_t m = ::read(fd, buf.data(), buf.size());
                    if (m <= 0) break;
                    ++reads;
                    bytes_read += static_cast<std::uint64_t>(m);
                    if (static_cast<std::size_t>(m) < buf.size()) break;
                }
            }
        }
        reader_cpu = thread_cpu_s() - cpu0;
        ::close(ep);
    });

    pin(send_cpu);
    std::vector<char> msg(static_cast<std::size_t>(o.size), 'x');
    const double cpu0 = thread_cpu_s();
    const std::int64_t t0 = now_ns();
    const std::int64_t end = t0 + static_cast<std::int64_t>(o.segment_s * 1e9);
    std::uint64_t sends = 0, sent_bytes = 0;
    std::int64_t t = t0;
    while (t < end && s.error.empty()) {
        for (int fd : writers) {
            const ssize_t m = ::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL);
            if (m != static_cast<ssize_t>(msg.size())) {
                s.error = std::string("send: ") + (m < 0 ? std::strerror(errno) : "short write on a blocking socket");
                break;
            }
            ++sends;
            sent_bytes += msg.size();
        }
        t = now_ns();
    }
    s.sender_cpu_s = thread_cpu_s() - cpu0;
    s.seconds = static_cast<double>(t - t0) * 1e-9;
    total_sent.store(sent_bytes, std::memory_order_relaxed);
    sending_done.store(true, std::memory_order_release);
    reader.join();
    s.sends = sends;
    s.bytes_sent = sent_bytes;
    s.reads = reads;
    s.bytes_read = bytes_read;
    s.reader_cpu_s = reader_cpu;
    if (s.error.empty() && !reader_error.empty()) s.error = reader_error;
    if (s.error.empty() && bytes_read != sent_bytes) s.error = "received bytes differ from sent bytes";
    for (int fd : writers) ::close(fd);
    for (int fd : readers) ::close(fd);
    return s;
}

std::string fmt(const char* f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}

std::string thousands(double v) {
    auto x = static_cast<std::uint64_t>(v + 0.5);
    const std::string digits = std::to_string(x);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    const std::vector<int> cpus = usable_cpus();
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, static_cast<rlim_t>(o.connections) * 2 + 64);
        ::setrlimit(RLIMIT_NOFILE, &rl);
    }

    std::vector<hiccups> hic(cpus.size());
    {
        std::vector<std::thread> spinners;
        for (std::size_t i = 0; i < cpus.size(); ++i)
            spinners.emplace_back([&, i] { hic[i] = spin_and_watch(cpus[i], o.hiccup_s); });
        for (auto& t : spinners) t.join();
    }
    const int send_cpu = cpus.front();
    const int read_cpu = cpus.size() > 1 ? cpus[1] : cpus.front();
    std::vector<segments> segs{measure_segments(true, o, send_cpu, read_cpu),
                               measure_segments(false, o, send_cpu, read_cpu)};

    std::printf("## Clock hiccups (%.0f s, one spinning thread per CPU)\n\n", o.hiccup_s);
    std::printf("| CPU | gaps > 50 us | > 200 us | > 1 ms | > 5 ms | longest (ms) | wall time lost |\n");
    std::printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& h : hic) {
        std::printf("| %d | %llu | %llu | %llu | %llu | %.2f | %.2f %% |\n", h.cpu,
                    static_cast<unsigned long long>(h.over_50us), static_cast<unsigned long long>(h.over_200us),
                    static_cast<unsigned long long>(h.over_1ms), static_cast<unsigned long long>(h.over_5ms),
                    static_cast<double>(h.max_ns) / 1e6, h.lost_pct());
    }
    std::printf("\n## Small-segment ceiling (%d connections, %d-byte send() each, sender on CPU %d, reader on CPU %d, "
                "%.0f s)\n\n",
                o.connections, o.size, send_cpu, read_cpu, o.segment_s);
    std::printf("| transport | sends/s | reads/s | sender CPU per send (us) | reader CPU per read (us) | sender CPU %% "
                "| reader CPU %% | result |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---|\n");
    bool ok = true;
    for (const auto& s : segs) {
        const bool good = s.error.empty();
        ok = ok && good;
        std::printf("| %s | %s | %s | %s | %s | %s | %s | %s |\n", s.transport.c_str(),
                    thousands(s.per_s(s.sends)).c_str(), thousands(s.per_s(s.reads)).c_str(),
                    s.sends ? fmt("%.2f", s.sender_cpu_s * 1e6 / static_cast<double>(s.sends)).c_str() : "n/a",
                    s.reads ? fmt("%.2f", s.reader_cpu_s * 1e6 / static_cast<double>(s.reads)).c_str() : "n/a",
                    fmt("%.0f", s.seconds > 0 ? 100 * s.sender_cpu_s / s.seconds : 0).c_str(),
                    fmt("%.0f", s.seconds > 0 ? 100 * s.reader_cpu_s / s.seconds : 0).c_str(),
                    good ? "all bytes arrived" : ("FAILED: " + s.error).c_str());
    }
    if (cpus.size() < 2) std::printf("\nOnly one usable CPU: sender and reader shared it.\n");

    if (!o.json.empty()) {
        // Field names are what scripts/chat_report.py and platform_probe_test.sh read.
        nlohmann::ordered_json hiccup_rows = nlohmann::ordered_json::array();
        for (const auto& h : hic) {
            hiccup_rows.push_back({{"cpu", h.cpu},
                                   {"over_50us", h.over_50us},
                                   {"over_200us", h.over_200us},
                                   {"over_1ms", h.over_1ms},
                                   {"over_5ms", h.over_5ms},
                                   {"max_ms", static_cast<double>(h.max_ns) / 1e6},
                                   {"lost_pct", h.lost_pct()}});
        }
        nlohmann::ordered_json segment_rows = nlohmann::ordered_json::array();
        for (const auto& s : segs) {
            segment_rows.push_back({{"transport", s.transport},
                                    {"seconds", s.seconds},
                                    {"sends", s.sends},
                                    {"reads", s.reads},
                                    {"bytes_sent", s.bytes_sent},
                                    {"bytes_read", s.bytes_read},
                                    {"sends_per_s", s.per_s(s.sends)},
                                    {"reads_per_s", s.per_s(s.reads)},
                                    {"sender_cpu_s", s.sender_cpu_s},
                                    {"reader_cpu_s", s.reader_cpu_s},
                                    {"ok", s.error.empty()}});
        }
        const nlohmann::ordered_json report = {{"cpus", cpus.size()},
                                               {"hiccup_seconds", o.hiccup_s},
                                               {"hiccups", std::move(hiccup_rows)},
                                               {"segment_seconds", o.segment_s},
                                               {"connections", o.connections},
                                               {"size", o.size},
                                               {"segments", std::move(segment_rows)},
                                               {"ok", ok}};
        std::ofstream j(o.json);
        j << report.dump(2) << '\n';
        if (!j) {
            std::fprintf(stderr, "strix-platform-probe: cannot write %s\n", o.json.c_str());
            return 1;
        }
    }
    return ok ? 0 : 1;
}
