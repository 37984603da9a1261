#include <strix/core/engine.hpp>
#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>

#include "core/backend/poller.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <sys/syscall.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace strix {
namespace {

thread_local shard* t_current = nullptr;
constexpr int max_events_per_wait = 256;
constexpr std::size_t max_tasks_per_channel_per_turn = 1024;
constexpr int stopping_poll_ms = 10;
// The longest sleep while timers are armed (ticks): next_timeout sleeps until the next one due.
constexpr std::uint64_t max_sleep_ticks = 6000;

}  // namespace

// The eventfd another thread writes to wake this shard out of epoll_wait.
class shard::doorbell final : public reactor_object {
public:
    doorbell(shard& s, int fd) : shard_(s), fd_(fd) {}
    void on_io(std::uint32_t) override {
        // One read empties a (non-semaphore) eventfd: it returns the whole count and resets it.
        // Reading until EAGAIN cost a second, always failing, system call per wakeup.
        std::uint64_t v;
        [[maybe_unused]] auto n = ::read(fd_, &v, sizeof v);
        bump(shard_.stats_.wakeups);
    }

private:
    shard& shard_;
    int fd_;
};

shard::shard(engine& e, unsigned id, std::chrono::milliseconds tick)
    : engine_(e),
      id_(id),
      tick_(tick),
      poller_(make_poller(e.config().io, e.shards_per_cpu())),
      events_(max_events_per_wait),
      epoch_(std::chrono::steady_clock::now()),
      overflow_(e.shard_count()),
      external_(e.config().external_capacity),
      inbound_mask_(std::make_unique<std::atomic<std::uint64_t>[]>((e.shard_count() + 63) / 64)),
      carry_((e.shard_count() + 63) / 64),
      spin_(e.config().poll_spin) {
    bell_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (bell_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
    bell_ = make_intrusive<doorbell>(*this, bell_fd_);
    if (auto ec = poller_->add(bell_fd_, io_events::readable, bell_.get()))
        throw std::system_error(ec, "registering the shard doorbell");
}

// The backend for this shard: io_uring when asked (by the config or STRIX_IO) and the kernel
// allows it, else epoll. A refusal is logged once per process.
std::unique_ptr<detail::poller> shard::make_poller(io_backend want, unsigned share) {
    if (want == io_backend::automatic) {
        const char* env = std::getenv("STRIX_IO");
        if (env && std::strcmp(env, "uring") == 0)
            want = io_backend::uring;
        else if (env && std::strcmp(env, "epoll") == 0)
            want = io_backend::epoll;
        else
            want = default_backend;
    }
    if (want == io_backend::uring) {
        std::string why;
        if (auto p = detail::make_uring_poller(why, share)) return p;
        static std::atomic<bool> told{false};
        if (!told.exchange(true)) log(log_level::warn, "io_uring unavailable ({}); using epoll", why);
    }
    return detail::make_epoll_poller();
}

const char* shard::io_name() const noexcept { return poller_->name(); }

namespace detail {
poller& backend_of(shard& s) noexcept {
    STRIX_ASSERT_OWNER(s, "the shard's I/O backend");
    return *s.poller_;
}
}  // namespace detail

shard::~shard() {
    if (bell_fd_ >= 0) ::close(bell_fd_);
}

unsigned shard::shard_count() const noexcept { return engine_.shard_count(); }
shard* shard::current() noexcept { return t_current; }

namespace detail {
void wrong_thread(const shard& owner, const char* what) noexcept {
    char caller[64];
    if (shard* cur = shard::current())
        std::snprintf(caller, sizeof caller, "shard %u", cur->id());
    else
        std::snprintf(caller, sizeof caller, "thread %ld (not a shard)", static_cast<long>(::syscall(SYS_gettid)));
    std::fprintf(stderr, "strix: %s called on %s, but the object belongs to shard %u\n", what, caller, owner.id());
    std::fflush(stderr);
    std::abort();
}
}  // namespace detail

std::error_code shard::add_fd(int fd, std::uint32_t events, reactor_object* target) {
    STRIX_ASSERT_OWNER(*this, "shard::add_fd");
    return poller_->add(fd, events, target);
}
std::error_code shard::modify_fd(int fd, std::uint32_t events, reactor_object* target) {
    STRIX_ASSERT_OWNER(*this, "shard::modify_fd");
    return poller_->modify(fd, events, target);
}
std::error_code shard::remove_fd(int fd) {
    STRIX_ASSERT_OWNER(*this, "shard::remove_fd");
    return poller_->remove(fd);
}

void shard::retire(reactor_object_ptr obj) {
    STRIX_ASSERT_OWNER(*this, "shard::retire");
    graveyard_.push_back(std::move(obj));
}

void shard::post_local(task t) {
    STRIX_ASSERT_OWNER(*this, "shard::post_local");
    local_.push_back(std::move(t));
}

void shard::post_after_turn(task t) {
    STRIX_ASSERT_OWNER(*this, "shard::post_after_turn");
    after_turn_.push_back(std::move(t));
}

void shard::post_to(unsigned target, task t) {
    STRIX_ASSERT_OWNER(*this, "shard::post_to");
    if (target == id_) {
        post_local(std::move(t));
        return;
    }
    auto& pending = overflow_[target];
    // Once a channel overflowed, later tasks queue behind the overflow to keep FIFO order.
    if (pending.empty() && engine_.channel(id_, target).try_push(std::move(t))) {
        engine_.at(target).mark_inbound(id_);
        return;
    }
    pending.push_back(std::move(t));
    ++overflow_count_;
    bump(stats_.mesh_overflows);
}

void shard::post_external(task t) {
    while (!external_.try_push(std::move(t))) std::this_thread::yield();
    ring();
}

shard::hook_id shard::on_stop(task t) {
    STRIX_ASSERT_OWNER(*this, "shard::on_stop");
    stop_hooks_.emplace_back(++next_hook_, std::move(t));
    return next_hook_;
}

shard::hook_id shard::on_exit(task t) {
    STRIX_ASSERT_OWNER(*this, "shard::on_exit");
    exit_hooks_.emplace_back(++next_hook_, std::move(t));
    return next_hook_;
}

void shard::remove_hook(hook_id id) noexcept {
    STRIX_ASSERT_OWNER(*this, "shard::remove_hook");
    for (auto* hooks : {&stop_hooks_, &exit_hooks_})
        for (auto& [hid, t] : *hooks)
            if (hid == id) t.reset();
}

// Hooks may register more hooks, remove others or post tasks: run them by index, skipping the
// removed ones.
void shard::run_hooks(std::vector<std::pair<hook_id, task>>& hooks) {
    for (std::size_t i = 0; i < hooks.size(); ++i) {
        task t = std::move(hooks[i].second);
        if (t) t();
    }
    hooks.clear();
}

std::uint64_t shard::ticks_for(std::chrono::milliseconds d) const noexcept {
    if (d.count() <= 0) return 0;
    return static_cast<std::uint64_t>((d.count() + tick_.count() - 1) / tick_.count());
}

// Wake-up protocol (Dekker style, both sides fence):
//   receiver: sleeping_ = true; fence; if (work visible) don't block; else epoll_wait
//   sender:   push task;        fence; if (sleeping_) write the eventfd
// Either the receiver sees the task or the sender sees sleeping_, so no wake-up is lost, and a
// busy receiver (sleeping_ false) costs senders no system call at all.
namespace {
// The sender's half after its fence: write the eventfd if the receiver may be asleep.
void wake_if_sleeping(const std::atomic<bool>& sleeping, int bell_fd) noexcept {
    if (sleeping.load(std::memory_order_relaxed)) {
        std::uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(bell_fd, &one, sizeof one);
    }
}
}  // namespace

void shard::ring() noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    wake_if_sleeping(sleeping_, bell_fd_);
}

// After a push from shard `from`, its bit in the mask, then the wake-up. The receiver takes the
// mask (exchange to 0) and fences before it drains. A sender that finds its bit still set skips
// the write: either the receiver has not taken the mask yet, and will drain this task with the
// earlier ones, or it took it after the sender's fence, and then its drain (after its own fence)
// sees the push. A bit that was clear is set, and fenced, before sleeping_ is read, so the Dekker
// pair above holds with the mask in place of the channel. A bit found set needs no second fence:
// the first already orders the push before the read of sleeping_.
void shard::mark_inbound(unsigned from) noexcept {
    auto& word = inbound_mask_[from / 64];
    const std::uint64_t bit = std::uint64_t{1} << (from % 64);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if ((word.load(std::memory_order_relaxed) & bit) == 0) {
        word.fetch_or(bit, std::memory_order_seq_cst);
        std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    wake_if_sleeping(sleeping_, bell_fd_);
}

void shard::request_stop() noexcept {
    stop_requested_.store(true, std::memory_order_release);
    ring();
}

bool shard::inbound_pending() const noexcept {
    const std::size_t words = carry_.size();
    for (std::size_t w = 0; w < words; ++w)
        if (carry_[w] != 0 || inbound_mask_[w].load(std::memory_order_relaxed) != 0) return true;
    return !external_.empty_approx();
}

std::size_t shard::drain_inbound() {
    std::size_t total = 0;
    auto run = [](task&& t) { t(); };
    const std::size_t words = carry_.size();
    for (std::size_t w = 0; w < words; ++w) {
        std::uint64_t bits = carry_[w];
        if (inbound_mask_[w].load(std::memory_order_relaxed) != 0)
            bits |= inbound_mask_[w].exchange(0, std::memory_order_seq_cst);
        carry_[w] = 0;
        if (bits == 0) continue;
        std::atomic_thread_fence(std::memory_order_seq_cst);  // see mark_inbound
        while (bits != 0) {
            const unsigned b = static_cast<unsigned>(std::countr_zero(bits));
            bits &= bits - 1;
            const unsigned from = static_cast<unsigned>(w * 64 + b);
            auto& ch = engine_.channel(from, id_);
            const std::size_t n = ch.pop_batch(run, max_tasks_per_channel_per_turn);
            total += n;
            // The batch limit left tasks behind: this source again next turn, bit or not.
            if (n == max_tasks_per_channel_per_turn && !ch.empty_approx()) carry_[w] |= std::uint64_t{1} << b;
        }
    }
    bump(stats_.tasks_mesh_in, total);
    std::size_t ext = external_.pop_batch(run, max_tasks_per_channel_per_turn);
    bump(stats_.tasks_external_in, ext);
    return total + ext;
}

void shard::flush_overflow() {
    if (overflow_count_ == 0) return;
    for (unsigned target = 0; target < overflow_.size(); ++target) {
        auto& pending = overflow_[target];
        if (pending.empty()) continue;
        auto& ch = engine_.channel(id_, target);
        std::size_t moved = 0;
        while (!pending.empty() && ch.try_push(std::move(pending.front()))) {
            pending.pop_front();
            ++moved;
        }
        overflow_count_ -= moved;
        if (moved) engine_.at(target).mark_inbound(id_);
    }
}

bool shard::overflow_only_to_exited() const noexcept {
    if (overflow_count_ == 0) return true;
    for (unsigned target = 0; target < overflow_.size(); ++target)
        if (!overflow_[target].empty() && !engine_.has_exited(target)) return false;
    return true;
}

void shard::advance_clock() {
    auto elapsed = std::chrono::steady_clock::now() - epoch_;
    auto ticks = static_cast<std::uint64_t>(elapsed / tick_);
    if (ticks > wheel_.now()) bump(stats_.timers_fired, wheel_.advance_to(ticks));
}

int shard::next_timeout() const noexcept {
    if (!local_.empty() || !dirty_.empty() || !after_turn_.empty()) return 0;
    int timeout = -1;
    if (!wheel_.empty()) {
        // Sleep until the wheel has work, not tick by tick: 54 idle shards woke 8,200 times a
        // second (8 % of a CPU) for ticks with nothing due. At most a minute at a time.
        const std::uint64_t ahead = std::min<std::uint64_t>(wheel_.next_due() - wheel_.now(), max_sleep_ticks);
        auto next = epoch_ + tick_ * static_cast<std::int64_t>(wheel_.now() + ahead);
        auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - std::chrono::steady_clock::now()).count();
        timeout = ms < 0 ? 0 : static_cast<int>(ms);
    }
    if (stopping_ && (timeout < 0 || timeout > stopping_poll_ms)) timeout = stopping_poll_ms;
    // Tasks waiting for room in a full channel: try again in a millisecond rather than spin. The
    // receiver needs the CPU to make the room, and with more shards than CPUs the spinning ones
    // took it: 100,000 sessions over 54 shards on one CPU took 12-21 s to stop.
    if (overflow_count_ && (timeout < 0 || timeout > 1)) timeout = 1;
    return timeout;
}

void shard::turn(int timeout_ms) {
    if (timeout_ms != 0) {
        sleeping_.store(true, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        // A stop request not yet acted on is work; once stopping, the shard sleeps between turns
        // like any other (at most stopping_poll_ms): spinning through the drain starved the
        // shards with sessions left to close when there were more shards than CPUs.
        if (inbound_pending() || (!stopping_ && stop_requested_.load(std::memory_order_relaxed))) timeout_ms = 0;
    }
    int n = poller_->wait(events_.data(), static_cast<int>(events_.size()), timeout_ms);
    sleeping_.store(false, std::memory_order_relaxed);
    const auto started = std::chrono::steady_clock::now();
    // After a sleep the wheel's clock is behind by as long as it slept (next_timeout sleeps until
    // the next timer, seconds at times): catch it up before the events read now_tick(). A timer
    // fires here only if it fell due as the events came in; sleeping ended at the earliest due one.
    if (timeout_ms != 0) advance_clock();

    for (int i = 0; i < n; ++i) {
        const detail::poll_event& ev = events_[static_cast<std::size_t>(i)];
        if (ev.done_target)
            ev.done_target->completed(ev.done);
        else
            ev.target->on_io(ev.events);
    }
    poller_->dispatched();
    bump(stats_.io_events, static_cast<std::uint64_t>(n));

    std::size_t work = static_cast<std::size_t>(n);
    work += drain_inbound();

    if (!local_.empty()) {
        work += local_.size();
        running_.swap(local_);
        for (auto& t : running_) t();  // tasks posted meanwhile land in local_ for the next turn
        bump(stats_.tasks_local, running_.size());
        running_.clear();
    }

    advance_clock();
    flush_overflow();

    if (!dirty_.empty()) {
        work += dirty_.size();
        flushing_.swap(dirty_);
        for (auto& obj : flushing_) {
            obj->dirty_ = false;
            obj->on_flush();
        }
        flushing_.clear();
    }
    graveyard_.clear();
    if (!after_turn_.empty()) {
        std::vector<task> now;
        now.swap(after_turn_);
        for (auto& t : now) t();  // tasks they post wait for the next turn
    }
    bump(stats_.turns);
    if (work != 0) {
        const auto ended = std::chrono::steady_clock::now();
        record_turn(ended - started);
        last_work_ = ended;
    }
}

void shard::record_turn(std::chrono::steady_clock::duration took) noexcept {
    const auto ns = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count());
    stats_.turn_time.observe(ns);
    stats_.max_turn_us.raise_to(ns / 1000);
}

void shard::run() {
    t_current = this;
    // The wheel's clock stood still since construction: timers armed before the shard runs (a
    // connect timeout, a retry) count from now, not from when the shard was built, so none
    // fires early.
    epoch_ = std::chrono::steady_clock::now() - tick_ * static_cast<std::int64_t>(wheel_.now());
    poller_->thread_start();
    for (;;) {
        if (!stopping_ && stop_requested_.load(std::memory_order_acquire)) {
            stopping_ = true;
            drain_deadline_ = std::chrono::steady_clock::now() + engine_.config().drain_timeout;
            run_hooks(stop_hooks_);
        }
        if (stopping_ && !drained_) {
            bool expired = std::chrono::steady_clock::now() >= drain_deadline_;
            if (holds_ <= 0 || expired) {
                if (holds_ > 0)
                    log(log_level::warn, "shard {}: drain timeout with {} holds left; closing anyway", id_, holds_);
                drained_ = true;
                engine_.shard_finished_draining();
            }
        }
        if (drained_ && engine_.all_drained() && local_.empty() && !inbound_pending() && overflow_only_to_exited())
            break;
        int timeout = next_timeout();
        // Busy-poll (engine_config::poll_spin): within the window after work, poll instead of sleeping.
        if (timeout != 0 && spin_.count() > 0 && !stopping_ && std::chrono::steady_clock::now() - last_work_ < spin_)
            timeout = 0;
        turn(timeout);
    }
    if (overflow_count_) {
        // Only shards that already exited are left to receive these; nobody will run them.
        log(log_level::warn, "shard {}: dropping {} tasks posted to shards that already stopped", id_, overflow_count_);
        for (auto& q : overflow_) q.clear();
        overflow_count_ = 0;
    }
    run_hooks(exit_hooks_);
    // Whatever the exit hooks queued (final closes) runs now, still on this thread.
    while (!local_.empty() || !dirty_.empty() || !graveyard_.empty() || !after_turn_.empty()) turn(0);
    thread_live_.store(false, std::memory_order_release);
    t_current = nullptr;
}

}  // namespace strix
