#include "net/net_shard.hpp"

#include "net/listener.hpp"

#include <strix/core/log.hpp>

#include <strix/net/net_errc.hpp>

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bit>

namespace strix::detail {
namespace {

constexpr std::chrono::milliseconds sweep_period{1000};

session_limits normalized(session_limits l) {
    // The ring must hold a whole frame, and its capacity is a power of two.
    l.recv_buffer = std::bit_ceil(std::max<std::size_t>({l.recv_buffer, l.max_frame, 4096}));
    if (l.low_water > l.high_water) l.low_water = l.high_water;
    return l;
}

}  // namespace

net_shard::net_shard(shard& s, const session_limits& lim, frame_format fmt,
                     std::unique_ptr<session_handler> h, std::vector<net_shard*>& all)
    : owner(s),
      limits(normalized(lim)),
      format(fmt),
      handler(std::move(h)),
      peers(all),
      rx_pool_(limits.recv_buffer, static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)), 16) {  // page-aligned: see give_rx_buffer
    sweep_.on_fire = &net_shard::on_sweep;
    sweep_.ctx = this;
}

void net_shard::on_sweep(timer_node& t) {
    auto& self = *static_cast<net_shard*>(t.ctx);
    auto period = self.owner.ticks_for(sweep_period);
    std::size_t trimmed = 0;
    for (auto& [id, s] : self.sessions_) trimmed += s->trim_if_idle(period) ? 1 : 0;
    if (trimmed) log(log_level::debug, "shard %u: idle sweep trimmed %zu of %zu sessions", self.owner.id(), trimmed, self.sessions_.size());
    // Trimmed send chains went back to malloc, which keeps their pages; after a large sweep, ask
    // it to return free pages to the kernel. Cold path: at most once a second, only when many
    // sessions just went idle.
    if (trimmed >= 256) ::malloc_trim(0);
    self.owner.timers().schedule(t, period);
}

net_shard::~net_shard() {
    // Sessions still registered (engine never started, or torn down early) close their fds.
    sessions_.clear();
}

void net_shard::adopt(int fd, std::string peer) {
    if (owner.stopping()) {
        ::close(fd);
        return;
    }
    std::uint64_t id = (static_cast<std::uint64_t>(owner.id()) << 48) | next_id_++;
    session_ptr s(new session(*this, fd, id, std::move(peer)));
    sessions_.emplace(id, s);
    bump(counters.accepted);
    bump(counters.active);
    s->start();
}

void net_shard::forget(session& s) {
    if (sessions_.erase(s.id())) {
        bump(counters.closed);
        counters.active.store(counters.active.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    }
}

void net_shard::add_listener(intrusive_ptr<listener> l) {
    l->start();
    listeners_.push_back(std::move(l));
}

void net_shard::install_hooks() {
    if (hooks_installed_) return;
    hooks_installed_ = true;
    owner.timers().schedule(sweep_, owner.ticks_for(sweep_period));
    owner.on_stop([this] {
        owner.timers().cancel(sweep_);
        for (auto& l : listeners_) l->close();
        // Copy: closing erases from the map.
        std::vector<session_ptr> open;
        open.reserve(sessions_.size());
        for (auto& [id, s] : sessions_) open.push_back(s);
        for (auto& s : open) s->close(net_errc::shutdown);
    });
    owner.on_exit([this] {
        owner.timers().cancel(sweep_);
        std::vector<session_ptr> left;
        for (auto& [id, s] : sessions_) left.push_back(s);
        for (auto& s : left) s->abort(net_errc::shutdown);
        for (auto& l : listeners_) l->close();
        listeners_.clear();
    });
}

std::byte* net_shard::take_rx_buffer() {
    std::byte* p;
    if (!free_rx_.empty()) {
        p = free_rx_.back();
        free_rx_.pop_back();
    } else {
        p = static_cast<std::byte*>(rx_pool_.allocate());
    }
    if (p) {
        auto in_use = counters.recv_buffers_in_use.load(std::memory_order_relaxed) + 1;
        counters.recv_buffers_in_use.store(in_use, std::memory_order_relaxed);
        if (in_use > counters.recv_buffers_peak.load(std::memory_order_relaxed))
            counters.recv_buffers_peak.store(in_use, std::memory_order_relaxed);
        bump(counters.recv_buffer_takes);
    }
    return p;
}

void net_shard::give_rx_buffer(std::byte* p, bool cold) noexcept {
    if (cold) {
        // An idle session's ring: hand its pages back to the kernel (the pool keeps the address
        // range and the memory reads as zeros when reused), so idle connections cost no RSS.
        const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
        auto begin = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
        auto end = (reinterpret_cast<std::uintptr_t>(p) + limits.recv_buffer) & ~(page - 1);
        if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
    }
    // Kept beside the pool, not in its intrusive free list: linking a slot writes into it and
    // would fault back in the page just returned.
    free_rx_.push_back(p);
    counters.recv_buffers_in_use.store(counters.recv_buffers_in_use.load(std::memory_order_relaxed) - 1,
                                       std::memory_order_relaxed);
    bump(counters.recv_buffer_returns);
}

}  // namespace strix::detail
