#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>
#include <strix/net/connection.hpp>
#include <strix/net/framer.hpp>
#include <strix/net/net_errc.hpp>
#include <strix/net/session.hpp>
#include <strix/net/session_group.hpp>

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace strix {
namespace {

constexpr int max_iov = 64;

// Errors a peer causes all the time: not worth a warning each.
bool expected_errno(int e) noexcept { return e == ECONNRESET || e == EPIPE || e == ETIMEDOUT; }

}  // namespace

session::session(session_group& g, unique_fd fd, std::uint64_t id, std::string peer, intrusive_ptr<connection> origin)
    : group_(g),
      owner_(g.owner()),
      fd_(std::move(fd)),
      id_(id),
      peer_(std::move(peer)),
      origin_(std::move(origin)),
      framer_(&g.framing()),
      length_prefix_(framer_ == &length_prefix_framer()),
      timer_([this] { on_timer(); }),
      max_frame_(g.limits().max_frame) {}

// finalize() ran unless the group was torn down with the session still registered; then the
// ring still goes back (its memory belongs to the group's pool) and unique_fd closes the socket.
// After finalize nothing here touches the group, so a session may outlive it (a handler's
// session_ptr).
session::~session() { release_rx(); }

connection* session::origin() const noexcept { return origin_.get(); }

void session::start() {
    completion_io_ = owner_.completion_io();
    if (completion_io_) {
        last_rx_tick_ = opened_tick_ = owner().now_tick();
        arm_recv();
        arm_timer();
        group_.handler().on_open(*this);
        return;
    }
    // Write readiness is asked for only while a write waits for socket buffer space (see
    // want_writable): on a Unix socket every read by the peer wakes the writer's watchers.
    if (auto ec = owner().add_fd(fd_.get(), io_events::readable | io_events::read_hangup, this)) {
        log(log_level::error, "session %s: cannot register with the reactor: %s", peer_.c_str(), ec.message().c_str());
        finalize(ec);
        return;
    }
    last_rx_tick_ = opened_tick_ = owner().now_tick();
    arm_timer();
    group_.handler().on_open(*this);
}

bool session::trim_if_idle(std::uint64_t quiet_ticks) noexcept {
    if (state_kind_ != phase::open || !tx_.empty()) return false;
    if (owner().now_tick() - last_rx_tick_ < quiet_ticks) return false;
    bool freed = false;
    if (tx_.has_chunks()) {
        tx_.trim();
        freed = true;
    }
    if (rx_.has_storage() && rx_.empty()) {
        release_rx(true);
        freed = true;
    }
    return freed;
}

void session::set_max_frame(std::uint32_t max_frame) noexcept {
    STRIX_ASSERT_OWNER(owner(), "session::set_max_frame");
    // Every ring is recv_buffer bytes (normalized to hold the group's max_frame); a frame must
    // fit in it whole, so that is the ceiling.
    max_frame_ = static_cast<std::uint32_t>(std::min<std::size_t>(max_frame, group_.limits().recv_buffer));
}

void session::set_framer(const framer& f) noexcept {
    STRIX_ASSERT_OWNER(owner(), "session::set_framer");
    framer_ = &f;
    length_prefix_ = framer_ == &length_prefix_framer();
}

void session::send(std::span<const std::byte> bytes) {
    STRIX_ASSERT_OWNER(owner(), "session::send");
    if (state_kind_ != phase::open) return;
    tx_.append(bytes);
    queued();
}

void session::send(shared_buffer_ptr buf) {
    auto n = buf->size();
    send(std::move(buf), 0, n);
}

void session::send(shared_buffer_ptr buf, std::size_t offset, std::size_t length) {
    STRIX_ASSERT_OWNER(owner(), "session::send");
    if (state_kind_ != phase::open) return;
    tx_.append(std::move(buf), offset, length);
    queued();
}

// Sends are counted per session and added to the shard's counter once per flush: a shared
// counter per message costs more than the append itself.
void session::publish_sends() noexcept {
    if (unpublished_sends_) {
        bump(group_.counters_.sends, unpublished_sends_);
        unpublished_sends_ = 0;
    }
}

// After every append: enforce the hard output limit, else schedule this turn's flush. A slow
// consumer's output is dropped and the session closes in this turn's flush, not here: send()
// never calls back into the handler (a broadcast loop over its sessions stays valid).
inline void session::queued() {
    ++unpublished_sends_;
    if (tx_.size() > group_.limits().max_queued) [[unlikely]]
        drop_slow_consumer();
    owner_.mark_dirty(*this);
}

void session::drop_slow_consumer() noexcept {
    bump(group_.counters_.slow_consumers);
    log_limited(log_level::warn, "session %s: slow consumer (%zu bytes queued), disconnecting", peer_.c_str(), tx_.size());
    tx_.clear();
    state_kind_ = phase::closing;  // send() is a no-op from here; on_flush finalizes
    close_reason_ = net_errc::slow_consumer;
}

void session::on_io(std::uint32_t events) {
    if (state_kind_ == phase::closed) return;
    if (events & io_events::error) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        finalize(std::error_code(err ? err : ECONNRESET, std::generic_category()));
        return;
    }
    if (events & (io_events::readable | io_events::hangup | io_events::read_hangup)) {
        if (state_kind_ == phase::open) {
            if (read_paused_ || suspended_)
                read_pending_ = true;
            else
                do_read();
        }
    }
    if (state_kind_ != phase::closed && (events & io_events::writable) && !tx_.empty()) owner().mark_dirty(*this);
}

bool session::acquire_rx() {
    if (rx_.has_storage()) return true;
    std::byte* p = group_.take_rx_buffer();
    if (!p) return false;
    rx_.attach(p, group_.limits().recv_buffer);
    return true;
}

void session::release_rx(bool cold) {
    if (!rx_.has_storage()) return;
    rx_.clear();
    if (std::byte* p = rx_.detach()) group_.give_rx_buffer(p, cold);
}

// Reads until the socket is drained (a short read means it is), handing frames to the handler
// after every read so the ring never has to hold more than one read's worth plus a partial frame.
void session::do_read() {
    read_pending_ = false;
    if (!acquire_rx()) {
        abort(std::make_error_code(std::errc::not_enough_memory));
        return;
    }
    while (state_kind_ == phase::open) {
        if (suspended_) {
            read_pending_ = true;  // the application paused input (suspend_reading)
            break;
        }
        if (tx_.size() >= group_.limits().high_water) {
            // Output is piling up: stop taking input until the peer drains it (resume_reading).
            pause_reading();
            read_pending_ = true;
            break;
        }
        // A partial frame near the end of the ring moves to its start before the read, so the
        // read does not wrap the frame around (which would cost a linearize of all it read).
        if (!rx_.empty() && rx_.write_span().size() < rx_.capacity() / 2) rx_.compact(rx_.capacity() / 8);
        iovec iov[2];
        int n = rx_.write_iov(iov);
        if (n == 0) {
            // Full ring: only possible mid-frame when a frame is as large as the ring, which
            // max_frame forbids; treat as a framing error rather than spin.
            protocol_error(net_errc::frame_too_large);
            break;
        }
        std::size_t want = iov[0].iov_len + (n > 1 ? iov[1].iov_len : 0);
        // One contiguous free span is the common case; plain read() skips readv's iovec import.
        ssize_t r = n == 1 ? ::read(fd_.get(), iov[0].iov_base, iov[0].iov_len) : ::readv(fd_.get(), iov, n);
        if (r > 0) {
            rx_.commit(static_cast<std::size_t>(r));
            bump(group_.counters_.reads);
            bump(group_.counters_.bytes_in, static_cast<std::uint64_t>(r));
            last_rx_tick_ = owner().now_tick();
            if (!process_frames()) break;
            if (static_cast<std::size_t>(r) < want) break;  // drained: skip the read that would say EAGAIN
            continue;
        }
        if (r == 0) {
            close(net_errc::peer_closed);
            break;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        int e = errno;
        if (!expected_errno(e)) log_limited(log_level::warn, "session %s: read: %s", peer_.c_str(), std::strerror(e));
        finalize(std::error_code(e, std::generic_category()));
        return;
    }
    // The ring stays attached while the peer is active (taking and returning it per read cost
    // more than the read's own work); the shard's idle sweep returns it (trim_if_idle).
}

// Hands every complete frame to the handler, in place: the framer sizes each frame from its
// header, the session checks the size against max_frame before waiting for the body, and frames
// are cut straight out of the ring's contiguous readable span and consumed once per batch. Only a
// frame that straddles the ring's end costs a move (linearize). Returns false when the session
// stopped reading (framing error, or the handler closed it).
bool session::process_frames() {
    std::uint64_t frames = 0;
    frame_error bad;
    bool go_on = true;
    while (go_on) {
        auto span = rx_.read_span();
        std::size_t off = 0;
        while (state_kind_ == phase::open && off < span.size()) {
            frame_cut cut;
            if (length_prefix_) {
                cut.size = length_prefix_size(span.subspan(off));
                if (cut.size == 1) {
                    bad = net_errc::frame_too_small;
                    break;
                }
            } else {
                cut = framer_->cut(span.subspan(off), max_frame_);
                if (cut.error) {
                    bad = cut.error;
                    break;
                }
            }
            if (cut.size > max_frame_) {
                bad = net_errc::frame_too_large;
                break;
            }
            if (cut.size == 0 || cut.size > span.size() - off) break;  // need more bytes
            ++frames;
            group_.handler().on_frame(*this, span.subspan(off, cut.size));
            off += cut.size;
            if (suspended_) break;  // the handler paused input: the rest waits in the ring
        }
        if (state_kind_ == phase::closed) {
            // The handler aborted us: finalize() already released the ring.
            bump(group_.counters_.frames_in, frames);
            return false;
        }
        rx_.consume(off);
        if (state_kind_ != phase::open) break;  // the handler called close()
        if (bad) {
            bump(group_.counters_.frames_in, frames);
            protocol_error(bad);
            return false;
        }
        if (suspended_) break;
        // Incomplete at the end of the span: if more bytes wrapped to the ring's start, make the
        // rest contiguous and go on; otherwise wait for the next read.
        go_on = rx_.size() > rx_.read_span().size();
        if (go_on) rx_.linearize(rx_.size());
    }
    bump(group_.counters_.frames_in, frames);
    if (group_.frame_ticks_ && state_kind_ == phase::open) track_partial(frames);
    return state_kind_ == phase::open;
}

// frame_timeout bookkeeping, once per batch of frames (not per frame, not per byte). The deadline
// belongs to the frame whose first byte is the first unconsumed byte of the ring: a batch that
// completed a frame and left bytes behind started a new frame in this read; a batch that completed
// nothing left the same frame incomplete, whose deadline stands. The timer is re-armed only when
// it would fire later than the new deadline: once armed it re-arms itself for what is left.
void session::track_partial(std::uint64_t frames) noexcept {
    if (rx_.empty()) {
        partial_deadline_tick_ = no_deadline;
        return;
    }
    if (frames == 0 && partial_deadline_tick_ != no_deadline) return;
    partial_deadline_tick_ = owner().now_tick() + group_.frame_ticks_;
    if (!timer_.armed() || timer_.deadline() > partial_deadline_tick_) arm_timer();
}

// Reading resumes after a pause or a suspension: the incomplete frame gets a full frame_timeout
// from now (the peer could not send while we did not read).
void session::restart_partial() noexcept {
    if (partial_deadline_tick_ == no_deadline || state_kind_ != phase::open) return;
    partial_deadline_tick_ = owner().now_tick() + group_.frame_ticks_;
    if (!timer_.armed() || timer_.deadline() > partial_deadline_tick_) arm_timer();
}

void session::protocol_error(std::error_code ec) {
    bump(group_.counters_.frame_errors);
    log_limited(log_level::warn, "session %s: %s; closing", peer_.c_str(), ec.message().c_str());
    rx_.clear();
    group_.handler().on_protocol_error(*this, ec);
    close(ec);
}

void session::pause_reading() {
    if (read_paused_) return;
    read_paused_ = true;
    if (completion_io_ && recv_armed_) owner_.io_cancel_recv(*this);
    paused_since_tick_ = owner().now_tick();
    bump(group_.counters_.read_pauses);
    arm_timer();
}

void session::suspend_reading(bool on) {
    STRIX_ASSERT_OWNER(owner(), "session::suspend_reading");
    if (suspended_ == on) return;
    suspended_ = on;
    if (on && completion_io_ && recv_armed_) owner_.io_cancel_recv(*this);
    if (on || state_kind_ != phase::open) return;
    restart_partial();
    if (completion_io_) {
        if (!rx_.empty() && !process_frames()) return;
        if (!suspended_ && !read_paused_) feed_parked();
        return;
    }
    // Frames left in the ring when input was paused go first (a full ring must not be mistaken
    // for an oversized frame by the next read).
    if (!rx_.empty() && !process_frames()) return;
    if (!suspended_ && !read_paused_ && read_pending_ && state_kind_ == phase::open) do_read();
}

void session::resume_reading() {
    if (!read_paused_) return;
    read_paused_ = false;
    if (suspended_) return;
    restart_partial();
    if (completion_io_) {
        feed_parked();
        return;
    }
    // Edge-triggered: data that arrived while paused raised no new edge, so read it now.
    if (read_pending_ && state_kind_ == phase::open) do_read();
}

void session::on_flush() {
    if (state_kind_ == phase::closed) return;
    flush_now();
    if (state_kind_ == phase::closed) return;
    if (read_paused_ && tx_.size() <= group_.limits().low_water) resume_reading();
    if (state_kind_ == phase::closing && tx_.empty()) {
        finalize(close_reason_);
        return;
    }
    if (drain_watch_ && tx_.empty() && state_kind_ == phase::open) {
        drain_watch_ = false;
        group_.handler().on_drained(*this);
    }
}

// EPOLLOUT is registered only while output waits for socket buffer space. Registered for good,
// every skb the peer consumes on a Unix socket (unix_write_space) runs our epoll callback and
// wakes the shard, whether or not anything is queued: one spurious wakeup per message read.
// EPOLL_CTL_MOD re-polls the socket, so space freed before the call still raises the event.
void session::want_writable(bool on) {
    if (write_interest_ == on || state_kind_ == phase::closed) return;
    std::uint32_t ev = io_events::readable | io_events::read_hangup;
    if (on) ev |= io_events::writable;
    if (auto ec = owner().modify_fd(fd_.get(), ev, this)) {
        log_limited(log_level::warn, "session %s: cannot change write interest: %s", peer_.c_str(), ec.message().c_str());
        finalize(ec);
        return;
    }
    write_interest_ = on;
}

void session::flush_now() {
    publish_sends();
    if (completion_io_) {
        submit_send();
        return;
    }
    flush_writes();
    if (state_kind_ == phase::closed) return;
    want_writable(!tx_.empty());
}

// --- completion I/O (io_uring) -----------------------------------------------------------------

void session::arm_recv() {
    if (recv_armed_ || state_kind_ != phase::open) return;
    recv_armed_ = true;
    owner_.io_recv(fd_.get(), *this);
}

void session::on_complete(const io_completion& c) {
    if (c.what == io_completion::op::send) {
        send_in_flight_ = false;
        if (state_kind_ == phase::closed) {
            tx_.clear();  // held for the kernel until now
            return;
        }
        if (c.result < 0) {
            const int e = -c.result;
            if (!expected_errno(e)) log_limited(log_level::warn, "session %s: send: %s", peer_.c_str(), std::strerror(e));
            finalize(std::error_code(e, std::generic_category()));
            return;
        }
        tx_.consume(static_cast<std::size_t>(c.result));
        bump(group_.counters_.writes);
        bump(group_.counters_.bytes_out, static_cast<std::uint64_t>(c.result));
        owner_.mark_dirty(*this);  // the rest, appends made meanwhile, a close or a drain watch
        return;
    }
    // recv
    if (!c.more) recv_armed_ = false;
    if (state_kind_ != phase::open) return;
    if (c.result > 0) {
        take(std::span<const std::byte>(c.data, static_cast<std::size_t>(c.result)));
    } else if (c.result == 0) {
        close(net_errc::peer_closed);
        return;
    } else if (c.result != -ENOBUFS && c.result != -ECANCELED) {
        const int e = -c.result;
        if (!expected_errno(e)) log_limited(log_level::warn, "session %s: read: %s", peer_.c_str(), std::strerror(e));
        finalize(std::error_code(e, std::generic_category()));
        return;
    }
    // Re-armed unless paused: ENOBUFS means the shard's buffers were all lent out this turn (they
    // go back before the next submit), ECANCELED that input was paused.
    if (state_kind_ == phase::open && !read_paused_ && !suspended_) arm_recv();
}

// Bytes a receive completion brought: handed to the framer now, or kept while input is paused.
void session::take(std::span<const std::byte> data) {
    bump(group_.counters_.reads);
    bump(group_.counters_.bytes_in, data.size());
    last_rx_tick_ = owner_.now_tick();
    if (read_paused_ || suspended_ || !parked_.empty()) {
        // The cancel of the receive is on its way; what still arrived waits here (at most a few
        // buffers' worth), in order.
        parked_.insert(parked_.end(), data.begin(), data.end());
        return;
    }
    feed(data);
}

// Copies data into the ring as room allows, cutting frames after each copy.
void session::feed(std::span<const std::byte> data) {
    while (!data.empty() && state_kind_ == phase::open) {
        if (read_paused_ || suspended_) {
            parked_.insert(parked_.end(), data.begin(), data.end());
            return;
        }
        if (!acquire_rx()) {
            abort(std::make_error_code(std::errc::not_enough_memory));
            return;
        }
        if (!rx_.empty() && rx_.write_span().size() < data.size()) rx_.compact(rx_.capacity() / 8);
        const std::size_t n = rx_.write(data);
        if (n == 0) {
            // A full ring with no whole frame in it: only a frame as large as the ring, which
            // max_frame forbids.
            protocol_error(net_errc::frame_too_large);
            return;
        }
        data = data.subspan(n);
        if (!process_frames()) return;
        if (tx_.size() >= group_.limits().high_water) pause_reading();
    }
}

void session::feed_parked() {
    if (!parked_.empty()) {
        std::vector<std::byte> backlog;
        backlog.swap(parked_);
        feed(backlog);
    }
    if (state_kind_ == phase::open && !read_paused_ && !suspended_) arm_recv();
}

void session::submit_send() {
    if (send_in_flight_ || tx_.empty() || state_kind_ == phase::closed) return;
    if (!iov_) iov_ = std::make_unique<iovec[]>(max_iov);
    const int n = tx_.fill_iov(iov_.get(), max_iov);
    msg_ = msghdr{};
    msg_.msg_iov = iov_.get();
    msg_.msg_iovlen = static_cast<std::size_t>(n);
    send_in_flight_ = true;
    owner_.io_send(fd_.get(), msg_, *this);
}

void session::flush_writes() {
    while (!tx_.empty()) {
        iovec iov[max_iov];
        int n = tx_.fill_iov(iov, max_iov);
        std::size_t want = 0;
        for (int i = 0; i < n; ++i) want += iov[i].iov_len;
        ssize_t w;
        if (n == 1) {
            // A single segment (the usual coalesced chunk): send() avoids sendmsg's msghdr/iovec copy.
            w = ::send(fd_.get(), iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL);
        } else {
            msghdr msg{};
            msg.msg_iov = iov;
            msg.msg_iovlen = static_cast<std::size_t>(n);
            w = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL);
        }
        if (w > 0) {
            tx_.consume(static_cast<std::size_t>(w));
            bump(group_.counters_.writes);
            bump(group_.counters_.bytes_out, static_cast<std::uint64_t>(w));
            if (static_cast<std::size_t>(w) < want) return;  // socket buffer full; EPOLLOUT resumes us
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        int e = w < 0 ? errno : EPIPE;
        if (!expected_errno(e)) log_limited(log_level::warn, "session %s: write: %s", peer_.c_str(), std::strerror(e));
        finalize(std::error_code(e, std::generic_category()));
        return;
    }
}

void session::close(std::error_code reason) {
    STRIX_ASSERT_OWNER(owner(), "session::close");
    if (state_kind_ != phase::open) return;
    close_reason_ = reason ? reason : make_error_code(net_errc::closed_by_app);
    if (tx_.empty()) {
        finalize(close_reason_);
        return;
    }
    state_kind_ = phase::closing;
    ::shutdown(fd_.get(), SHUT_RD);
    owner().hold();
    holds_shard_ = true;
    // Bound the flush: a peer that stops reading must not keep us forever.
    close_deadline_tick_ = owner().now_tick() + std::max<std::uint64_t>(1, owner().ticks_for(group_.limits().close_linger));
    arm_timer();
    owner().mark_dirty(*this);
}

void session::abort(std::error_code reason) {
    STRIX_ASSERT_OWNER(owner(), "session::abort");
    if (state_kind_ == phase::closed) return;
    tx_.clear();
    finalize(reason);
}

// One timer per session serves every deadline: handshake (handshake_done() not called), frame
// (an incomplete frame since its first byte, only while one exists and reading is not paused),
// idle (nothing received), stall (reading paused by backpressure: the peer does not drain its
// output) and close linger. Reads do not touch the wheel (track_partial re-arms only when a new
// frame deadline comes before the armed one); the timer fires at the earliest deadline and
// re-arms itself for whatever remains.
void session::arm_timer() {
    auto& sh = owner();
    const std::uint64_t now = sh.now_tick();
    const session_limits& lim = group_.limits();
    std::uint64_t due = UINT64_MAX;
    if (state_kind_ == phase::closing) {
        due = close_deadline_tick_;
    } else if (state_kind_ == phase::open) {
        if (auto idle = sh.ticks_for(lim.idle_timeout)) due = std::min(due, last_rx_tick_ + idle);
        if (!handshake_done_)
            if (auto hs = sh.ticks_for(lim.handshake_timeout)) due = std::min(due, opened_tick_ + hs);
        if (!read_paused_ && !suspended_) due = std::min(due, partial_deadline_tick_);
        if (read_paused_)
            if (auto stall = sh.ticks_for(lim.stall_timeout)) due = std::min(due, paused_since_tick_ + stall);
    }
    if (due == UINT64_MAX) {
        sh.timers().cancel(timer_);
        return;
    }
    sh.timers().schedule(timer_, due > now ? due - now : 1);
}

void session::on_timer() {
    auto& sh = owner();
    const std::uint64_t now = sh.now_tick();
    const session_limits& lim = group_.limits();
    if (state_kind_ == phase::closing) {
        if (now >= close_deadline_tick_) {
            log_limited(log_level::info, "session %s: close linger expired with %zu bytes unsent", peer_.c_str(), tx_.size());
            abort(close_reason_);
            return;
        }
    } else if (state_kind_ == phase::open) {
        auto hs = sh.ticks_for(lim.handshake_timeout);
        if (hs && !handshake_done_ && now - opened_tick_ >= hs) {
            expire(net_errc::handshake_timeout, group_.counters_.handshake_timeouts);
            return;
        }
        if (!read_paused_ && !suspended_ && now >= partial_deadline_tick_) {
            expire(net_errc::frame_timeout, group_.counters_.frame_timeouts);
            return;
        }
        auto idle = sh.ticks_for(lim.idle_timeout);
        if (idle && now - last_rx_tick_ >= idle) {
            bump(group_.counters_.idle_timeouts);
            log_limited(log_level::info, "session %s: idle timeout", peer_.c_str());
            abort(net_errc::idle_timeout);
            return;
        }
        auto stall = sh.ticks_for(lim.stall_timeout);
        if (stall && read_paused_ && now - paused_since_tick_ >= stall) {
            bump(group_.counters_.slow_consumers);
            log_limited(log_level::warn, "session %s: slow consumer (output not drained for %lld ms), disconnecting",
                        peer_.c_str(), static_cast<long long>(lim.stall_timeout.count()));
            abort(net_errc::slow_consumer);
            return;
        }
    } else {
        return;
    }
    arm_timer();
}

// A protocol deadline passed: like a framing error, the handler may say why (on_protocol_error)
// and what it sends is flushed, within close_linger, before the connection closes.
void session::expire(std::error_code reason, std::atomic<std::uint64_t>& counter) {
    bump(counter);
    log_limited(log_level::info, "session %s: %s; closing", peer_.c_str(), reason.message().c_str());
    partial_deadline_tick_ = no_deadline;
    rx_.clear();
    group_.handler().on_protocol_error(*this, reason);
    close(reason);
}

void session::finalize(std::error_code reason) {
    if (state_kind_ == phase::closed) return;
    state_kind_ = phase::closed;
    auto& sh = owner();
    sh.timers().cancel(timer_);
    publish_sends();
    if (holds_shard_) {
        sh.release_hold();
        holds_shard_ = false;
    }
    if (completion_io_)
        sh.io_cancel(fd_.get());  // before the close: the number may be reused at once
    else
        sh.remove_fd(fd_.get());
    fd_.reset();
    group_.released_bytes_ += tx_.size();  // the idle sweep may hand the pages back (malloc_trim)
    if (!send_in_flight_) tx_.clear();  // else the kernel may still read it: cleared on completion
    parked_.clear();
    release_rx();
    // Keep this object alive for the rest of the turn: events already fetched may name it.
    sh.retire(session_ptr(this));
    group_.handler().on_close(*this, reason);
    state_.reset();
    group_.forget(*this);
    if (origin_) origin_->session_closed();
}

}  // namespace strix
