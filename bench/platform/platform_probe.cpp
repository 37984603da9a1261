// strix-platform-probe: what the machine itself allows, measured before a latency benchmark so its
// figures can be read against the floor they stand on.
//
//   strix-platform-probe [--hiccup-seconds S] [--segment-seconds S] [--connections N] [--size B]
//                        [--connects N] [--in-flight K] [--json FILE]
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
// 3. Connect ceiling. A connector thread pinned to the second CPU keeps --in-flight nonblocking TCP
//    connects to 127.0.0.1 outstanding; an accepter pinned to the first CPU accepts them. With 0
//    round trips a connection counts once it is accepted and the connector has seen it writable;
//    with 1 or 2, the connector then sends a 200-byte request (a login's size) and the accepter
//    answers each with 64 bytes, every byte checked, as a login and a room join would. Every
//    connection stays open until the measurement ends (each thread gets a descriptor table of its
//    own, so --connects may reach RLIMIT_NOFILE's hard limit less a little). It reports connections
//    a second and each thread's CPU time per connection: the most a server with nothing else to do
//    could accept on one CPU from a client on the other, against which a chat server's connect rate
//    can be read. Both ends on one machine pay for both sockets, as the connection benchmark does.
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
#include <chrono>
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
    int connects = 10000;
    int in_flight = 64;
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
    app.add_option("--connects", o.connects, "connections per connect measurement (0: skip it)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1000000));
    app.add_option("--in-flight", o.in_flight, "connects outstanding at once")
        ->capture_default_str()
        ->check(CLI::Range(1, 4096));
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

// A TCP listener on 127.0.0.1 at a port the kernel picks, its address in `addr`; -1 with `err`
// set when it cannot be made.
int loopback_listener(int flags, int backlog, sockaddr_in& addr, std::string& err) {
    const int ls = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
    addr = sockaddr_in{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (ls < 0 || ::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(ls, backlog) != 0 ||
        ::getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        err = std::string("tcp listener: ") + std::strerror(errno);
        if (ls >= 0) ::close(ls);
        return -1;
    }
    return ls;
}

bool make_pairs(bool tcp, int n, std::vector<int>& writers, std::vector<int>& readers, std::string& err) {
    int ls = -1;
    sockaddr_in addr{};
    if (tcp && (ls = loopback_listener(0, 1024, addr, err)) < 0) return false;
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

// ---- 3. connect ceiling -----------------------------------------------------------------------

constexpr int request_bytes = 200;
constexpr int reply_bytes = 64;

struct connects {
    int rounds = 0;
    double seconds = 0;
    std::uint64_t connected = 0, served = 0;
    double connector_cpu_s = 0, accepter_cpu_s = 0;
    std::int64_t accepter_end_ns = 0;
    std::string error;
    double per_s() const { return seconds > 0 ? static_cast<double>(connected) / seconds : 0; }
    double cpu_us(double cpu_s) const { return served > 0 ? cpu_s * 1e6 / static_cast<double>(served) : 0; }
};

// Closes with a reset: no TIME_WAIT left behind to hold the next measurement's ports.
void close_now(int fd) {
    linger l{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd);
}

// Reads what fd has of the current round's message: `size` bytes, every one `want`. The other
// end sends a round's message only after the last answer, so one read holds at most the rest of
// it. Returns 1 when the message is whole, 0 when more is to come, -1 with `err` set (`who`
// names the end) on a close, a read error or a byte that was not sent.
int read_round(int fd, std::uint16_t& got, int size, char want, const char* who, std::string& err) {
    char buf[512];
    const ssize_t m = ::read(fd, buf, sizeof buf);
    if (m <= 0) {
        if (m == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            err = std::string(who) + ": a connection closed before its round trips were done";
            return -1;
        }
        return 0;
    }
    if (got + m > size || std::any_of(buf, buf + m, [&](char b) { return b != want; })) {
        err = std::string(who) + ": a message's bytes were not what was sent";
        return -1;
    }
    got = static_cast<std::uint16_t>(got + m);
    if (got < size) return 0;
    got = 0;
    return 1;
}

// The accepting end: accepts until `target` connections have done `rounds` request/reply pairs,
// each request's bytes checked. Every connection stays open until `release` is set.
void accept_side(int ls, int rounds, int target, int cpu, const std::atomic<bool>& give_up, std::atomic<bool>& finished,
                 const std::atomic<bool>& release, connects& c, std::string& err) {
    pin(cpu);
    const double cpu0 = thread_cpu_s();
    const int ep = ::epoll_create1(EPOLL_CLOEXEC);
    epoll_event lev{};
    lev.events = EPOLLIN;
    lev.data.fd = ls;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, ls, &lev);
    std::vector<int> held;
    held.reserve(static_cast<std::size_t>(target));
    std::vector<std::uint16_t> got, done;  // by descriptor: request bytes of this round, rounds answered
    std::vector<epoll_event> events(512);
    char reply[reply_bytes];
    const std::int64_t deadline = now_ns() + 60'000'000'000;
    std::uint64_t served = 0;
    while (served < static_cast<std::uint64_t>(target) && err.empty() && !give_up.load(std::memory_order_relaxed)) {
        if (now_ns() > deadline) {
            err = "accepter: not every connection was served within 60 s";
            break;
        }
        const int k = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 10);
        for (int j = 0; j < k && err.empty(); ++j) {
            const int fd = events[static_cast<std::size_t>(j)].data.fd;
            if (fd == ls) {
                for (;;) {
                    const int a = ::accept4(ls, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (a < 0) {
                        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED)
                            err = std::string("accept: ") + std::strerror(errno);
                        break;
                    }
                    held.push_back(a);
                    if (rounds == 0) {
                        ++served;
                        continue;
                    }
                    if (static_cast<std::size_t>(a) >= got.size()) {
                        got.resize(static_cast<std::size_t>(a) + 1024);
                        done.resize(got.size());
                    }
                    got[static_cast<std::size_t>(a)] = done[static_cast<std::size_t>(a)] = 0;
                    int one = 1;
                    ::setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    epoll_event ev{};
                    ev.events = EPOLLIN;
                    ev.data.fd = a;
                    ::epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev);
                }
                continue;
            }
            const auto f = static_cast<std::size_t>(fd);
            const int whole = read_round(fd, got[f], request_bytes, static_cast<char>('a' + done[f]), "accepter", err);
            if (whole < 0) break;
            if (whole == 0) continue;
            std::memset(reply, 'A' + done[f], sizeof reply);
            if (::send(fd, reply, sizeof reply, MSG_NOSIGNAL) != reply_bytes) {
                err = std::string("accepter: send: ") + std::strerror(errno);
                break;
            }
            if (++done[f] == rounds) {
                ::epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
                ++served;
            }
        }
    }
    c.served = served;
    c.accepter_cpu_s = thread_cpu_s() - cpu0;
    c.accepter_end_ns = now_ns();
    finished.store(true, std::memory_order_release);
    while (!release.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (int fd : held) close_now(fd);
    ::close(ep);
}

connects measure_connects(int rounds, const options& o, int accept_cpu, int connect_cpu) {
    connects c;
    c.rounds = rounds;
    sockaddr_in addr{};
    const int ls = loopback_listener(SOCK_NONBLOCK, 4096, addr, c.error);
    if (ls < 0) return c;
    // Each end sets its flag when its count is reached (or it failed); then both close everything.
    std::atomic<bool> release{false}, accepted_all{false}, connected_all{false}, connector_failed{false};
    std::string accept_err;
    const std::int64_t t0 = now_ns();
    std::thread accepter([&] {
        // A table of its own: each end may hold as many descriptors as RLIMIT_NOFILE allows.
        ::unshare(CLONE_FILES);
        accept_side(ls, rounds, o.connects, accept_cpu, connector_failed, accepted_all, release, c, accept_err);
    });
    std::string& err = c.error;
    std::int64_t connector_end = 0;
    std::thread connector([&] {
        ::unshare(CLONE_FILES);
        pin(connect_cpu);
        const double cpu0 = thread_cpu_s();
        const int ep = ::epoll_create1(EPOLL_CLOEXEC);
        std::vector<int> held;
        held.reserve(static_cast<std::size_t>(o.connects));
        std::vector<std::uint16_t> got, done;
        std::vector<epoll_event> events(512);
        char request[request_bytes];
        int started = 0, outstanding = 0;
        std::uint64_t connected = 0;
        const std::int64_t deadline = now_ns() + 60'000'000'000;
        auto send_request = [&](int fd, std::size_t f) {
            std::memset(request, 'a' + done[f], sizeof request);
            if (::send(fd, request, sizeof request, MSG_NOSIGNAL) != request_bytes) {
                err = std::string("connector: send: ") + std::strerror(errno);
                return;
            }
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.fd = fd;
            ::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev);
        };
        auto finish = [&](int fd) {
            ::epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
            ++connected;
            --outstanding;
        };
        // The accepter finishing short of the count means it failed: stop rather than wait out
        // the deadline.
        auto accepter_failed = [&] {
            return accepted_all.load(std::memory_order_acquire) && c.served < static_cast<std::uint64_t>(o.connects);
        };
        while (connected < static_cast<std::uint64_t>(o.connects) && err.empty() && !accepter_failed()) {
            while (outstanding < o.in_flight && started < o.connects && err.empty()) {
                const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                    err = std::string("connector: socket: ") + std::strerror(errno);
                    break;
                }
                held.push_back(fd);
                // As strix-chat-hold does: 250 connections per 127.x.y.z source address, the port
                // picked per destination at connect (IP_BIND_ADDRESS_NO_PORT). From one address
                // the kernel's search for a free port grows with the ports held (270 us a connect
                // with 19,000 held here).
                const int one = 1;
                ::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
                sockaddr_in from{};
                from.sin_family = AF_INET;
                from.sin_addr.s_addr = htonl(0x7F030001u + static_cast<std::uint32_t>(started / 250));
                if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) {
                    err = std::string("connector: bind: ") + std::strerror(errno);
                    break;
                }
                if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
                    err = std::string("connector: connect: ") + std::strerror(errno);
                    break;
                }
                const auto f = static_cast<std::size_t>(fd);
                if (f >= got.size()) {
                    got.resize(f + 1024);
                    done.resize(got.size());
                }
                got[f] = done[f] = 0;
                ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                epoll_event ev{};
                ev.events = EPOLLOUT;
                ev.data.fd = fd;
                ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                ++started;
                ++outstanding;
            }
            if (now_ns() > deadline) {
                err = "connector: not every connection was made within 60 s";
                break;
            }
            const int k = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 10);
            for (int j = 0; j < k && err.empty(); ++j) {
                const auto& e = events[static_cast<std::size_t>(j)];
                const int fd = e.data.fd;
                const auto f = static_cast<std::size_t>(fd);
                if (e.events & EPOLLOUT) {
                    int soerr = 0;
                    socklen_t sl = sizeof soerr;
                    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
                    if (soerr != 0) {
                        err = std::string("connector: connect: ") + std::strerror(soerr);
                        break;
                    }
                    if (rounds == 0)
                        finish(fd);
                    else
                        send_request(fd, f);
                    continue;
                }
                const int whole =
                    read_round(fd, got[f], reply_bytes, static_cast<char>('A' + done[f]), "connector", err);
                if (whole < 0) break;
                if (whole == 0) continue;
                if (++done[f] == rounds)
                    finish(fd);
                else
                    send_request(fd, f);
            }
        }
        c.connected = connected;
        c.connector_cpu_s = thread_cpu_s() - cpu0;
        connector_end = now_ns();
        if (!err.empty()) connector_failed.store(true, std::memory_order_relaxed);
        connected_all.store(true, std::memory_order_release);
        while (!release.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        for (int fd : held) close_now(fd);
        ::close(ep);
    });
    while (!accepted_all.load(std::memory_order_acquire) || !connected_all.load(std::memory_order_acquire))
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    release.store(true, std::memory_order_release);
    connector.join();
    accepter.join();
    ::close(ls);
    if (c.error.empty() && !accept_err.empty()) c.error = accept_err;
    c.seconds = static_cast<double>(std::max(connector_end, c.accepter_end_ns) - t0) * 1e-9;
    if (c.error.empty() && c.served != c.connected) c.error = "accepted and connected counts differ";
    return c;
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
    options o = parse(argc, argv);
    const std::vector<int> cpus = usable_cpus();
    rlimit rl{};
    int connects_asked = o.connects;
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        // The connect measurement's ends each have a table of their own, one descriptor a connection.
        const rlim_t need =
            std::max<rlim_t>(static_cast<rlim_t>(o.connections) * 2, static_cast<rlim_t>(o.connects)) + 64;
        rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, need);
        ::setrlimit(RLIMIT_NOFILE, &rl);
        if (rl.rlim_cur < need) o.connects = std::max(0, static_cast<int>(rl.rlim_cur) - 64);
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
    std::vector<connects> conns;
    if (o.connects > 0)
        for (int rounds = 0; rounds <= 2; ++rounds) conns.push_back(measure_connects(rounds, o, send_cpu, read_cpu));

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
    if (!conns.empty()) {
        std::printf("\n## Connect ceiling (%d connections held, %d connects in flight, accepter on CPU %d, connector "
                    "on CPU %d; a round trip is a %d-byte request and a %d-byte reply)\n\n",
                    o.connects, o.in_flight, send_cpu, read_cpu, request_bytes, reply_bytes);
        if (o.connects < connects_asked)
            std::printf("RLIMIT_NOFILE's hard limit %llu held it to %d of the %d connections asked.\n\n",
                        static_cast<unsigned long long>(rl.rlim_max), o.connects, connects_asked);
        std::printf(
            "| round trips | connections/s | accepter CPU per connection (us) | connector CPU per connection (us) "
            "| accepter CPU %% | connector CPU %% | result |\n");
        std::printf("|---:|---:|---:|---:|---:|---:|---|\n");
        for (const auto& c : conns) {
            const bool good = c.error.empty();
            ok = ok && good;
            std::printf("| %d | %s | %s | %s | %s | %s | %s |\n", c.rounds, thousands(c.per_s()).c_str(),
                        fmt("%.1f", c.cpu_us(c.accepter_cpu_s)).c_str(),
                        fmt("%.1f", c.cpu_us(c.connector_cpu_s)).c_str(),
                        fmt("%.0f", c.seconds > 0 ? 100 * c.accepter_cpu_s / c.seconds : 0).c_str(),
                        fmt("%.0f", c.seconds > 0 ? 100 * c.connector_cpu_s / c.seconds : 0).c_str(),
                        good ? "every connection made and every byte checked" : ("FAILED: " + c.error).c_str());
        }
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
        nlohmann::ordered_json connect_rows = nlohmann::ordered_json::array();
        for (const auto& c : conns) {
            connect_rows.push_back({{"rounds", c.rounds},
                                    {"connections", c.connected},
                                    {"accepted", c.served},
                                    {"in_flight", o.in_flight},
                                    {"seconds", c.seconds},
                                    {"connections_per_s", c.per_s()},
                                    {"accepter_cpu_s", c.accepter_cpu_s},
                                    {"connector_cpu_s", c.connector_cpu_s},
                                    {"ok", c.error.empty()}});
        }
        const nlohmann::ordered_json report = {{"cpus", cpus.size()},
                                               {"hiccup_seconds", o.hiccup_s},
                                               {"hiccups", std::move(hiccup_rows)},
                                               {"segment_seconds", o.segment_s},
                                               {"connections", o.connections},
                                               {"size", o.size},
                                               {"segments", std::move(segment_rows)},
                                               {"connects", std::move(connect_rows)},
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
