#pragma once
// What strix-echo-bench measures besides its own counters: the server's CPU time and RSS from
// /proc/PID, the client's own CPU time, the CPUs a process may run on, and the rates between two
// samples.

#include <sched.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace strix {

using steady = std::chrono::steady_clock;

struct proc_sample {
    bool ok = false;
    double cpu_s = 0;     // utime + stime
    double rss_mib = 0;   // VmRSS
};

/// The CPU time and RSS of process pid; ok = false when /proc/pid is unreadable. Any thread.
inline proc_sample read_proc(long pid) {
    proc_sample s;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return s;
  // The command name may contain spaces and parentheses; the fields follow the last ')'.
    const auto close = line.rfind(')');
    if (close == std::string::npos) return s;
    std::istringstream rest(line.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
  // After ')' come fields 3 (state) ... ; utime is field 14, stime field 15.
    for (int f = 3; f <= 15 && rest >> field; ++f) {
        if (f == 14) utime = std::stoull(field);
        if (f == 15) stime = std::stoull(field);
    }
    s.cpu_s = static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0) {
            s.rss_mib = std::stod(line.substr(6)) / 1024.0;
            break;
        }
    }
    s.ok = true;
    return s;
}

/// This process's CPU time (user + system), seconds. Any thread.
inline double self_cpu_s() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return tv(ru.ru_utime) + tv(ru.ru_stime);
}

struct sample {
    steady::time_point at;
    std::uint64_t msgs_in = 0;
    std::uint64_t bytes_in = 0;
    std::uint64_t bytes_out = 0;
    double client_cpu_s = 0;
    proc_sample server;
};

struct rates {
    double seconds = 0;
    double msgs_in = 0, msgs_out = 0, mb_in = 0, mb_out = 0;
    double server_cpu_pct = -1, server_rss_mib = -1, client_cpu_pct = 0;
};

/// The rates over the interval from sample a to sample b, for messages of `wire` bytes. Any thread.
inline rates between(const sample& a, const sample& b, std::size_t wire) {
    rates r;
    r.seconds = std::chrono::duration<double>(b.at - a.at).count();
    if (r.seconds <= 0) return r;
    r.msgs_in = static_cast<double>(b.msgs_in - a.msgs_in) / r.seconds;
  // A message counts as sent once its last byte was written.
    r.msgs_out = static_cast<double>(b.bytes_out / wire - a.bytes_out / wire) / r.seconds;
    r.mb_in = static_cast<double>(b.bytes_in - a.bytes_in) / 1e6 / r.seconds;
    r.mb_out = static_cast<double>(b.bytes_out - a.bytes_out) / 1e6 / r.seconds;
    r.client_cpu_pct = (b.client_cpu_s - a.client_cpu_s) / r.seconds * 100.0;
    if (a.server.ok && b.server.ok) {
        r.server_cpu_pct = (b.server.cpu_s - a.server.cpu_s) / r.seconds * 100.0;
        r.server_rss_mib = b.server.rss_mib;
    }
    return r;
}

/// One line of rates, as printed each second and in the summary. Any thread.
inline std::string format_rates(const rates& r) {
    char buf[256];
    int n =
        std::snprintf(buf, sizeof(buf), "msgs/s in %10.0f out %10.0f | MB/s in %8.2f out %8.2f | client cpu %5.1f%%",
                      r.msgs_in, r.msgs_out, r.mb_in, r.mb_out, r.client_cpu_pct);
    if (r.server_cpu_pct >= 0 && n > 0 && static_cast<std::size_t>(n) < sizeof(buf)) {
        std::snprintf(buf + n, sizeof(buf) - static_cast<std::size_t>(n), " | server cpu %5.1f%% rss %6.1f MiB",
                      r.server_cpu_pct, r.server_rss_mib);
    }
    return buf;
}

/// The CPUs the calling thread may run on, as ranges ("0-1", "1", "0,2-3"); "unknown" when
/// sched_getaffinity fails. Any thread.
inline std::string cpus_allowed() {
    cpu_set_t set;
    if (::sched_getaffinity(0, sizeof set, &set) != 0) return "unknown";
    std::string out;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &set)) continue;
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
        if (!out.empty()) out += ',';
        out += std::to_string(cpu);
        if (last > cpu) out += '-' + std::to_string(last);
        cpu = last;
    }
    return out;
}

}  // namespace strix
