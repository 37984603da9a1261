// strix-echo-bench: the load tool of the echo shoot-out (the Echo server shoot-out's method).
//
// Opens --connections TCP connections to an echo server, keeps --depth messages in flight on each
// (a new message for every echo received), and checks every echoed byte and the order of the
// echoes. Prints one line per second and a summary over the measured window (after --warmup), with
// the server's CPU and RSS when --server-pid is given. Exits 0 only when every message sent came
// back intact and in order; any mismatch, short count, or closed connection exits 1.
//
// Two modes, the same loop and the same checks:
//   --mode multi (default)  --threads worker threads, each with its own epoll instance and a slice
//                           of the connections; the main thread takes the once-a-second samples.
//   --mode single           one thread: one epoll loop drives every connection and takes the
//                           samples between loop turns (an independent single-threaded pipelined
//                           client, the kind a user writes to try a server).
// Every connection appends to its own send buffer and is flushed with one write() per loop turn,
// so the client does no more syscalls per message than the servers it measures (both share the
// same cores).
//
// --tls puts OpenSSL 3 between the socket and the buffers (echo_tls.hpp): each connection's
// non-blocking handshake runs in the same epoll loop, then one SSL_write of the connection's
// pending bytes per loop turn and SSL_read until it wants more input; the checks are the same.
// --handshakes measures connection setup instead (echo_handshake.cpp).
//
// --ws speaks WebSocket (echo_ws.hpp): each connection does the HTTP/1.1 upgrade before the
// measured loop, then every message is one binary frame (masked, a new key per frame) whose
// payload is the body alone; the echo must come back as a binary message with the same bytes, in
// order (a server may fragment it: the pieces are checked as they come). Pings are answered.
// --ws --broadcast measures a broadcast server: every connection receives every connection's
// messages, each sender's in order and none twice, while each keeps --depth of its own in flight.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "echo_bench_options.hpp"
#include "echo_buffer.hpp"
#include "echo_handshake.hpp"
#include "echo_sampler.hpp"
#include "echo_stats.hpp"
#include "echo_tls.hpp"
#include "echo_wire.hpp"
#include "echo_ws.hpp"
#include "echo_ws_messages.hpp"

namespace strix {
namespace {

using options = echo_bench_options;

struct connection {
    int fd = -1;
    std::uint32_t id = 0;
    std::uint64_t next_send = 0;  // sequence number of the next message appended
    std::uint64_t next_recv = 0;  // sequence number the next echo must carry
    echo_buffer in;
    echo_buffer out;
    bool dirty = false;  // queued for this turn's flush
    bool dead = false;
    SSL* ssl = nullptr;            // --tls only
    bool handshaking = false;      // SSL_connect not finished yet
    bool read_wants_write = false;  // SSL_read asked for writability (a TLS key update)
    ws_receive_state ws;           // --ws only

    connection(int f, std::uint32_t i, std::size_t in_cap, std::size_t out_cap)
        : fd(f), id(i), in(in_cap), out(out_cap) {}
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    ~connection() {
        ::SSL_free(ssl);
        if (fd >= 0) ::close(fd);
    }
};

class worker {
public:
    worker(const options& opt, shared_state& shared, worker_counters& counters,
           std::vector<std::unique_ptr<connection>> conns, const echo_tls_context* tls)
        : opt_(opt),
          tls_(tls),
          shared_(shared),
          counters_(counters),
          conns_(std::move(conns)),
          wire_(echo_client_wire_size(opt)),
          read_chunk_(std::max<std::size_t>(16384, wire_)),
          expected_(std::max<std::size_t>(opt.size, 1)),
          ws_(opt.size, opt.connections, opt.broadcast) {
        if (opt.ws) {
            for (auto& c : conns_) c->ws = ws_.new_state();
        }
    }

  /// Runs the connections until the run stops and every echo is back, or the run aborts. Before
  /// each epoll_wait it calls between_turns (when set), which returns how long that wait may
  /// block in ms: single mode samples there. Worker thread only.
    void run(const std::function<int()>& between_turns = {}) {
        ep_ = ::epoll_create1(EPOLL_CLOEXEC);
        if (ep_ < 0) {
            report_error(shared_, "epoll_create1: %s", std::strerror(errno));
            return;
        }
        for (auto& c : conns_) {
            epoll_event ev{};
      // Edge-triggered EPOLLOUT only fires after a write ran out of socket buffer, so keeping it
      // registered costs nothing in the common case and saves an epoll_ctl per would-block.
            ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
            ev.data.ptr = c.get();
            if (::epoll_ctl(ep_, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
                report_error(shared_, "epoll_ctl: %s", std::strerror(errno));
                return;
            }
        }
        for (auto& c : conns_) {
            if (tls_ != nullptr) {
                start_tls(*c);
            } else {
                append(*c, opt_.depth);
                flush(*c);
            }
        }
        publish();
        std::vector<epoll_event> events(256);
        std::optional<steady::time_point> drain_deadline;
        while (!shared_.abort.load(std::memory_order_relaxed)) {
            if (shared_.stop_sending.load(std::memory_order_relaxed)) {
                if (opt_.broadcast && !frozen_) freeze();
                if (outstanding_ == 0 && (!opt_.broadcast || all_delivered())) break;
                if (!drain_deadline) drain_deadline = steady::now() + std::chrono::seconds(opt_.drain_timeout_s);
                if (steady::now() > *drain_deadline) {
                    report_drain_timeout();
                    break;
                }
            }
            const int timeout_ms = between_turns ? between_turns() : 100;
            const int n = ::epoll_wait(ep_, events.data(), static_cast<int>(events.size()), timeout_ms);
            if (n < 0) {
                if (errno == EINTR) continue;
                report_error(shared_, "epoll_wait: %s", std::strerror(errno));
                break;
            }
            for (int i = 0; i < n; ++i) {
                auto& c = *static_cast<connection*>(events[static_cast<std::size_t>(i)].data.ptr);
                const std::uint32_t ev = events[static_cast<std::size_t>(i)].events;
                if (c.dead) continue;
                if (c.handshaking) {
                    handshake(c);
                    continue;
                }
                if ((ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) || (c.read_wants_write && (ev & EPOLLOUT))) {
                    on_readable(c, ev);
                }
                if (!c.dead && (ev & EPOLLOUT) && !c.out.empty()) mark_dirty(c);
            }
      // One write per connection per loop turn, after the whole batch has been parsed.
            for (connection* c : dirty_) {
                c->dirty = false;
                if (!c->dead) flush(*c);
            }
            dirty_.clear();
            publish();
        }
        publish();
        ::close(ep_);
        conns_.clear();  // closes the sockets
    }

private:
    void publish() {
        counters_.msgs_in.store(msgs_in_, std::memory_order_relaxed);
        counters_.bytes_in.store(bytes_in_, std::memory_order_relaxed);
        counters_.bytes_out.store(bytes_out_, std::memory_order_relaxed);
        counters_.outstanding.store(outstanding_, std::memory_order_relaxed);
    }

    void mark_dirty(connection& c) {
        if (c.dirty) return;
        c.dirty = true;
        dirty_.push_back(&c);
    }

  // Appends the next n messages of connection c to its send buffer.
    void append(connection& c, std::uint64_t n) {
        if (opt_.ws) {
            append_ws(c, n);
            return;
        }
        std::uint8_t* p = c.out.prepare(static_cast<std::size_t>(n) * wire_);
        for (std::uint64_t k = 0; k < n; ++k) {
            echo_store_u32le(p, static_cast<std::uint32_t>(wire_));
            echo_fill_body(p + echo_header_size, opt_.size, c.id, c.next_send++);
            p += wire_;
        }
        c.out.commit(static_cast<std::size_t>(n) * wire_);
        outstanding_ += n;
        mark_dirty(c);
        flush_if_large(c);
    }

    // Output of 32 KiB or more goes out now, not with the loop's flush of every connection: by
    // then a turn over 100 connections has written megabytes and these bytes have left the cache
    // (the kernel's copy of them then reads memory). Smaller output waits and is coalesced.
    void flush_if_large(connection& c) {
        if (c.out.size() >= 32 * 1024) flush(c);
    }

    void flush(connection& c) {
        if (c.out.empty()) return;
        if (c.ssl != nullptr) {
            flush_tls(c);
            return;
        }
        ssize_t n;
        do {
            n = ::write(c.fd, c.out.data(), c.out.size());
        } while (n < 0 && errno == EINTR);
        if (n > 0) {
            c.out.consume(static_cast<std::size_t>(n));
            bytes_out_ += static_cast<std::uint64_t>(n);
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            fail(c, "write failed: %s", std::strerror(errno));
        }
    // A partial write set SOCK_NOSPACE, so the edge-triggered EPOLLOUT resumes it.
    }

    void on_readable(connection& c, std::uint32_t ev) {
        if (c.ssl != nullptr) {
            read_tls(c);
            return;
        }
        const bool hangup = (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
        for (;;) {
            std::uint8_t* p = c.in.prepare(read_chunk_);
            const std::size_t room = c.in.writable();
            const ssize_t n = ::read(c.fd, p, room);
            if (n > 0) {
                c.in.commit(static_cast<std::size_t>(n));
                bytes_in_ += static_cast<std::uint64_t>(n);
                parse(c);
                if (c.dead) return;
        // A short read drained the socket; new data raises a new edge. After a hangup we read
        // on to the end so the close is reported.
                if (static_cast<std::size_t>(n) < room && !hangup) return;
                continue;
            }
            if (n == 0) {
                fail(c, "the server closed the connection (%llu of %llu echoes received)",
                     static_cast<unsigned long long>(c.next_recv), static_cast<unsigned long long>(c.next_send));
                return;
            }
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (hangup) {
                    int err = 0;
                    socklen_t len = sizeof(err);
                    ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
                    fail(c, "connection hung up by the server (%s)", err ? std::strerror(err) : "no error");
                }
                return;
            }
            fail(c, "read failed: %s", std::strerror(errno));
            return;
        }
    }

  // ---- --tls --------------------------------------------------------------------------------------

    void start_tls(connection& c) {
        std::string why;
        c.ssl = tls_->open(c.fd, why);
        if (c.ssl == nullptr) {
            fail(c, "%s", why.c_str());
            return;
        }
        c.handshaking = true;
        handshake(c);
    }

  // Drives SSL_connect; once it completes, the connection's first --depth messages go out.
    void handshake(connection& c) {
        std::string why;
        switch (echo_tls_result(c.ssl, ::SSL_connect(c.ssl), why)) {
            case echo_tls_io::want_read:
            case echo_tls_io::want_write: return;  // epoll's next edge calls again
            case echo_tls_io::closed:
            case echo_tls_io::failed: fail(c, "TLS handshake failed: %s", why.c_str()); return;
            case echo_tls_io::ok: break;
        }
        if (const std::string bad = tls_->check(c.ssl); !bad.empty()) {
            fail(c, "%s", bad.c_str());
            return;
        }
        c.handshaking = false;
        {
            std::lock_guard<std::mutex> lock(shared_.print_mu);
            if (shared_.tls_session.empty()) shared_.tls_session = echo_tls_describe(c.ssl);
        }
        append(c, opt_.depth);
        // The records that finished the handshake may have brought application data already.
        read_tls(c);
    }

  // One SSL_write of everything pending. Without SSL_MODE_ENABLE_PARTIAL_WRITE it seals and
  // writes every record or reports WANT_WRITE; then the same bytes (and any appended since) are
  // retried on the next EPOLLOUT edge, as OpenSSL requires.
    void flush_tls(connection& c) {
        const std::size_t len = std::min<std::size_t>(c.out.size(), INT32_MAX);
        const int n = ::SSL_write(c.ssl, c.out.data(), static_cast<int>(len));
        std::string why;
        switch (echo_tls_result(c.ssl, n, why)) {
            case echo_tls_io::ok:
                c.out.consume(static_cast<std::size_t>(n));
                bytes_out_ += static_cast<std::uint64_t>(n);
                if (!c.out.empty()) mark_dirty(c);  // more than INT32_MAX pending: next turn
                return;
            case echo_tls_io::want_read:   // a renegotiation we never start: retried on input
            case echo_tls_io::want_write:  // the socket is full: the EPOLLOUT edge retries
                return;
            case echo_tls_io::closed:
            case echo_tls_io::failed: fail(c, "SSL_write failed: %s", why.c_str()); return;
        }
    }

  // SSL_read until OpenSSL needs more from the socket: the edge-triggered loop gets no new event
  // for bytes OpenSSL already holds.
    void read_tls(connection& c) {
        c.read_wants_write = false;
        for (;;) {
            std::uint8_t* p = c.in.prepare(read_chunk_);
            const std::size_t room = std::min<std::size_t>(c.in.writable(), INT32_MAX);
            const int n = ::SSL_read(c.ssl, p, static_cast<int>(room));
            std::string why;
            switch (echo_tls_result(c.ssl, n, why)) {
                case echo_tls_io::ok:
                    c.in.commit(static_cast<std::size_t>(n));
                    bytes_in_ += static_cast<std::uint64_t>(n);
                    parse(c);
                    if (c.dead) return;
                    continue;
                case echo_tls_io::want_read: return;
                case echo_tls_io::want_write: c.read_wants_write = true; return;
                case echo_tls_io::closed:
                    fail(c, "the server closed the connection (%s; %llu of %llu echoes received)", why.c_str(),
                         static_cast<unsigned long long>(c.next_recv), static_cast<unsigned long long>(c.next_send));
                    return;
                case echo_tls_io::failed: fail(c, "SSL_read failed: %s", why.c_str()); return;
            }
        }
    }

  // ---- both -----------------------------------------------------------------------------------

  // Checks and consumes every complete echo in c's input buffer.
    void parse(connection& c) {
        if (opt_.ws) {
            parse_ws(c);
            return;
        }
        std::uint64_t got = 0;
        while (c.in.size() >= echo_header_size) {
            const std::uint8_t* p = c.in.data();
            const std::uint32_t len = echo_load_u32le(p);
            if (len != wire_) {
                fail(c, "framing error: echo #%llu has length field %u, expected %zu",
                     static_cast<unsigned long long>(c.next_recv), len, wire_);
                return;
            }
            if (c.in.size() < wire_) break;
            if (c.next_recv == c.next_send) {
                fail(c, "unexpected echo: all %llu messages sent were already echoed",
                     static_cast<unsigned long long>(c.next_send));
                return;
            }
            echo_fill_body(expected_.data(), opt_.size, c.id, c.next_recv);
            if (std::memcmp(expected_.data(), p + echo_header_size, opt_.size) != 0) {
                std::size_t i = 0;
                while (expected_[i] == p[echo_header_size + i]) ++i;
                std::uint64_t carried = 0;
                for (std::size_t b = 0; b < std::min<std::size_t>(8, opt_.size); ++b) {
                    carried |= static_cast<std::uint64_t>(p[echo_header_size + b]) << (8 * b);
                }
                fail(c,
                     "content mismatch in echo #%llu at body byte %zu: expected 0x%02x, got 0x%02x "
                     "(its sequence field reads %llu)",
                     static_cast<unsigned long long>(c.next_recv), i, expected_[i], p[echo_header_size + i],
                     static_cast<unsigned long long>(carried));
                return;
            }
            ++c.next_recv;
            ++got;
            c.in.consume(wire_);
        }
        if (got == 0) return;
        msgs_in_ += got;
        outstanding_ -= got;
        if (!shared_.stop_sending.load(std::memory_order_relaxed)) append(c, got);
    }

  // ---- --ws -------------------------------------------------------------------------------------

    void append_ws(connection& c, std::uint64_t n) {
        ws_.append({c.id, c.next_send, c.next_recv}, c.out, n);
        outstanding_ += n;
        mark_dirty(c);
        flush_if_large(c);
    }

    void parse_ws(connection& c) {
        const ws_parse_result r = ws_.parse(c.ws, {c.id, c.next_send, c.next_recv}, c.in, c.out);
        if (r.replied) mark_dirty(c);
        msgs_in_ += r.delivered;
        if (!r.error.empty()) return fail(c, "%s", r.error.c_str());
        if (r.own == 0) return;
        outstanding_ -= r.own;
        if (!shared_.stop_sending.load(std::memory_order_relaxed)) append(c, r.own);
    }

  // --broadcast: publishes this worker's final counts once sending has stopped.
    void freeze() {
        for (auto& c : conns_) shared_.final_sent[c->id].store(c->next_send, std::memory_order_relaxed);
        shared_.frozen.fetch_add(1, std::memory_order_release);
        frozen_ = true;
    }

  // --broadcast: every connection of this worker has every message every sender sent.
    bool all_delivered() const {
        if (shared_.frozen.load(std::memory_order_acquire) != opt_.threads) return false;
        for (auto& c : conns_) {
            for (std::uint32_t s = 0; s < opt_.connections; ++s) {
                if (c->ws.from[s] != shared_.final_sent[s].load(std::memory_order_relaxed)) return false;
            }
        }
        return true;
    }

    [[gnu::format(printf, 3, 4)]] void fail(connection& c, const char* fmt, ...) {
        char what[512];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        report_error(shared_, "connection %u: %s", c.id, what);
        c.dead = true;
    }

    void report_drain_timeout() {
        std::uint32_t stuck = 0;
        for (auto& c : conns_) stuck += c->next_send != c->next_recv ? 1 : 0;
        if (opt_.broadcast && outstanding_ == 0) {
            std::uint64_t missing = 0;
            for (auto& c : conns_) {
                for (std::uint32_t s = 0; s < opt_.connections; ++s) {
                    missing += shared_.final_sent[s].load() - c->ws.from[s];
                }
            }
            report_error(shared_, "%llu broadcast deliveries still missing %d s after sending stopped",
                         static_cast<unsigned long long>(missing), opt_.drain_timeout_s);
            return;
        }
        report_error(shared_, "%llu echoes still outstanding on %u connections %d s after sending stopped",
                     static_cast<unsigned long long>(outstanding_), stuck, opt_.drain_timeout_s);
    }

    const options& opt_;
    const echo_tls_context* tls_;  // nullptr without --tls
    shared_state& shared_;
    worker_counters& counters_;
    std::vector<std::unique_ptr<connection>> conns_;
    const std::size_t wire_;
    const std::size_t read_chunk_;
    std::vector<std::uint8_t> expected_;
    std::vector<connection*> dirty_;
    ws_messages ws_;  // --ws only
    bool frozen_ = false;
    int ep_ = -1;
    std::uint64_t msgs_in_ = 0;
    std::uint64_t bytes_in_ = 0;
    std::uint64_t bytes_out_ = 0;
    std::uint64_t outstanding_ = 0;
};

// A rate or figure for the JSON summary, to the thousandth; null when it was not measured (negative).
nlohmann::ordered_json json_figure(double v) {
    if (v < 0) return nullptr;
    return std::round(v * 1000.0) / 1000.0;
}

// ---- main --------------------------------------------------------------------------------------

// Blocking connect (bounded by SO_SNDTIMEO) and, with --ws, the upgrade (bytes after its response
// go to rest), then non-blocking with TCP_NODELAY.
int connect_one(const options& o, const sockaddr_in& addr, std::uint32_t i, echo_buffer& rest) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        std::fprintf(stderr, "strix-echo-bench: socket: %s\n", std::strerror(errno));
        return -1;
    }
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
        std::fprintf(stderr, "strix-echo-bench: connection %u to %s:%u failed: %s (is the server up?)\n", i,
                     o.host.c_str(), o.port, std::strerror(errno));
        ::close(fd);
        return -1;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (o.ws) {
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (const std::string why = ws_client_handshake(fd, o.host, o.port, o.ws_path, rest); !why.empty()) {
            std::fprintf(stderr, "strix-echo-bench: connection %u: WebSocket upgrade failed: %s\n", i, why.c_str());
            ::close(fd);
            return -1;
        }
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

int run(int argc, char** argv) {
    const options o = parse_echo_bench_options(argc, argv);
    std::signal(SIGPIPE, SIG_IGN);
    const std::size_t wire = echo_client_wire_size(o);

    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(o.port);
    if (::inet_pton(AF_INET, o.host.c_str(), &addr.sin_addr) != 1) {
        std::fprintf(stderr, "strix-echo-bench: --host must be a numeric IPv4 address, got '%s'\n", o.host.c_str());
        return 2;
    }

    std::optional<echo_tls_context> tls;
    if (o.tls.enabled) {
        try {
            tls.emplace(o.tls);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "strix-echo-bench: %s\n", e.what());
            return 2;
        }
    }
    if (o.handshakes) return run_handshakes(o, addr, *tls);

    std::vector<std::vector<std::unique_ptr<connection>>> slices(o.threads);
  // Initial sizes for the common small-message case; the buffers grow when a run needs more.
    const std::size_t in_cap = 32768;
    const std::size_t out_cap = std::clamp<std::size_t>(2 * static_cast<std::size_t>(o.depth) * wire, 4096, 1 << 20);
    for (std::uint32_t i = 0; i < o.connections; ++i) {
        echo_buffer rest(256);
        const int fd = connect_one(o, addr, i, rest);
        if (fd < 0) return 1;  // the connections made so far close with slices
        auto c = std::make_unique<connection>(fd, i, in_cap, out_cap);
        if (!rest.empty()) {
            std::memcpy(c->in.prepare(rest.size()), rest.data(), rest.size());
            c->in.commit(rest.size());
        }
        slices[i % o.threads].push_back(std::move(c));
    }
    // A broadcast server may add a client to its set just after sending the 101: give the last
    // ones time to join, so every connection's first message reaches every connection.
    if (o.broadcast) std::this_thread::sleep_for(std::chrono::milliseconds(200));

    const bool single = o.mode == "single";
    const std::string client_cpus = cpus_allowed();
    std::printf("strix-echo-bench: %s:%u, %u connections, body %zu B (wire %zu B), depth %u, "
                "warmup %d s, duration %d s, mode %s (%u worker thread(s)%s), client CPUs %s%s%s\n",
                o.host.c_str(), o.port, o.connections, o.size, wire, o.depth, o.warmup_s, o.duration_s, o.mode.c_str(),
                o.threads, single ? ", sampling in the same thread" : " + a sampler", client_cpus.c_str(),
                !tls              ? ""
                : tls->verifies() ? ", TLS (server certificate verified against --ca)"
                                  : ", TLS (server certificate NOT verified: no --ca)",
                !o.ws         ? ""
                : o.broadcast ? ", WebSocket broadcast (msgs/s in = deliveries)"
                              : ", WebSocket");
    std::fflush(stdout);

    shared_state shared;
    if (o.broadcast) shared.final_sent = std::vector<std::atomic<std::uint64_t>>(o.connections);
    std::vector<worker_counters> counters(o.threads);
    std::vector<std::unique_ptr<worker>> workers;
    for (std::uint32_t t = 0; t < o.threads; ++t) {
        workers.push_back(
            std::make_unique<worker>(o, shared, counters[t], std::move(slices[t]), tls ? &*tls : nullptr));
    }

    sampler smp(o, shared, counters);
    smp.begin();
    if (single) {
    // The one loop samples between its turns and never blocks past the next tick.
        workers[0]->run([&]() -> int {
            if (smp.done()) return 100;
            if (steady::now() >= smp.next_due()) {
                smp.tick();
                if (smp.done()) {
                    shared.stop_sending.store(true);
                    return 100;
                }
            }
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(smp.next_due() - steady::now());
            return static_cast<int>(std::clamp<std::chrono::milliseconds::rep>(left.count(), 0, 100));
        });
    } else {
        std::vector<std::thread> threads;
        for (auto& w : workers) threads.emplace_back([&w] { w->run(); });
        while (!smp.done()) {
            const auto target = smp.next_due();
            while (!shared.abort.load() && steady::now() < target) {
                std::this_thread::sleep_for(
                    std::min<steady::duration>(std::chrono::milliseconds(50), target - steady::now()));
            }
            smp.tick();
        }
        shared.stop_sending.store(true);
        for (auto& t : threads) t.join();
    }
    const bool completed = smp.completed();

    const sample final_counts = smp.take();
    std::uint64_t outstanding = 0;
    for (auto& c : counters) outstanding += c.outstanding.load();
    const std::uint64_t errors = shared.errors.load();
    const std::uint64_t verified = final_counts.msgs_in;
    const bool ok = completed && errors == 0 && outstanding == 0 && verified > 0;
    const rates r = smp.window();

    std::printf("summary over %.2f s after %d s warmup: %s\n", r.seconds, o.warmup_s, format_rates(r).c_str());
    std::printf(o.broadcast ? "verified %llu deliveries byte for byte and in order per sender, own outstanding %llu, "
                              "errors=%llu\n"
                            : "verified %llu echoes byte for byte and in order, outstanding %llu, errors=%llu\n",
                static_cast<unsigned long long>(verified), static_cast<unsigned long long>(outstanding),
                static_cast<unsigned long long>(errors));
    if (!completed && errors == 0) std::printf("run did not complete its %d s\n", o.warmup_s + o.duration_s);
    if (tls)
        std::printf("TLS: %s\n", shared.tls_session.empty() ? "no handshake completed" : shared.tls_session.c_str());
    std::printf("result: %s\n", ok ? "PASS" : "FAIL");

    if (!o.json.empty()) {
    // Field names and order are what scripts/echo_report.py and echo_bench_test.sh read; new
    // fields go at the end. client_threads counts every thread of the client (workers + sampler).
        const nlohmann::ordered_json summary = {
            {"ok", ok},
            {"msgs_in_per_s", json_figure(r.msgs_in)},
            {"msgs_out_per_s", json_figure(r.msgs_out)},
            {"mb_in_per_s", json_figure(r.mb_in)},
            {"mb_out_per_s", json_figure(r.mb_out)},
            {"server_cpu_pct", json_figure(r.server_cpu_pct)},
            {"server_rss_mib", json_figure(r.server_rss_mib)},
            {"client_cpu_pct", json_figure(r.client_cpu_pct)},
            {"verified", verified},
            {"outstanding", outstanding},
            {"errors", errors},
            {"connections", o.connections},
            {"size", o.size},
            {"depth", o.depth},
            {"threads", o.threads},
            {"warmup_s", o.warmup_s},
            {"duration_s", o.duration_s},
            {"measured_s", json_figure(r.seconds)},
            {"mode", o.mode},
            {"client_threads", single ? 1U : o.threads + 1U},
            {"client_cpus", client_cpus},
            {"tls", tls.has_value()},
            {"tls_session", shared.tls_session},
            {"tls_verified", tls && tls->verifies()},
            {"ws", o.ws},
            {"broadcast", o.broadcast},
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

}  // namespace
}  // namespace strix

int main(int argc, char** argv) { return strix::run(argc, argv); }
