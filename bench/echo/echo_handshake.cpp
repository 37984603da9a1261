// strix-echo-bench --tls --handshakes [--resume]: TLS connection setup per second.
//
// --connections slots, spread over --threads worker threads (one edge-triggered epoll loop each),
// each run this cycle until the run ends:
//
//   socket + non-blocking connect -> SSL_connect (full, or offering the slot's last session with
//   --resume) -> one SSL_write of one --size message -> SSL_read until its echo is back, checked
//   byte for byte -> keep the session (--resume) -> SSL_shutdown (close_notify) -> close
//
// The close is abortive (SO_LINGER 0, an RST after the close_notify): a run makes tens of
// thousands of connections, and the TIME_WAIT sockets an orderly close leaves on the client
// would exhaust its ephemeral ports. A handshake counts once its echo came back; whether it was
// resumed is SSL_session_reused. With TLS 1.3 the session kept is the one the server's
// NewSessionTicket made (it arrives before the echo), so each slot offers a fresh ticket.
// The main thread samples the counters once a second, with the server's CPU time from /proc.

#include "echo_handshake.hpp"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "echo_buffer.hpp"
#include "echo_errors.hpp"
#include "echo_stats.hpp"
#include "echo_wire.hpp"

namespace strix {
namespace {

// The fraction of measured handshakes that must be resumed when --resume asks for it.
constexpr double min_resumed = 0.9;

struct hs_shared : run_errors {
    std::atomic<bool> stop{false};
};

// Written by one worker, read by the main thread once a second.
struct alignas(64) hs_counters {
    std::atomic<std::uint64_t> full{0};
    std::atomic<std::uint64_t> resumed{0};
};

struct slot {
    std::uint32_t id = 0;
    std::uint64_t seq = 0;  // connections this slot made: the sequence number of its echo
    int fd = -1;
    SSL* ssl = nullptr;
    SSL_SESSION* last = nullptr;  // --resume: the session of the slot's previous connection
    bool handshaken = false;
    bool reused = false;
    bool sent = false;
    echo_buffer in{4096};

    slot() = default;
    slot(const slot&) = delete;
    slot& operator=(const slot&) = delete;
    ~slot() {
        ::SSL_free(ssl);
        ::SSL_SESSION_free(last);
        if (fd >= 0) ::close(fd);
    }
};

class hs_worker {
public:
    hs_worker(const echo_bench_options& o, const sockaddr_in& addr, const echo_tls_context& tls, hs_shared& shared,
              hs_counters& counters, std::vector<std::uint32_t> ids)
        : opt_(o),
          addr_(addr),
          tls_(tls),
          shared_(shared),
          counters_(counters),
          wire_(echo_header_size + o.size),
          message_(wire_),
          expected_(std::max<std::size_t>(o.size, 1)) {
        for (std::uint32_t id : ids) {
            slots_.push_back(std::make_unique<slot>());
            slots_.back()->id = id;
        }
    }

  /// Cycles the slots until the run stops or aborts. Worker thread only.
    void run() {
        ep_ = ::epoll_create1(EPOLL_CLOEXEC);
        if (ep_ < 0) {
            report_error(shared_, "epoll_create1: %s", std::strerror(errno));
            return;
        }
        for (auto& s : slots_) open(*s);
        std::vector<epoll_event> events(256);
        while (!shared_.abort.load(std::memory_order_relaxed) && !shared_.stop.load(std::memory_order_relaxed)) {
            const int n = ::epoll_wait(ep_, events.data(), static_cast<int>(events.size()), 100);
            if (n < 0) {
                if (errno == EINTR) continue;
                report_error(shared_, "epoll_wait: %s", std::strerror(errno));
                break;
            }
            for (int i = 0; i < n; ++i) {
                auto& s = *static_cast<slot*>(events[static_cast<std::size_t>(i)].data.ptr);
                if (s.ssl != nullptr) drive(s);
            }
            counters_.full.store(full_, std::memory_order_relaxed);
            counters_.resumed.store(resumed_, std::memory_order_relaxed);
        }
        slots_.clear();  // handshakes still in flight are dropped uncounted
        ::close(ep_);
    }

private:
    void open(slot& s) {
        s.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s.fd < 0) {
            fail(s, "socket: %s", std::strerror(errno));
            return;
        }
        const int one = 1;
        ::setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        const linger abortive{1, 0};
        ::setsockopt(s.fd, SOL_SOCKET, SO_LINGER, &abortive, sizeof abortive);
        if (::connect(s.fd, reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_) != 0 && errno != EINPROGRESS) {
            fail(s, "connect: %s%s", std::strerror(errno),
                 errno == EADDRNOTAVAIL ? " (out of ephemeral ports: fewer --connections?)" : "");
            return;
        }
        std::string why;
        s.ssl = tls_.open(s.fd, why);
        if (s.ssl == nullptr) {
            fail(s, "%s", why.c_str());
            return;
        }
        if (opt_.resume && s.last != nullptr && ::SSL_set_session(s.ssl, s.last) != 1) {
            fail(s, "SSL_set_session: %s", echo_tls_errors().c_str());
            return;
        }
        s.handshaken = s.reused = s.sent = false;
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
        ev.data.ptr = &s;
        if (::epoll_ctl(ep_, EPOLL_CTL_ADD, s.fd, &ev) != 0) {
            fail(s, "epoll_ctl: %s", std::strerror(errno));
            return;
        }
        drive(s);
    }

  // Moves the slot's connection on as far as it goes without blocking.
    void drive(slot& s) {
        std::string why;
        if (!s.handshaken) {
            switch (echo_tls_result(s.ssl, ::SSL_connect(s.ssl), why)) {
                case echo_tls_io::want_read:
                case echo_tls_io::want_write: return;
                case echo_tls_io::closed:
                case echo_tls_io::failed: fail(s, "TLS handshake failed: %s", why.c_str()); return;
                case echo_tls_io::ok: break;
            }
            if (const std::string bad = tls_.check(s.ssl); !bad.empty()) {
                fail(s, "%s", bad.c_str());
                return;
            }
            s.handshaken = true;
            s.reused = ::SSL_session_reused(s.ssl) == 1;
            std::lock_guard<std::mutex> lock(shared_.print_mu);
            if (shared_.tls_session.empty()) shared_.tls_session = echo_tls_describe(s.ssl);
        }
        if (!s.sent) {
            echo_store_u32le(message_.data(), static_cast<std::uint32_t>(wire_));
            echo_fill_body(message_.data() + echo_header_size, opt_.size, s.id, s.seq);
            switch (echo_tls_result(s.ssl, ::SSL_write(s.ssl, message_.data(), static_cast<int>(wire_)), why)) {
                case echo_tls_io::want_read:
                case echo_tls_io::want_write: return;  // retried with the same bytes: message_ is rebuilt identically
                case echo_tls_io::closed:
                case echo_tls_io::failed: fail(s, "SSL_write failed: %s", why.c_str()); return;
                case echo_tls_io::ok: s.sent = true; break;
            }
        }
        while (s.in.size() < wire_) {
            std::uint8_t* p = s.in.prepare(wire_);
            const int n = ::SSL_read(s.ssl, p, static_cast<int>(s.in.writable()));
            switch (echo_tls_result(s.ssl, n, why)) {
                case echo_tls_io::ok: s.in.commit(static_cast<std::size_t>(n)); continue;
                case echo_tls_io::want_read:
                case echo_tls_io::want_write: return;
                case echo_tls_io::closed:
                case echo_tls_io::failed: fail(s, "the echo did not come back: %s", why.c_str()); return;
            }
        }
        if (!check_echo(s)) return;
        finish(s);
    }

    bool check_echo(slot& s) {
        const std::uint8_t* p = s.in.data();
        if (s.in.size() != wire_ || echo_load_u32le(p) != wire_) {
            fail(s, "framing error: got %zu bytes with length field %u, expected one echo of %zu bytes", s.in.size(),
                 s.in.size() >= 4 ? echo_load_u32le(p) : 0U, wire_);
            return false;
        }
        echo_fill_body(expected_.data(), opt_.size, s.id, s.seq);
        if (std::memcmp(expected_.data(), p + echo_header_size, opt_.size) != 0) {
            fail(s, "content mismatch in the echo of connection #%llu", static_cast<unsigned long long>(s.seq));
            return false;
        }
        s.in.consume(wire_);
        return true;
    }

    // Counts the connection, keeps its session for the next one, closes it and opens the next.
    void finish(slot& s) {
        ++(s.reused ? resumed_ : full_);
        if (opt_.resume) {
            ::SSL_SESSION_free(s.last);
            s.last = ::SSL_get1_session(s.ssl);
        }
        ::SSL_shutdown(s.ssl);  // sends close_notify; the peer's is not awaited
        ::SSL_free(s.ssl);
        s.ssl = nullptr;
        ::close(s.fd);
        s.fd = -1;
        ++s.seq;
        if (!shared_.stop.load(std::memory_order_relaxed)) open(s);
    }

    [[gnu::format(printf, 3, 4)]] void fail(slot& s, const char* fmt, ...) {
        char what[512];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        report_error(shared_, "slot %u, connection #%llu: %s", s.id, static_cast<unsigned long long>(s.seq), what);
        ::SSL_free(s.ssl);
        s.ssl = nullptr;
        if (s.fd >= 0) ::close(s.fd);
        s.fd = -1;
    }

    const echo_bench_options& opt_;
    const sockaddr_in addr_;
    const echo_tls_context& tls_;
    hs_shared& shared_;
    hs_counters& counters_;
    const std::size_t wire_;
    std::vector<std::uint8_t> message_;
    std::vector<std::uint8_t> expected_;
    std::vector<std::unique_ptr<slot>> slots_;
    int ep_ = -1;
    std::uint64_t full_ = 0;
    std::uint64_t resumed_ = 0;
};

struct hs_sample {
    steady::time_point at;
    std::uint64_t full = 0;
    std::uint64_t resumed = 0;
    double client_cpu_s = 0;
    proc_sample server;
};

struct hs_rates {
    double seconds = 0;
    std::uint64_t full = 0, resumed = 0;
    double per_s = 0, full_per_s = 0, resumed_per_s = 0;
    double client_cpu_pct = 0, server_cpu_pct = -1, server_rss_mib = -1;
    double per_server_cpu_s = -1;  // handshakes per second of server CPU time: per core
};

hs_rates hs_between(const hs_sample& a, const hs_sample& b) {
    hs_rates r;
    r.seconds = std::chrono::duration<double>(b.at - a.at).count();
    r.full = b.full - a.full;
    r.resumed = b.resumed - a.resumed;
    if (r.seconds <= 0) return r;
    r.full_per_s = static_cast<double>(r.full) / r.seconds;
    r.resumed_per_s = static_cast<double>(r.resumed) / r.seconds;
    r.per_s = r.full_per_s + r.resumed_per_s;
    r.client_cpu_pct = (b.client_cpu_s - a.client_cpu_s) / r.seconds * 100.0;
    if (a.server.ok && b.server.ok) {
        const double cpu = b.server.cpu_s - a.server.cpu_s;
        r.server_cpu_pct = cpu / r.seconds * 100.0;
        r.server_rss_mib = b.server.rss_mib;
        if (cpu > 0) r.per_server_cpu_s = static_cast<double>(r.full + r.resumed) / cpu;
    }
    return r;
}

std::string hs_format(const hs_rates& r) {
    char buf[256];
    int n = std::snprintf(buf, sizeof buf, "handshakes/s %8.0f (full %8.0f, resumed %8.0f) | client cpu %5.1f%%",
                          r.per_s, r.full_per_s, r.resumed_per_s, r.client_cpu_pct);
    if (r.server_cpu_pct >= 0 && n > 0 && static_cast<std::size_t>(n) < sizeof buf) {
        std::snprintf(buf + n, sizeof buf - static_cast<std::size_t>(n),
                      " | server cpu %5.1f%% rss %6.1f MiB | %6.0f per server CPU-second", r.server_cpu_pct,
                      r.server_rss_mib, r.per_server_cpu_s);
    }
    return buf;
}

nlohmann::ordered_json hs_figure(double v) {
    if (v < 0) return nullptr;
    return std::round(v * 1000.0) / 1000.0;
}

}  // namespace

int run_handshakes(const echo_bench_options& o, const sockaddr_in& addr, const echo_tls_context& tls) {
    const std::string client_cpus = cpus_allowed();
    std::printf("strix-echo-bench: handshakes against %s:%u, %u connections in flight, %u worker thread(s), %s, "
                "one %zu-byte echo per connection, warmup %d s, duration %d s, client CPUs %s, TLS (server "
                "certificate %s)\n",
                o.host.c_str(), o.port, o.connections, o.threads,
                o.resume ? "resuming each slot's last session" : "full handshakes", o.size, o.warmup_s, o.duration_s,
                client_cpus.c_str(), tls.verifies() ? "verified against --ca" : "NOT verified: no --ca");
    std::fflush(stdout);

    hs_shared shared;
    std::vector<hs_counters> counters(o.threads);
    std::vector<std::vector<std::uint32_t>> ids(o.threads);
    for (std::uint32_t i = 0; i < o.connections; ++i) ids[i % o.threads].push_back(i);
    std::vector<std::unique_ptr<hs_worker>> workers;
    for (std::uint32_t t = 0; t < o.threads; ++t) {
        workers.push_back(std::make_unique<hs_worker>(o, addr, tls, shared, counters[t], std::move(ids[t])));
    }
    auto take = [&] {
        hs_sample s;
        s.at = steady::now();
        for (auto& c : counters) {
            s.full += c.full.load(std::memory_order_relaxed);
            s.resumed += c.resumed.load(std::memory_order_relaxed);
        }
        s.client_cpu_s = self_cpu_s();
        if (o.server_pid != 0) s.server = read_proc(o.server_pid);
        return s;
    };

    const hs_sample start = take();
    hs_sample prev = start, window_start = start, window_end = start;
    std::vector<std::thread> threads;
    for (auto& w : workers) threads.emplace_back([&w] { w->run(); });
    const int total = o.warmup_s + o.duration_s;
    int k = 0;
    while (k < total && !shared.abort.load()) {
        const auto due = start.at + std::chrono::seconds(k + 1);
        while (!shared.abort.load() && steady::now() < due) {
            std::this_thread::sleep_for(std::min<steady::duration>(std::chrono::milliseconds(50), due - steady::now()));
        }
        if (shared.abort.load()) break;
        const hs_sample s = take();
        if (o.server_pid != 0 && !s.server.ok) {
            report_error(shared, "server pid %ld is gone", o.server_pid);
            break;
        }
        ++k;
        std::printf("[%3d s%s] %s\n", k, k <= o.warmup_s ? " warmup" : "", hs_format(hs_between(prev, s)).c_str());
        std::fflush(stdout);
        if (k == o.warmup_s) window_start = s;
        prev = window_end = s;
    }
    shared.stop.store(true);
    for (auto& t : threads) t.join();

    const bool completed = k == total;
    const hs_rates r = hs_between(window_start, window_end);
    const std::uint64_t done = r.full + r.resumed;
    const double resumed_share = done > 0 ? static_cast<double>(r.resumed) / static_cast<double>(done) : 0.0;
    const std::uint64_t errors = shared.errors.load();
    const bool resumed_enough = !o.resume || resumed_share >= min_resumed;
    const bool ok = completed && errors == 0 && done > 0 && resumed_enough;

    std::printf("summary over %.2f s after %d s warmup: %s\n", r.seconds, o.warmup_s, hs_format(r).c_str());
    std::printf("handshakes: %llu full, %llu resumed (%.1f %%), each followed by one verified echo, errors=%llu\n",
                static_cast<unsigned long long>(r.full), static_cast<unsigned long long>(r.resumed),
                resumed_share * 100.0, static_cast<unsigned long long>(errors));
    std::printf("TLS: %s\n", shared.tls_session.empty() ? "no handshake completed" : shared.tls_session.c_str());
    if (!completed && errors == 0) std::printf("run did not complete its %d s\n", total);
    if (!resumed_enough) {
        std::printf("--resume: only %.1f %% of the handshakes were resumed, under %.0f %%: the server did not "
                    "accept the sessions offered\n",
                    resumed_share * 100.0, min_resumed * 100.0);
    }
    std::printf("result: %s\n", ok ? "PASS" : "FAIL");

    if (!o.json.empty()) {
        const nlohmann::ordered_json summary = {
            {"ok", ok},
            {"handshakes_per_s", hs_figure(r.per_s)},
            {"full_per_s", hs_figure(r.full_per_s)},
            {"resumed_per_s", hs_figure(r.resumed_per_s)},
            {"handshakes_per_server_cpu_s", hs_figure(r.per_server_cpu_s)},
            {"server_cpu_pct", hs_figure(r.server_cpu_pct)},
            {"server_rss_mib", hs_figure(r.server_rss_mib)},
            {"client_cpu_pct", hs_figure(r.client_cpu_pct)},
            {"full", r.full},
            {"resumed", r.resumed},
            {"resumed_pct", hs_figure(resumed_share * 100.0)},
            {"resume", o.resume},
            {"errors", errors},
            {"connections", o.connections},
            {"size", o.size},
            {"threads", o.threads},
            {"warmup_s", o.warmup_s},
            {"duration_s", o.duration_s},
            {"measured_s", hs_figure(r.seconds)},
            {"mode", "handshakes"},
            {"client_threads", o.threads + 1U},
            {"client_cpus", client_cpus},
            {"tls_session", shared.tls_session},
            {"tls_verified", tls.verifies()},
        };
        std::ofstream js(o.json);
        js << summary.dump(2) << '\n';
        if (!js) {
            std::fprintf(stderr, "strix-echo-bench: cannot write %s\n", o.json.c_str());
            return 1;
        }
    }
    return ok ? 0 : 1;
}

}  // namespace strix
