#pragma once
// io_uring backend of the poller interface: completion I/O for sessions and listeners, readiness
// (multishot POLL_ADD) for everything else (the doorbell eventfd, sockets still connecting).
//
// The streams and acceptors that use it are in uring_stream.cpp.
//
//   session:  recv_multishot ──> CQE per chunk, bytes in a provided buffer (ring of 128 x 16 KiB,
//                                shared by the shard's sessions, given back after dispatch)
//             send(msghdr)   ──> one gather send per flush; the next flush waits for its CQE
//   listener: accept_multishot ──> CQE per connection
//   one io_uring_enter per loop turn submits the turn's sends and re-arms, and reaps completions;
//   a session's large output is submitted mid-turn (submit_now, session_limits::flush_bytes).
//
// Setup: SINGLE_ISSUER + COOP_TASKRUN (completions are posted when the shard's thread next returns
// from the kernel, not by interrupting it; make_uring_poller says why not DEFER_TASKRUN), created
// disabled and enabled by the shard's own thread (thread_start), which makes that thread the
// ring's one submitter. Operations prepared before then (the doorbell registers in the shard's
// constructor) go in with the first submit.
//
// Lifetimes: every submitted operation holds a reference on its target until its last CQE has
// been dispatched, so a session closed mid-flight is freed only when the kernel is done with it.
#include "core/backend/poller.hpp"

#include <strix/core/intrusive_ptr.hpp>
#include <strix/core/log.hpp>

#include <liburing.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/unordered/unordered_flat_map.hpp>

#include <pthread.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <vector>

namespace strix::detail::uring {

constexpr unsigned ring_entries = 4096;
constexpr unsigned min_ring_entries = 512;  // with several shards per CPU (make_uring_poller)
// The kernel takes provided buffers in ring order and they come back in the order they were
// dispatched, so a shard cycles through all of them: their total is memory every received byte
// passes through, so fewer is better until a turn runs out (ENOBUFS ends a multishot receive,
// re-armed a turn later). The sizes were chosen by measurement: docs/websocket.md, "io_uring's
// provided buffers".
constexpr unsigned buffer_count = 128;      // power of two (the buffer ring's mask)
constexpr unsigned min_buffer_count = 16;   // with several shards per CPU (make_uring_poller)
constexpr unsigned buffer_size = 16 * 1024;
constexpr unsigned buffer_group = 1;

// user_data: the target's address with the operation in its low bits (objects are 8-aligned).
enum tag : std::uintptr_t { t_poll = 0, t_recv = 1, t_send = 2, t_accept = 3, t_ignore = 4, t_writable = 5 };
constexpr std::uintptr_t tag_mask = 7;

inline std::uint64_t user_data(const void* obj, tag t) noexcept {
    return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(obj) | t);
}

// A stream or acceptor of this backend. The poller counts its operations in flight here (each
// holds a reference on keep_alive(), whose owner owns this object, so it lives until the last
// one ends) and links it into a list while it has any: the ring's teardown releases those
// references, and the per-operation path stays two increments instead of a hash-map update.
class uring_target : public completion_target {
    friend class uring_poller;
    uring_target* prev_ = nullptr;
    uring_target* next_ = nullptr;
    std::uint32_t ops_ = 0;

public:
    /// The shard's provided buffers are back after this target's receive ended for want of them
    /// (uring_poller::wait_for_buffers): arm it again.
    virtual void buffers_back() {}

protected:
    ~uring_target() = default;
};

class uring_poller final : public poller {
public:
    explicit uring_poller(io_uring& ring, unsigned buffers = buffer_count) : ring_(ring), buffer_count_(buffers) {
        // The provided-buffer ring: the kernel picks a free buffer for each received chunk.
        const std::size_t ring_bytes = sizeof(io_uring_buf) * buffer_count_;
        void* br = ::mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (br == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "io_uring buffer ring");
        bufring_ = static_cast<io_uring_buf_ring*>(br);
        buffers_.resize(static_cast<std::size_t>(buffer_count_) * buffer_size);
        io_uring_buf_reg reg{};
        reg.ring_addr = reinterpret_cast<std::uintptr_t>(bufring_);
        reg.ring_entries = buffer_count_;
        reg.bgid = buffer_group;
        if (int rc = io_uring_register_buf_ring(&ring_, &reg, 0); rc < 0) {
            ::munmap(bufring_, ring_bytes);
            throw std::system_error(-rc, std::generic_category(), "io_uring_register_buf_ring");
        }
        io_uring_buf_ring_init(bufring_);
        for (unsigned i = 0; i < buffer_count_; ++i)
            io_uring_buf_ring_add(bufring_, buffer(i), buffer_size, static_cast<unsigned short>(i),
                                  io_uring_buf_ring_mask(buffer_count_), static_cast<int>(i));
        io_uring_buf_ring_advance(bufring_, static_cast<int>(buffer_count_));
    }

    ~uring_poller() override {
        io_uring_queue_exit(&ring_);
        ::munmap(bufring_, sizeof(io_uring_buf) * buffer_count_);
        // Operations still in flight die with the ring; drop the references they held (a release
        // may free a target and with it the list node, hence the copy first).
        std::vector<std::pair<reactor_object*, std::uint32_t>> held;
        for (uring_target* t = inflight_; t; t = t->next_) held.emplace_back(&t->keep_alive(), t->ops_);
        for (auto& [t, n] : polls_) held.emplace_back(t, n);
        for (auto& [t, n] : held)
            for (std::uint32_t i = 0; i < n; ++i) intrusive_release(t);
        delete &ring_;
    }

    const char* name() const noexcept override { return "io_uring"; }

    // uring_stream.cpp
    std::unique_ptr<stream_io> open_stream(int fd, reactor_object& owner, stream_user& user) override;
    std::unique_ptr<acceptor_io> open_acceptor(int fd, reactor_object& owner, accept_user& user) override;

    void thread_start() override {
        // The shard's thread enables the ring and so becomes its single issuer.
        if (::syscall(__NR_io_uring_register, ring_.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0) < 0)
            log(log_level::warn, "io_uring: cannot enable the ring: {}", std::strerror(errno));
        issuer_ = ::pthread_self();
        started_ = true;
    }

    // --- readiness ------------------------------------------------------------------------------
    std::error_code add(int fd, std::uint32_t events, reactor_object* target) override {
        io_uring_sqe* sqe = sqe_for(*target);
        io_uring_prep_poll_multishot(sqe, fd, poll_mask(events));
        io_uring_sqe_set_data64(sqe, user_data(target, t_poll));
        return {};
    }
    std::error_code modify(int fd, std::uint32_t events, reactor_object* target) override {
        // Cancel the old poll (its last CQE is ignored: the target is told nothing) and arm anew.
        cancel_data(user_data(target, t_poll));
        return add(fd, events, target);
    }
    std::error_code remove(int fd) override {
        cancel_fd(fd);
        return {};
    }

    // --- completions: for uring_stream.cpp -----------------------------------------------------
    /// Receives on fd until cancelled: a completion per chunk, its bytes in a provided buffer.
    void recv_multishot(int fd, uring_target& t) {
        io_uring_sqe* sqe = sqe_for(t);
        io_uring_prep_recv_multishot(sqe, fd, nullptr, 0, 0);
        sqe->flags |= IOSQE_BUFFER_SELECT;
        sqe->buf_group = buffer_group;
        io_uring_sqe_set_data64(sqe, user_data(&t, t_recv));
    }
    /// Sends msg (which must stay valid until the completion) on fd.
    void send(int fd, const msghdr* msg, uring_target& t) {
        io_uring_sqe* sqe = sqe_for(t);
        io_uring_prep_sendmsg(sqe, fd, msg, MSG_NOSIGNAL);
        io_uring_sqe_set_data64(sqe, user_data(&t, t_send));
    }
    /// Completes once when fd can take more bytes: a sendmsg on a non-blocking socket whose buffer
    /// is full completes with -EAGAIN instead of waiting (io_uring honours O_NONBLOCK).
    void wait_writable(int fd, uring_target& t) {
        io_uring_sqe* sqe = sqe_for(t);
        io_uring_prep_poll_add(sqe, fd, POLLOUT);
        io_uring_sqe_set_data64(sqe, user_data(&t, t_writable));
    }
    /// Accepts on a listening fd until cancelled.
    void accept_multishot(int fd, uring_target& t) {
        io_uring_sqe* sqe = sqe_for(t);
        io_uring_prep_multishot_accept(sqe, fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        io_uring_sqe_set_data64(sqe, user_data(&t, t_accept));
    }
    /// t's receive ended with ENOBUFS (every buffer lent out this turn): t->buffers_back() is
    /// called once buffers are back, in FIFO order, at most a buffer ring's worth of targets a
    /// turn. Re-arming at once instead cost a submission and a failure per starved stream per
    /// turn, and with thousands of streams holding data (a million connections, 54 shards with 16
    /// buffers each) the turns grew until a shard answered nothing for seconds.
    void wait_for_buffers(uring_target& t) {
        hold(t);
        starved_.push_back(&t);
    }
    /// Cancels t's receive (its last completion still comes, with -ECANCELED or data).
    void cancel_recv(uring_target& t) { cancel_data(user_data(&t, t_recv)); }
    /// Cancels what t has in flight, each by its user_data: its receive when `receiving`, its
    /// send or wait for room when `sending`. Submits at once, with whatever else is queued: the
    /// caller closes t's descriptor next (see uring_stream::close).
    void cancel_ops(uring_target& t, bool receiving, bool sending) {
        if (t.ops_ == 0) return;
        if (receiving) cancel_data(user_data(&t, t_recv));
        if (sending) {
            cancel_data(user_data(&t, t_send));
            cancel_data(user_data(&t, t_writable));
        }
        submit_now();
    }
    /// Cancels t's multishot accept.
    void cancel_accept(uring_target& t) { cancel_data(user_data(&t, t_accept)); }
    /// Cancels every operation on fd, at once (before the caller closes it).
    void cancel_fd(int fd) {
        io_uring_sqe* sqe = raw_sqe();
        io_uring_prep_cancel_fd(sqe, fd, IORING_ASYNC_CANCEL_ALL);
        io_uring_sqe_set_data64(sqe, t_ignore);
        // Now, not with the next turn: the caller closes fd next, and the number may be reused
        // by a new socket before a later submit would look it up.
        submit_now();
    }

    /// Submits what is queued now, not with the turn's wait: a send queued mid-turn then copies
    /// its bytes while they are still in the CPU's cache (a sendmsg on a socket with room
    /// completes inline). Its completion is reaped with the next wait.
    void submit_now() {
        if (started_ && on_issuer()) io_uring_submit(&ring_);
    }

    int wait(poll_event* out, int max_events, int timeout_ms) override {
        if (!started_) return 0;
        if (!starved_.empty()) timeout_ms = 0;  // they re-arm after this turn's dispatch
        if (timeout_ms == 0) {
            io_uring_submit_and_get_events(&ring_);
        } else {
            io_uring_cqe* cqe = nullptr;
            __kernel_timespec ts{timeout_ms / 1000, static_cast<long long>(timeout_ms % 1000) * 1000000};
            io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, timeout_ms < 0 ? nullptr : &ts, nullptr);
        }
        int n = 0;
        unsigned seen = 0, head = 0;
        io_uring_cqe* cqe = nullptr;
        io_uring_for_each_cqe(&ring_, head, cqe) {
            if (n == max_events) break;
            ++seen;
            if (translate(*cqe, out[n])) ++n;
        }
        io_uring_cq_advance(&ring_, seen);
        return n;
    }

    void dispatched() noexcept override {
        if (!returned_.empty()) {
            const int mask = io_uring_buf_ring_mask(buffer_count_);
            int i = 0;
            for (unsigned short bid : returned_)
                io_uring_buf_ring_add(bufring_, buffer(bid), buffer_size, bid, mask, i++);
            io_uring_buf_ring_advance(bufring_, i);
            returned_.clear();
        }
        for (auto* t : releases_) drop(t);
        releases_.clear();
        for (auto* t : done_) drop(t);
        done_.clear();
        // Every buffer is back now: re-arm up to that many starved receives, oldest first.
        for (unsigned k = 0; k < buffer_count_ && !starved_.empty(); ++k) {
            uring_target* t = starved_.front();
            starved_.pop_front();
            t->buffers_back();
            drop(t);
        }
    }

private:
    void* buffer(unsigned i) noexcept { return buffers_.data() + static_cast<std::size_t>(i) * buffer_size; }

    static unsigned poll_mask(std::uint32_t events) noexcept {
        unsigned m = 0;
        if (events & io_events::readable) m |= POLLIN;
        if (events & io_events::writable) m |= POLLOUT;
        if (events & io_events::read_hangup) m |= POLLRDHUP;
        return m;
    }

    // Only the issuer may submit (SINGLE_ISSUER); teardown after the shard exited must not.
    bool on_issuer() const noexcept { return ::pthread_equal(issuer_, ::pthread_self()) != 0; }

    io_uring_sqe* raw_sqe() {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        while (!sqe) {
            // Submission queue full: hand what is there to the kernel (only the issuer may).
            if (started_ && on_issuer()) io_uring_submit(&ring_);
            sqe = io_uring_get_sqe(&ring_);
            if (!sqe && !started_)
                throw std::system_error(EBUSY, std::generic_category(), "io_uring submission queue full before start");
        }
        return sqe;
    }

    // An SQE for an operation on target, which stays alive until the operation's last CQE.
    io_uring_sqe* sqe_for(reactor_object& target) {
        io_uring_sqe* sqe = raw_sqe();
        intrusive_add_ref(&target);
        ++polls_[&target];
        return sqe;
    }
    io_uring_sqe* sqe_for(uring_target& t) {
        io_uring_sqe* sqe = raw_sqe();
        hold(t);
        return sqe;
    }
    // t stays alive and on the in-flight list until the matching drop(t).
    void hold(uring_target& t) {
        intrusive_add_ref(&t.keep_alive());
        if (t.ops_++ == 0) {
            t.prev_ = nullptr;
            t.next_ = inflight_;
            if (inflight_) inflight_->prev_ = &t;
            inflight_ = &t;
        }
    }

    void cancel_data(std::uint64_t data) {
        io_uring_sqe* sqe = raw_sqe();
        io_uring_prep_cancel64(sqe, data, 0);
        io_uring_sqe_set_data64(sqe, t_ignore);
    }

    void drop(reactor_object* t) noexcept {
        auto it = polls_.find(t);
        if (it == polls_.end()) return;
        if (--it->second == 0) polls_.erase(it);
        intrusive_release(t);
    }
    void drop(uring_target* t) noexcept {
        reactor_object& owner = t->keep_alive();
        if (--t->ops_ == 0) {
            if (t->prev_)
                t->prev_->next_ = t->next_;
            else
                inflight_ = t->next_;
            if (t->next_) t->next_->prev_ = t->prev_;
        }
        intrusive_release(&owner);  // last: it may free t
    }

    // Turns a CQE into a poll_event; false when there is nothing to tell (cancels, stale polls).
    bool translate(const io_uring_cqe& cqe, poll_event& ev) {
        const auto data = static_cast<std::uintptr_t>(cqe.user_data);
        const auto t = static_cast<tag>(data & tag_mask);
        if (t == t_ignore) return false;
        const bool more = cqe.flags & IORING_CQE_F_MORE;
        if (t == t_poll) {
            auto* target = reinterpret_cast<reactor_object*>(data & ~tag_mask);
            if (!more) releases_.push_back(target);  // after dispatch: the last CQE of this operation
            if (cqe.res == -ECANCELED) return false;  // modify() replaced it, or remove()
            ev.target = target;
            ev.done_target = nullptr;
            if (cqe.res < 0) {
                ev.events = io_events::error;
            } else {
                const auto r = static_cast<unsigned>(cqe.res);
                ev.events = (r & POLLIN ? io_events::readable : 0u) | (r & POLLOUT ? io_events::writable : 0u) |
                            (r & POLLERR ? io_events::error : 0u) | (r & POLLHUP ? io_events::hangup : 0u) |
                            (r & POLLRDHUP ? io_events::read_hangup : 0u);
            }
            return true;
        }
        auto* done = reinterpret_cast<uring_target*>(data & ~tag_mask);
        if (!more) done_.push_back(done);
        ev.target = nullptr;
        ev.done_target = done;
        ev.events = 0;
        ev.done.result = cqe.res;
        ev.done.more = more;
        ev.done.data = nullptr;
        if (t == t_recv) {
            ev.done.what = io_completion::op::recv;
            if (cqe.flags & IORING_CQE_F_BUFFER) {
                const auto bid = static_cast<unsigned short>(cqe.flags >> IORING_CQE_BUFFER_SHIFT);
                ev.done.data = static_cast<const std::byte*>(buffer(bid));
                returned_.push_back(bid);
            }
        } else if (t == t_send) {
            ev.done.what = io_completion::op::send;
        } else if (t == t_writable) {
            ev.done.what = io_completion::op::writable;
        } else {
            ev.done.what = io_completion::op::accept;
        }
        return true;
    }

    io_uring& ring_;
    unsigned buffer_count_;  // provided buffers (a power of two)
    bool started_ = false;
    io_uring_buf_ring* bufring_ = nullptr;
    std::vector<std::byte> buffers_;
    std::vector<unsigned short> returned_;    // buffers lent to this batch's recv completions
    std::vector<reactor_object*> releases_;   // poll targets whose operation ended in this batch
    std::vector<uring_target*> done_;         // streams and acceptors whose operation ended in it
    boost::unordered_flat_map<reactor_object*, std::uint32_t> polls_;  // references polls hold
    uring_target* inflight_ = nullptr;        // streams and acceptors with operations in flight
    std::deque<uring_target*> starved_;       // receives waiting for buffers (each held, see hold)
    pthread_t issuer_{};
};

}  // namespace strix::detail::uring
