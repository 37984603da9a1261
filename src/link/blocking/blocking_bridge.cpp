// blocking_bridge: the shard's half of a blocking_socket (the picture is in blocking_bridge.hpp).
#include "link/blocking/blocking_bridge.hpp"

#include "link/socket_core.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>

namespace strix::link::detail {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "a futex word is a plain 32-bit integer");

void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, const timespec* rel) noexcept {
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, rel, nullptr, 0);
}

void futex_wake_all(std::atomic<std::uint32_t>& word) noexcept {
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

blocking_shared::~blocking_shared() {
    const int fd = notify_fd.load(std::memory_order_relaxed);
    if (fd >= 0) ::close(fd);
}

void closing_sockets::add() {
    std::lock_guard lk(mu_);
    ++n_;
}

void closing_sockets::done() {
    std::lock_guard lk(mu_);
    if (--n_ == 0) cv_.notify_all();
}

void closing_sockets::wait_none() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return n_ == 0; });
}

blocking_bridge::blocking_bridge(shard& sh, std::shared_ptr<blocking_shared> st,
                                 std::shared_ptr<closing_sockets> closing)
    : owner_(sh), st_(std::move(st)), closing_(std::move(closing)), linger_timer_([this] {
          // The linger is over with messages still waiting: they are dropped.
          finish(std::chrono::milliseconds(0));
      }) {}

blocking_bridge* blocking_bridge::create(shard& sh, socket_type t, const socket_options& o,
                                         std::shared_ptr<blocking_shared> st,
                                         std::shared_ptr<closing_sockets> closing) {
    auto* b = new blocking_bridge(sh, std::move(st), std::move(closing));
    b->self_ = reactor_object_ptr(b);
    b->sock_ = std::make_unique<socket>(sh, t, o);
    b->sock_->on_message([b](message_view m) { b->on_message(m); });
    b->sock_->on_writable([b] { b->on_writable(); });
    b->sock_->on_event([b](const socket_event& e) { b->on_event(e); });
    return b;
}

void blocking_bridge::drain(std::size_t budget) {
    if (finished_ || draining_) return;
    draining_ = true;
    blocked_ = false;
    msg_pipe& out = st_->out;
    std::size_t n = 0;
    if (st_->conflate.load(std::memory_order_relaxed)) {
        // ZMQ_CONFLATE: of what waits, only the newest goes out.
        while (out.backlog_seen_by_consumer() > 1 && out.front(entries_)) out.pop(entries_);
    }
    while (n < budget && out.front(entries_)) {
        if (send_front() == link_errc::would_block) {
            blocked_ = true;  // the socket calls on_writable once it can go on
            break;
        }
        // Sent, or refused for good (an unroutable ROUTER message: the socket counted it).
        out.pop(entries_);
        ++n;
    }
    draining_ = false;
    owner_.mark_dirty(*this);  // on_flush tells a sender waiting for room
    if (blocked_) return;
    if (n == budget) {
        repost();
        return;
    }
    if (closing_now_) {
        finish(linger_left());
        return;
    }
    // Empty: the application's next send posts a drain. Dekker with its send(): it publishes,
    // fences, reads drain_idle; we store drain_idle, fence, look at the pipe again.
    st_->drain_idle.store(true, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!out.empty() && st_->drain_idle.exchange(false, std::memory_order_acq_rel)) repost();
}

void blocking_bridge::repost() {
    owner_.post_local([self = self_] { static_cast<blocking_bridge*>(self.get())->drain(); });
}

std::error_code blocking_bridge::send_front() {
    views_.clear();
    bool any_ref = false;
    for (auto& e : entries_) {
        views_.push_back(e.bytes);
        any_ref |= e.ref != nullptr;
    }
    socket_core& core = socket_access::core(*sock_);
    if (!any_ref) return core.send_parts(views_);
    if (entries_.size() == 1) return core.send_parts(views_, entries_[0].ref);
    // Parts copied into the pipe have no buffer: the socket copies those and references the rest.
    for (auto& e : entries_) srcs_.push_back(e.ref ? *e.ref : part());
    const std::error_code ec = core.send_parts(views_, srcs_.data());
    srcs_.clear();
    return ec;
}

std::error_code blocking_bridge::send_now(const message& m, bool req) {
    drain(SIZE_MAX);
    // Behind messages that still wait: a REQ whose request has not left is out of turn (as
    // libzmq's REQ is after a send), anything else waits for its turn.
    if (!st_->out.empty()) return req ? link_errc::bad_state : link_errc::would_block;
    return sock_->send(m);
}

void blocking_bridge::resume_receiving() {
    if (finished_ || !paused_) return;
    paused_ = false;
    sock_->pause_receiving(false);
}

void blocking_bridge::set_options(const socket_options& o) {
    sock_->set_options(o);
    st_->follow(o);
    // A larger receive bound ends a pause taken for the old one (unless the application's
    // resume_receiving is on its way: it cleared in_paused first).
    if (paused_ && !st_->in.backlog_at_least(st_->in_cap.load(std::memory_order_relaxed)) &&
        st_->in_paused.exchange(false, std::memory_order_acq_rel)) {
        paused_ = false;
        sock_->pause_receiving(false);
    }
}

void blocking_bridge::on_message(message_view m) {
    if (closing_now_) return;  // nobody reads any more
    msg_pipe& in = st_->in;
    // The connection's properties travel when they change, not with every message (msg_pipe.hpp).
    if (const message_properties_ptr& p = m.properties(); p.get() != last_props_.get()) {
        last_props_ = p;
        in.put_properties(p);
    }
    if (m.size() == 0) in.put_empty();
    for (std::size_t i = 0; i < m.size(); ++i) {
        const bool more = i + 1 < m.size();
        const bytes_view b = m[i];
        if (b.size() <= msg_pipe::inline_max)
            in.put(b, more);
        else
            in.put(part::copy(b), more);  // the view lives only during this call
    }
    in.end_message();
    if (!pushed_) {
        pushed_ = true;
        owner_.mark_dirty(*this);  // published, and the reader woken, once per turn
    }
    if (!paused_ && in.backlog_at_least(st_->in_cap.load(std::memory_order_relaxed))) {
        paused_ = true;
        sock_->pause_receiving(true);
        st_->in_paused.store(true, std::memory_order_release);
    }
}

void blocking_bridge::on_writable() {
    st_->writable.fetch_add(1, std::memory_order_relaxed);
    owner_.mark_dirty(*this);
    // From the loop, not from inside the socket's callback: the drain may end the socket.
    if (blocked_) repost();
}

void blocking_bridge::on_event(const socket_event& e) {
    {
        std::lock_guard lk(st_->mu);
        st_->events.push_back(e);
        if (st_->events.size() > 1000) st_->events.pop_front();
    }
    st_->event_seq.fetch_add(1, std::memory_order_release);
    owner_.mark_dirty(*this);
    if (event_hook_) event_hook_(e);
}

void blocking_bridge::on_flush() {
    if (sock_) st_->peers.store(sock_->peers(), std::memory_order_release);
    if (pushed_) {
        pushed_ = false;
        st_->in.publish();
    }
    // Dekker with the application's sleep: it stores `waiting`, fences, checks its condition.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    notify();
    bool wake = false;
    switch (st_->waiting.load(std::memory_order_relaxed)) {
        case app_wait::none: break;
        case app_wait::recv: wake = st_->in.backlog() > 0; break;
        case app_wait::space: {
            // Not for every message taken: once half the room is back, or when the drainer stops.
            const std::uint64_t left = st_->out.backlog_seen_by_consumer();
            const std::uint64_t limit = st_->out_limit.load(std::memory_order_relaxed);
            wake = left < limit && (left <= limit / 2 || blocked_ || finished_);
            break;
        }
        case app_wait::any: wake = true; break;
    }
    if (!wake) return;
    st_->wake_seq.fetch_add(1, std::memory_order_release);
    futex_wake_all(st_->wake_seq);
}

// Dekker with clear_notify: it clears notify_set, fences, then looks at the pipes; we published
// and fenced before this.
void blocking_bridge::notify() noexcept {
    const int fd = st_->notify_fd.load(std::memory_order_acquire);
    if (fd < 0 || st_->notify_set.load(std::memory_order_relaxed) ||
        st_->notify_set.exchange(true, std::memory_order_acq_rel))
        return;
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(fd, &one, sizeof one);
}

void blocking_bridge::close() {
    if (closing_now_) return;
    closing_now_ = true;
    closing_->add();  // done when the socket is gone (finish hands that on)
    // Messages arriving from now on are dropped: nothing may hold the peers back.
    if (paused_) {
        paused_ = false;
        sock_->pause_receiving(false);
    }
    const auto linger = sock_->options().linger;
    if (linger.count() == 0) {
        finish(linger);
        return;
    }
    if (linger.count() > 0) {
        deadline_ = std::chrono::steady_clock::now() + linger;
        owner_.timers().schedule(linger_timer_, owner_.ticks_for(linger));
    }
    exit_hook_ = owner_.on_exit([this] {
        exit_hook_ = 0;
        finish(std::chrono::milliseconds(0));
    });
    drain();  // finishes when `out` empties
}

std::chrono::milliseconds blocking_bridge::linger_left() const {
    const auto linger = sock_->options().linger;
    if (linger.count() < 0) return linger;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
    return std::max(left, std::chrono::milliseconds(1));
}

void blocking_bridge::finish(std::chrono::milliseconds linger) {
    if (finished_) return;
    finished_ = true;
    if (linger_timer_.armed()) owner_.timers().cancel(linger_timer_);
    if (exit_hook_) owner_.remove_hook(exit_hook_);
    exit_hook_ = 0;
    // The socket's own queues linger for what is left of the time; the context hears when the
    // socket is gone.
    socket_access::close(*sock_, linger, [c = closing_] { c->done(); });
    sock_.reset();
    on_flush();  // a sender waiting for room hears that nothing more will be taken
    owner_.retire(std::move(self_));
}

}  // namespace strix::link::detail
