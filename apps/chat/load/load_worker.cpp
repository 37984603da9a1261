#include "load_worker.hpp"

#include "load_controller.hpp"
#include "load_clock.hpp"

#include "apps/chat/common/chat_frame.hpp"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace strix::chat {
namespace {

constexpr std::int64_t control_period_ns = 20'000'000;
constexpr std::size_t read_buffer_size = 256 * 1024;

// A client's conversations: its group rooms by layer, then its direct pairs.
void add_conversations(load_client& c, const conversation_layout& l) {
    for (std::uint32_t k = 0; k < l.rooms_per_client(); ++k)
        c.convs.emplace_back(l.room_of(k, c.index), false, k, l.room_size());
    for (std::uint32_t e : l.pairs_of(c.index)) {
        const auto [a, b] = l.pair(e);
        c.convs.emplace_back(l.rooms() + e, true, a == c.index ? b : a, 2);
    }
}

}  // namespace

std::string describe(const peer_address& a) {
    if (a.family() == AF_UNIX) return "unix:" + std::string(reinterpret_cast<const sockaddr_un*>(&a.addr)->sun_path);
    const auto* in = reinterpret_cast<const sockaddr_in*>(&a.addr);
    char host[INET_ADDRSTRLEN] = "?";
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
}

load_worker::load_worker(load_shared& shared, std::vector<peer_address> addrs, std::uint32_t id, std::uint32_t workers)
    : shared_(shared),
      box_(shared.boxes[id]),
      addrs_(std::move(addrs)),
      id_(id),
      workers_(workers),
      read_buf_(read_buffer_size),
      text_buf_(shared.text.max_len()),
      fbb_(4096) {
    const load_options& o = shared.opt;
    layout_ = shared.layout.get();
    for (std::uint32_t i = id; i < o.clients; i += workers) {
        if (layout_ != nullptr) {
            clients_.push_back(std::make_unique<load_client>(i, o.rooms, 0));
            add_conversations(*clients_.back(), *layout_);
            // Neighbours alternate: every room and every pair i, i+1 spans the targets.
            clients_.back()->target = static_cast<std::uint32_t>(i % addrs_.size());
            continue;
        }
        clients_.push_back(std::make_unique<load_client>(i, o.rooms, shared.room_members[i % o.rooms]));
        // Member number i / rooms of its room: a room's members are spread over every target.
        clients_.back()->target = static_cast<std::uint32_t>((i / o.rooms) % addrs_.size());
    }
}

load_worker::~load_worker() {
    for (auto& c : clients_) {
        c->tls.reset();
        if (c->fd >= 0) ::close(c->fd);
    }
    if (ep_ >= 0) ::close(ep_);
}

void load_worker::run(load_controller* ctl) {
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) {
        shared_.fail(std::string("epoll_create1: ") + std::strerror(errno));
        return;
    }
    std::vector<epoll_event> events(512);
    connect_start_ = now_ns();
    std::int64_t next_tick = 0;
    std::int64_t woke = 0;
    std::int64_t last_events = 0;
    const std::int64_t spin_ns = static_cast<std::int64_t>(shared_.opt.poll_spin_us) * 1000;
    while (!shared_.stop.load(std::memory_order_acquire)) {
        std::int64_t now = now_ns();
        std::int64_t deadline = control(now);
        deadline = std::min(deadline, send_due(now));
        flush_dirty();
        publish();
        if (ctl != nullptr) {
            if (now >= next_tick) next_tick = ctl->tick(now);
            deadline = std::min(deadline, next_tick);
            if (shared_.stop.load(std::memory_order_acquire)) break;
        }
        // How long the loop was busy since it last woke up: the delay it adds to a receipt at worst.
        const std::int64_t before_wait = now_ns();
        if (woke != 0) {
            const auto busy = static_cast<std::uint64_t>(before_wait - woke);
            now_sink_->busy_ns += busy;
            if (busy > now_sink_->max_turn_ns) now_sink_->max_turn_ns = busy;
        }
        std::int64_t timeout = deadline - before_wait;
        if (spin_ns > 0 && before_wait - last_events < spin_ns) timeout = 0;  // busy-poll
        const int n = wait_events(ep_, events.data(), static_cast<int>(events.size()), timeout);
        woke = now_ns();
        if (n > 0) last_events = woke;
        if (n < 0) {
            if (errno == EINTR) continue;
            shared_.fail(std::string("epoll_wait: ") + std::strerror(errno));
            break;
        }
        for (int i = 0; i < n; ++i) {
            const epoll_event& ev = events[static_cast<std::size_t>(i)];
            on_event(*static_cast<load_client*>(ev.data.ptr), ev.events);
        }
        flush_dirty();
    }
    publish();
    for (auto& c : clients_) {
        c->tls.reset();  // close_notify before the socket goes
        if (c->fd >= 0) {
            ::close(c->fd);
            c->fd = -1;
        }
    }
}

// --- control ------------------------------------------------------------------------------------

std::int64_t load_worker::control(std::int64_t now) {
    std::int64_t deadline = now + control_period_ns;
    const load_phase p = shared_.phase.load(std::memory_order_acquire);
    if (p != phase_) {
        phase_ = p;
        if (p == load_phase::creating || p == load_phase::joining) {
            if (layout_ != nullptr) {
                enter_conversations();
            } else {
                enter_rooms(p);
            }
        }
    }
    if (phase_ == load_phase::directs) {
        const std::uint32_t r = shared_.dm_round.load(std::memory_order_acquire);
        if (r != dm_round_) {
            dm_round_ = r;
            open_directs(r);
        }
    }
    if (!setup_waiting_.empty()) deadline = std::min(deadline, retry_setups(now));
    if (phase_ == load_phase::connecting) {
        connect_some(now);
        if (next_connect_ < clients_.size()) deadline = std::min(deadline, now + 5'000'000);
        if (!login_waiting_.empty()) deadline = std::min(deadline, retry_logins(now));
    }
    if (shared_.opt.reconnect && phase_ == load_phase::running) deadline = std::min(deadline, tick_reconnects(now));
    if (shared_.plan_gen.load(std::memory_order_acquire) != plan_gen_) adopt_plan();
    if (step_active_) {
        if (shared_.finish_request.load(std::memory_order_acquire) == plan_.index + 1) {
            finish_step();
        } else {
            roll_rows(now);
            if (now < plan_.t_measure) {
                deadline = std::min(deadline, plan_.t_measure);
            } else if (row_ + 1 < plan_.intervals) {
                deadline = std::min(deadline, plan_.t_measure + plan_.interval_ns * (row_ + 1));
            }
        }
    }
    return deadline;
}

void load_worker::adopt_plan() {
    {
        std::lock_guard<std::mutex> lock(shared_.plan_mu);
        plan_ = shared_.plan;
        plan_gen_ = shared_.plan_gen.load(std::memory_order_relaxed);
    }
    rows_.assign(plan_.intervals, load_stats{});
    row_ = 0;
    rows_published_ = 0;
    warmup_ = load_stats{};
    step_active_ = true;
    sends_done_ = false;
    k_ = 0;
    const double n = static_cast<double>(clients_.size());
    dt_ns_ = 1e9 / (plan_.rps * n);
    offset_ns_ = dt_ns_ * id_ / workers_;
    next_send_ = plan_.t_send_start + static_cast<std::int64_t>(offset_ns_);
    if (shared_.opt.reconnect_share > 0) plan_drops();
}

void load_worker::roll_rows(std::int64_t now) {
    if (now < plan_.t_measure) {
        now_sink_ = &warmup_;
        return;
    }
    const auto idx = static_cast<std::uint64_t>((now - plan_.t_measure) / plan_.interval_ns);
    row_ = static_cast<std::uint32_t>(std::min<std::uint64_t>(idx, plan_.intervals - 1));
    if (rows_published_ < row_) {
        std::lock_guard<std::mutex> lock(box_.mu);
        while (rows_published_ < row_) box_.rows.push_back(rows_[rows_published_++]);
    }
    now_sink_ = &rows_[row_];
}

void load_worker::finish_step() {
    // A client still on its way back when the drain ended did not make it.
    for (const auto& c : clients_) {
        if (c->reconnecting) ++rows_[plan_.intervals - 1].reconnect_failures;
    }
    std::lock_guard<std::mutex> lock(box_.mu);
    while (rows_published_ < plan_.intervals) box_.rows.push_back(rows_[rows_published_++]);
    box_.warmup = warmup_;
    box_.finished = plan_.index + 1;
    step_active_ = false;
    now_sink_ = &discard_;
}

load_stats& load_worker::sink_for_sent(std::int64_t client_ts) {
    if (!step_active_) return discard_;
    if (client_ts < plan_.t_measure) return warmup_;
    return rows_[row_];
}

void load_worker::publish() {
    box_.connected.store(connected_, std::memory_order_relaxed);
    box_.logged_in.store(logged_in_, std::memory_order_relaxed);
    box_.created.store(created_, std::memory_order_relaxed);
    box_.joined.store(joined_, std::memory_order_relaxed);
    box_.login_retries.store(login_retries_, std::memory_order_relaxed);
    box_.directs_ready.store(directs_ready_, std::memory_order_relaxed);
    box_.setup_retries.store(setup_retries_, std::memory_order_relaxed);
    box_.expected_all.store(expected_all_, std::memory_order_relaxed);
    box_.delivered_all.store(delivered_all_, std::memory_order_relaxed);
    box_.disconnects.store(disconnects_, std::memory_order_relaxed);
    box_.away.store(away_, std::memory_order_relaxed);
    // Release: once the controller sees sends_done it also sees the final expected_all.
    if (sends_done_) box_.sends_done.store(plan_.index + 1, std::memory_order_release);
}

}  // namespace strix::chat
