#include "hold_worker.hpp"

#include <arpa/inet.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>

namespace strix::chat::hold {
namespace {

constexpr std::int64_t tick_ns = 10'000'000;         // the ping wheel's bucket width
constexpr std::int64_t stop_poll_ns = 100'000'000;   // no pings due: how often the stop flag is read
constexpr std::int64_t retry_ns = 200'000'000;       // before a refused login or connect is tried again
constexpr std::uint8_t max_connect_tries = 8;
// With --reconnect the server may be down for a restart: 250 tries 200 ms apart is 50 s.
constexpr std::uint8_t max_reconnect_tries = 250;
constexpr std::size_t read_buffer = 256 * 1024;

}  // namespace

std::int64_t now_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

hold_worker::hold_worker(hold_shared& shared, worker_counters& out, std::uint32_t number, std::uint32_t count)
    : shared_(shared),
      out_counters_(out),
      number_(number),
      count_(count),
      ws_(shared.opt.ws_port != 0),
      buf_(read_buffer),
      // --in-flight split over the workers, the remainder to the first ones: 64 over 51 workers
      // was 1 each (51 in all) when it rounded down.
      in_flight_cap_(
          std::max<std::uint32_t>(1, shared.opt.in_flight / count + (number < shared.opt.in_flight % count ? 1 : 0))),
      rate_(shared.opt.rate / count),
      ping_buckets_(static_cast<std::uint32_t>(std::max(1.0, shared.opt.ping_interval_s * 1e9 / tick_ns))),
      read_every_ns_(static_cast<std::int64_t>(shared.opt.read_every_us * 1000)),
      mask_rng_(0x9E3779B9u * (number + 1)) {
    const std::uint32_t n = shared.opt.connections;
    conns_.resize(n / count + (number < n % count ? 1 : 0));
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
}

hold_worker::~hold_worker() {
    for (auto& c : conns_) std::free(c.carry);
    if (epfd_ >= 0) ::close(epfd_);
}

void hold_worker::run() {
    // A copy of the process's table, this thread's own from here: its sockets count against
    // RLIMIT_NOFILE in this table only (hold_main.cpp, fit_descriptors).
    if (shared_.opt.fd_table_per_thread && ::unshare(CLONE_FILES) != 0)
        throw std::runtime_error(std::string("unshare(CLONE_FILES): ") + std::strerror(errno));
    ramp_start_ns_ = now_ns();
    // Each worker's ticks at its own phase of the tick, worker k at k / count of it, on the steady
    // clock (not from its start, which differs by a thread's start-up): the N's pings reach the
    // server spread over time as independent clients' would, not as `count` bursts at one instant
    // (docs/load-tool.md, "Holding connections": what the bursts did to the chat's latency).
    next_tick_ns_ = (ramp_start_ns_ / tick_ns + 1) * tick_ns +
                    static_cast<std::int64_t>(static_cast<std::uint64_t>(tick_ns) * number_ / count_);
    std::vector<epoll_event> events(512);
    while (!shared_.stop.load(std::memory_order_acquire)) {
        const std::int64_t now = now_ns();
        ramp(now);
        run_retries(now);
        if (now >= next_tick_ns_ && shared_.opt.ping_interval_s > 0) ping_tick(now);
        const bool busy = next_start_ < conns_.size() || !retries_.empty() || !restarts_.empty();
        // Without pings next_tick_ns_ stays behind: wake every stop_poll_ns for the stop flag.
        const std::int64_t wake = std::max(next_tick_ns_, now + (shared_.opt.ping_interval_s > 0 ? 0 : stop_poll_ns));
        const int timeout_ms = busy ? 5 : static_cast<int>(std::max<std::int64_t>(1, (wake - now) / 1'000'000));
        const int got = ::epoll_wait(epfd_, events.data(), static_cast<int>(events.size()), timeout_ms);
        if (got < 0 && errno != EINTR) throw std::runtime_error(std::string("epoll_wait: ") + std::strerror(errno));
        const std::int64_t after = now_ns();
        for (int i = 0; i < got; ++i)
            on_event(events[static_cast<std::size_t>(i)].data.u32, events[static_cast<std::size_t>(i)].events, after);
        // Held: sleep out the rest of --read-every (not past the next tick or stop-flag check).
        // A thread not waiting on the set is not woken by what arrives on it: over loopback that
        // wakeup runs on the sender's CPU, so a reader woken per delivery made the server's CPU
        // pay it (a third of it during a broadcast; docs/load-tool.md, "Holding connections").
        if (got > 0 && !busy && read_every_ns_ > 0) {
            const std::int64_t left = std::min(after + read_every_ns_, wake) - now_ns();
            if (left > 0) {
                const timespec ts{static_cast<time_t>(left / 1'000'000'000), static_cast<long>(left % 1'000'000'000)};
                ::nanosleep(&ts, nullptr);
            }
        }
    }
    count_losses();
    out_counters_.done.add();
}

void hold_worker::ramp(std::int64_t now) {
    // Retried and reconnecting connections first, under the same --in-flight cap as the ramp, so
    // that N reconnecting at once queue here rather than as server_busy answers.
    while (!restarts_.empty() && in_flight_ < in_flight_cap_) {
        const std::uint32_t slot = restarts_.front();
        restarts_.pop_front();
        if (static_cast<conn_state>(conns_[slot].state) == conn_state::idle) start(slot);
    }
    while (next_start_ < conns_.size() && in_flight_ < in_flight_cap_) {
        if (rate_ > 0 && static_cast<double>(next_start_) >= rate_ * static_cast<double>(now - ramp_start_ns_) / 1e9)
            return;
        start(next_start_++);
    }
}

void hold_worker::start(std::uint32_t slot) {
    hold_conn& c = conns_[slot];
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fail(slot,
             errno == EMFILE || errno == ENFILE ? "out of file descriptors (ulimit -n, fs.nr_open)" : "socket() failed",
             false, 0);
        return;
    }
    c.fd = fd;
    c.state = static_cast<std::uint8_t>(conn_state::connecting);
    ++in_flight_;
    // Source address base + index / per_source: each server-side 4-tuple stays unique and the
    // server's per-address cap sees per_source connections. The port is left to connect()
    // (IP_BIND_ADDRESS_NO_PORT), which picks it per destination, so ports never run out.
    const int one = 1;
    ::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    from.sin_addr.s_addr = htonl(shared_.source_base + index_of(slot) / shared_.opt.per_source);
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&from), sizeof from) != 0) {
        fail(slot, "bind to the loopback source address failed", false, 0);
        return;
    }
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&shared_.target), sizeof shared_.target) != 0 &&
        errno != EINPROGRESS) {
        fail(slot, "connect failed", true, now_ns());
        return;
    }
    epoll_event ev{};
    ev.events = EPOLLOUT;
    ev.data.u32 = slot;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
}

void hold_worker::on_event(std::uint32_t slot, std::uint32_t events, std::int64_t now) {
    hold_conn& c = conns_[slot];
    const auto st = static_cast<conn_state>(c.state);
    if (c.fd < 0) return;
    if (st == conn_state::connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0 || (events & (EPOLLERR | EPOLLHUP)) != 0) {
            fail(slot, "connect refused or reset (is the server up, --max-connections high enough?)", true, now);
            return;
        }
        on_connected(slot);
        return;
    }
    if ((events & EPOLLOUT) != 0 && pending_out_.contains(slot)) flush(slot);
    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0 && conns_[slot].fd >= 0) on_readable(slot, now);
}

void hold_worker::on_connected(std::uint32_t slot) {
    hold_conn& c = conns_[slot];
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = slot;
    ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
    if (ws_) {
        c.state = static_cast<std::uint8_t>(conn_state::upgrading);
        begin_out();
        append_upgrade(out_, shared_.opt.host, shared_.opt.ws_port, shared_.opt.ws_path, index_of(slot));
        flush(slot);
        return;
    }
    send_login(slot);
}

void hold_worker::send_login(std::uint32_t slot) {
    conns_[slot].state = static_cast<std::uint8_t>(conn_state::logging_in);
    const std::string name = shared_.opt.name_prefix + std::to_string(index_of(slot));
    begin_out();
    frame_at_ = 0;
    append_login(out_, fbb_, shared_.jwt.sign(name, shared_.room_id));
    frame_done();
    flush(slot);
}

void hold_worker::send_join(std::uint32_t slot) {
    conns_[slot].state = static_cast<std::uint8_t>(conn_state::joining);
    begin_out();
    frame_at_ = 0;
    append_join(out_, fbb_, shared_.room_id);
    frame_done();
    flush(slot);
}

void hold_worker::frame_done() {
    if (!ws_) return;
    mask_rng_ ^= mask_rng_ << 13;  // xorshift32: masking keys need no secrecy here
    mask_rng_ ^= mask_rng_ >> 17;
    mask_rng_ ^= mask_rng_ << 5;
    ws_wrap(out_, frame_at_, mask_rng_);
}

void hold_worker::flush(std::uint32_t slot) {
    hold_conn& c = conns_[slot];
    auto it = pending_out_.find(slot);
    if (it != pending_out_.end()) {
        // Bytes wait already: keep the order, write from the backlog.
        it->second.insert(it->second.end(), out_.begin(), out_.end());
        out_.clear();
        const ssize_t n = ::send(c.fd, it->second.data(), it->second.size(), MSG_NOSIGNAL);
        if (n > 0) it->second.erase(it->second.begin(), it->second.begin() + n);
        if (it->second.empty()) {
            pending_out_.erase(it);
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.u32 = slot;
            ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
        }
        return;
    }
    if (out_.empty()) return;
    const ssize_t n = ::send(c.fd, out_.data(), out_.size(), MSG_NOSIGNAL);
    const std::size_t sent = n > 0 ? static_cast<std::size_t>(n) : 0;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return;  // the read side sees the reset
    if (sent == out_.size()) return;
    pending_out_[slot].assign(out_.begin() + static_cast<std::ptrdiff_t>(sent), out_.end());
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.u32 = slot;
    ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void hold_worker::ping_tick(std::int64_t now) {
    if (shared_.quiet.load(std::memory_order_acquire)) {
        next_tick_ns_ = now + stop_poll_ns;  // still wakes for the stop flag
        return;
    }
    while (now >= next_tick_ns_) {
        const std::uint32_t bucket = static_cast<std::uint32_t>(tick_++ % ping_buckets_);
        for (std::size_t s = bucket; s < conns_.size(); s += ping_buckets_) {
            if (static_cast<conn_state>(conns_[s].state) != conn_state::held) continue;
            begin_out();
            frame_at_ = 0;
            append_ping(out_, fbb_, static_cast<std::uint64_t>(now / 1000));
            frame_done();
            flush(static_cast<std::uint32_t>(s));
            out_counters_.pings.add();
        }
        next_tick_ns_ += tick_ns;
    }
}

void hold_worker::schedule(std::uint32_t slot, std::int64_t now, std::int64_t delay_ns) {
    retries_.push_back({now + delay_ns, slot});
}

void hold_worker::run_retries(std::int64_t now) {
    while (!retries_.empty() && retries_.front().due_ns <= now) {
        const std::uint32_t slot = retries_.front().slot;
        retries_.pop_front();
        switch (static_cast<conn_state>(conns_[slot].state)) {
            case conn_state::idle: restarts_.push_back(slot); break;
            case conn_state::logging_in: send_login(slot); break;
            case conn_state::joining: send_join(slot); break;
            default: break;
        }
    }
}

void hold_worker::close_conn(hold_conn& c) {
    if (c.fd >= 0) ::close(c.fd);  // closing removes it from the epoll set
    c.fd = -1;
    std::free(c.carry);
    c.carry = nullptr;
    c.carry_len = c.carry_cap = 0;
}

void hold_worker::fail(std::uint32_t slot, const char* why, bool retryable, std::int64_t now) {
    hold_conn& c = conns_[slot];
    const auto st = static_cast<conn_state>(c.state);
    close_conn(c);
    pending_out_.erase(slot);
    if (st == conn_state::held) {
        if ((c.flags & flag_in_room) != 0) out_counters_.in_room.sub();
        c.flags = static_cast<std::uint8_t>(c.flags & ~flag_in_room);
        if (shared_.opt.reconnect) {
            // A restart: connect, log in (the same account, a fresh JWT) and rejoin again.
            out_counters_.down.add();
            out_counters_.reconnects.add();
            c.tries = 0;
            c.state = static_cast<std::uint8_t>(conn_state::idle);
            schedule(slot, now, retry_ns);
            return;
        }
        out_counters_.dropped.add();
        c.state = static_cast<std::uint8_t>(conn_state::closed);
        shared_.note_error(std::string("a held connection was closed: ") + why);
        return;
    }
    if (st != conn_state::idle && st != conn_state::closed) --in_flight_;
    const std::uint8_t max_tries = shared_.opt.reconnect ? max_reconnect_tries : max_connect_tries;
    if (retryable && c.tries < max_tries) {
        ++c.tries;
        out_counters_.connect_errors.add();
        c.state = static_cast<std::uint8_t>(conn_state::idle);
        schedule(slot, now, retry_ns);
        return;
    }
    c.state = static_cast<std::uint8_t>(conn_state::closed);
    out_counters_.failed.add();
    shared_.note_error(why);
}

void hold_worker::become_held(hold_conn& c, bool in_room) {
    c.state = static_cast<std::uint8_t>(conn_state::held);
    --in_flight_;
    if ((c.flags & flag_was_held) != 0) {
        out_counters_.down.sub();
    } else {
        out_counters_.held.add();
    }
    c.flags = static_cast<std::uint8_t>(flag_was_held | (in_room ? flag_in_room : 0));
    c.tries = 0;
    if (in_room) out_counters_.in_room.add();
}

void hold_worker::count_losses() {
    const std::uint32_t sent = shared_.broadcast_sent.load(std::memory_order_acquire);
    if (sent == 0) return;
    const std::uint64_t all = sent >= 64 ? ~0ull : (1ull << sent) - 1;
    std::uint64_t lost = 0;
    for (const auto& c : conns_) {
        if ((c.flags & flag_in_room) == 0 || static_cast<conn_state>(c.state) != conn_state::held) continue;
        lost += static_cast<std::uint64_t>(__builtin_popcountll(all & ~c.got));
    }
    out_counters_.lost.add(lost);
}

}  // namespace strix::chat::hold
