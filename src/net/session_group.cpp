#include <strix/net/session_group.hpp>

#include <atomic>
#include <strix/core/engine.hpp>

#include <strix/core/buffer_cache.hpp>

#include "net/listener.hpp"
#include "net/tls/tls_stream.hpp"
#include "net/socket_util.hpp"

#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>
#include <strix/mem/slab_pool.hpp>
#include <strix/net/net_errc.hpp>

#include <boost/unordered/unordered_flat_map.hpp>

#include <malloc.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bit>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace strix {
namespace {

constexpr std::chrono::milliseconds sweep_period{1000};
constexpr std::size_t trim_after_released = 1024 * 1024;
// malloc_trim walks the whole heap, every arena (a million sessions' objects): at most this often
// in the process, whichever group or shard asks, so 54 shards do not take turns pausing on it.
constexpr std::chrono::seconds trim_period{10};

// Claims the process's next malloc_trim: true for one caller per trim_period.
bool claim_trim() noexcept {
    static std::atomic<std::int64_t> next_ns{0};
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    std::int64_t due = next_ns.load(std::memory_order_relaxed);
    if (now < due) return false;
    return next_ns.compare_exchange_strong(due, now + std::chrono::nanoseconds(trim_period).count(),
                                           std::memory_order_relaxed);
}

session_limits normalized(session_limits l) {
    // The ring must hold a whole frame, and its capacity is a power of two.
    l.recv_buffer = std::bit_ceil(std::max<std::size_t>({l.recv_buffer, l.max_frame, 4096}));
    if (l.low_water > l.high_water) l.low_water = l.high_water;
    return l;
}

}  // namespace

struct session_group::impl {
    explicit impl(std::size_t ring_size)
        : rx_pool(ring_size, static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)), 16) {
    }  // page-aligned: see give_rx_buffer

    detail::tls_gate tls_gate;         // TLS handshakes in progress (first: outlives the sessions)
    slab_pool rx_pool;                 // carves new receive rings; never given one back
    std::vector<std::byte*> free_rx;   // rings not in use (idle ones with their pages returned)
    boost::unordered_flat_map<std::uint64_t, session_ptr> sessions;
    boost::unordered_flat_map<std::uint64_t, connection_ptr> connections;
    boost::unordered_flat_map<std::uint64_t, large_frame> large_frames;
    std::vector<intrusive_ptr<detail::listener>> listeners;
    timer_node sweep;                  // trims idle sessions' buffers once a second
    shard::hook_id stop_hook = 0, exit_hook = 0;
    bool hooks_installed = false;
};

session_group::session_group(shard& sh, session_handler& handler, session_group_config cfg)
    : owner_(sh),
      handler_(handler),
      limits_(normalized(cfg.limits)),
      framer_(cfg.framing ? cfg.framing : &length_prefix_framer()),
      admit_(cfg.admit),
      tls_(std::move(cfg.tls)),
      keepalive_(cfg.keepalive),
      frame_ticks_(sh.ticks_for(limits_.frame_timeout)),
      impl_(std::make_unique<impl>(limits_.recv_buffer)) {
    impl_->sweep.set_callback([this] { sweep(); });
}

// Once a second: the sessions on the sweep list that have been quiet for a second give back
// their receive ring, trimmed send chain and stream buffers, and leave the list; the others stay.
// Also samples the output queued (every session with output queued is on the list).
void session_group::sweep() {
    const auto period = owner_.ticks_for(sweep_period);
    std::size_t trimmed = 0, queued_bytes = 0, queues = 0;
    const std::size_t looked = sweep_list_.size();
    for (std::size_t i = 0; i < sweep_list_.size();) {
        auto it = impl_->sessions.find(sweep_list_[i]);
        session* s = it == impl_->sessions.end() ? nullptr : it->second.get();
        const auto r = s ? s->trim_if_idle(period) : session::sweep_result{false, true};
        trimmed += r.freed ? 1 : 0;
        if (!r.settled) {
            const std::size_t q = s->queued_bytes();
            queued_bytes += q;
            queues += q ? 1 : 0;
            ++i;
            continue;
        }
        if (s) s->life_.sweep_listed = false;
        sweep_list_[i] = sweep_list_.back();
        sweep_list_.pop_back();
    }
    if (sweep_list_.capacity() > 64 && sweep_list_.size() < sweep_list_.capacity() / 4) sweep_list_.shrink_to_fit();
    bump(counters_.sweep_looked, looked);
    set_gauge(counters_.sweep_listed, sweep_list_.size());
    set_gauge(counters_.send_queued_bytes, queued_bytes);
    set_gauge(counters_.send_queues_in_use, queues);
    counters_.send_queues_peak.raise_to(queues);
    if (trimmed)
        log(log_level::debug, "shard {}: idle sweep trimmed {} of {} sessions ({} open)", owner_.id(), trimmed, looked,
            impl_->sessions.size());
    // Blocks of 4 KiB and more (send chunks, closed sessions' queued output) go back through
    // buffer_cache, which returns to malloc what nobody drew from for a second; malloc keeps
    // their pages. Once megabytes were returned, ask it to hand free pages to the kernel. That
    // call walks the whole heap, which at a million sessions is a pause: at most once every
    // trim_period in the process (claim_trim), timed on /metrics. Receive rings bypass malloc (madvise in
    // give_rx_buffer), and idle sessions' small chunks are reused by malloc's own caches.
    released_bytes_ += buffer_cache::release_unused();
    if (released_bytes_ >= trim_after_released && claim_trim()) {
        const auto t0 = std::chrono::steady_clock::now();
        ::malloc_trim(0);
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
        bump(counters_.malloc_trims);
        bump(counters_.malloc_trim_us, static_cast<std::uint64_t>(us.count()));
        released_bytes_ = 0;
    }
    owner_.timers().schedule(impl_->sweep, period);
}

session_group::~session_group() {
    STRIX_ASSERT_OWNER(owner_, "session_group::~session_group");
    abort_all(net_errc::shutdown);
    owner_.timers().cancel(impl_->sweep);
    if (impl_->hooks_installed) {
        owner_.remove_hook(impl_->stop_hook);
        owner_.remove_hook(impl_->exit_hook);
    }
}

// Stop and exit hooks, and the idle sweep, start with the group's first listener, connection or
// session (on the shard, or on the owning thread before the shard runs).
void session_group::install_hooks() {
    if (impl_->hooks_installed) return;
    impl_->hooks_installed = true;
    // Shard k of n sweeps at k / n of the second, each on its own period after that: sweeps
    // started together (each shard's group installs at its first listener) ran as one convoy
    // every second, every shard's list in turn (docs/architecture.md, "Idle sweep").
    const auto period = owner_.ticks_for(sweep_period);
    owner_.timers().schedule(impl_->sweep, period + period * owner_.id() / owner_.shard_count());
    impl_->stop_hook = owner_.on_stop([this] { close_all(net_errc::shutdown); });
    impl_->exit_hook = owner_.on_exit([this] { abort_all(net_errc::shutdown); });
}

endpoint session_group::listen(const endpoint& ep, int backlog) {
    STRIX_ASSERT_OWNER(owner_, "session_group::listen");
    unique_fd fd = detail::listen_on(ep, backlog, false);
    // Before the shard runs this is another thread: the descriptor must reach the shard's table.
    if (!owner_.running()) owner_.owner().note_shard_fd(owner_.id(), fd.get());
    endpoint bound = detail::bound_endpoint(fd.get(), ep);
    std::string unlink_path;
    if (ep.kind == endpoint::transport::unix_socket && !ep.path.empty() && ep.path[0] != '@') unlink_path = ep.path;
    install_hooks();
    auto l = make_intrusive<detail::listener>(
        *this, std::move(fd), [this](unique_fd s, std::string peer) { adopt(std::move(s), std::move(peer)); },
        std::move(unlink_path));
    l->start();
    impl_->listeners.push_back(std::move(l));
    return bound;
}

void session_group::add_listener(unique_fd fd, accept_fn on_accept) {
    STRIX_ASSERT_OWNER(owner_, "session_group::add_listener");
    install_hooks();
    if (!on_accept) on_accept = [this](unique_fd s, std::string peer) { adopt(std::move(s), std::move(peer)); };
    auto l = make_intrusive<detail::listener>(*this, std::move(fd), std::move(on_accept));
    l->start();
    impl_->listeners.push_back(std::move(l));
}

connection_ptr session_group::connect(const endpoint& ep, const connect_options& opts) {
    STRIX_ASSERT_OWNER(owner_, "session_group::connect");
    if (ep.kind == endpoint::transport::tcp && (ep.host == "*" || ep.port == 0))
        throw std::invalid_argument("cannot connect to " + ep.to_string() + ": name a host and a port");
    install_hooks();
    connection_ptr c(new connection(*this, ep, opts));
    impl_->connections.emplace(c->id_, c);
    // The first attempt runs from the shard's task queue, so the handler never hears of a
    // failure from inside connect().
    owner_.post_local([c] { c->attempt(); });
    return c;
}

void session_group::adopt(unique_fd fd, std::string peer) {
    STRIX_ASSERT_OWNER(owner_, "session_group::adopt");
    if (owner_.stopping()) return;  // fd closes here
    if (admit_) {
        const auto verdict = admit_->try_admit(peer);
        if (verdict != admission::verdict::admitted) {
            const bool total = verdict == admission::verdict::over_total;
            bump(total ? counters_.refused_max_sessions : counters_.refused_per_address);
            log_limited(log_level::warn, "shard {}: refusing {}: {}", owner_.id(), peer,
                        total ? "max_sessions reached" : "max_sessions_per_address reached");
            // A reset, not a FIN: the refused connection leaves no TIME_WAIT state here.
            ::linger lg{1, 0};
            ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            return;  // fd closes here
        }
    }
    make_session(std::move(fd), std::move(peer), nullptr, admit_ != nullptr);
}

session& session_group::make_session(unique_fd fd, std::string peer, connection* origin, bool admitted) {
    install_hooks();
    const std::uint64_t id = owner_.next_object_id();
    detail::set_keepalive(fd.get(), origin ? origin->opts_.keepalive : keepalive_);
    session_ptr s(new session(*this, std::move(fd), id, std::move(peer), intrusive_ptr<connection>(origin)));
    s->life_.admitted = admitted;  // before start(): on_open may close it, and the close releases it
    impl_->sessions.emplace(id, s);
    bump(counters_.accepted);
    bump(counters_.active);
    s->start();
    return *s;
}

session_group::large_frame& session_group::large_frame_of(std::uint64_t session_id) {
    return impl_->large_frames[session_id];
}

void session_group::drop_large_frame(std::uint64_t session_id) noexcept { impl_->large_frames.erase(session_id); }

void session_group::forget(session& s) noexcept {
    if (impl_->sessions.erase(s.id())) {
        if (s.life_.admitted) admit_->release(s.peer());
        bump(counters_.closed);
        counters_.active.sub();
    }
}

detail::tls_gate& session_group::tls_gate() { return impl_->tls_gate; }

void session_group::forget(connection& c) noexcept { impl_->connections.erase(c.id_); }

void session_group::stop_listening() {
    STRIX_ASSERT_OWNER(owner_, "session_group::stop_listening");
    for (auto& l : impl_->listeners) l->close();
    impl_->listeners.clear();
}

void session_group::close_all(std::error_code reason) {
    STRIX_ASSERT_OWNER(owner_, "session_group::close_all");
    stop_listening();
    // Copies: closing erases from the maps.
    std::vector<connection_ptr> conns;
    for (auto& [id, c] : impl_->connections) conns.push_back(c);
    for (auto& c : conns) c->close();
    std::vector<session_ptr> open;
    open.reserve(impl_->sessions.size());
    for (auto& [id, s] : impl_->sessions) open.push_back(s);
    for (auto& s : open) s->close(reason);
}

void session_group::abort_all(std::error_code reason) {
    STRIX_ASSERT_OWNER(owner_, "session_group::abort_all");
    for (auto& l : impl_->listeners) l->close();
    impl_->listeners.clear();
    std::vector<connection_ptr> conns;
    for (auto& [id, c] : impl_->connections) conns.push_back(c);
    for (auto& c : conns) c->close();
    std::vector<session_ptr> left;
    for (auto& [id, s] : impl_->sessions) left.push_back(s);
    for (auto& s : left) s->abort(reason);
    impl_->connections.clear();
}

std::size_t session_group::size() const noexcept { return impl_->sessions.size(); }

void session_group::for_each(const std::function<void(session&)>& f) const {
    for (auto& [id, s] : impl_->sessions) f(*s);
}

std::byte* session_group::take_rx_buffer() {
    std::byte* p;
    if (!impl_->free_rx.empty()) {
        p = impl_->free_rx.back();
        impl_->free_rx.pop_back();
    } else {
        p = static_cast<std::byte*>(impl_->rx_pool.allocate());
    }
    if (p) {
        counters_.recv_buffers_in_use.add();
        counters_.recv_buffers_peak.raise_to(counters_.recv_buffers_in_use.value());
        bump(counters_.recv_buffer_takes);
    }
    return p;
}

void session_group::give_rx_buffer(std::byte* p, bool cold) noexcept {
    if (cold) {
        // An idle session's ring: hand its pages back to the kernel (the pool keeps the address
        // range and the memory reads as zeros when reused), so idle connections cost no RSS.
        const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
        auto begin = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
        auto end = (reinterpret_cast<std::uintptr_t>(p) + limits_.recv_buffer) & ~(page - 1);
        if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
    }
    // Kept beside the pool, not in its intrusive free list: linking a slot writes into it and
    // would fault back in the page just returned.
    impl_->free_rx.push_back(p);
    counters_.recv_buffers_in_use.sub();
    bump(counters_.recv_buffer_returns);
}

}  // namespace strix
