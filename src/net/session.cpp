#include <strix/codec/frame_codec.hpp>
#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>
#include <strix/net/net_errc.hpp>
#include <strix/net/session.hpp>

#include "net/net_shard.hpp"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace strix {
namespace {

constexpr int max_iov = 64;
constexpr std::size_t length_prefix_size = 4;

std::uint32_t load_le32(const std::byte* p) noexcept {
    return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
           static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

// Errors a peer causes all the time: not worth a warning each.
bool expected_errno(int e) noexcept { return e == ECONNRESET || e == EPIPE || e == ETIMEDOUT; }

}  // namespace

session::session(detail::net_shard& ns, int fd, std::uint64_t id, std::string peer)
    : ns_(ns), fd_(fd), id_(id), peer_(std::move(peer)), max_frame_(ns.limits.max_frame) {
    timer_.on_fire = &session::on_timer;
    timer_.ctx = this;
}

session::~session() {
    // finalize() ran unless the shard exited with the session still registered (exit hooks abort
    // every session, so this is a belt-and-braces path for engines torn down early).
    if (fd_ >= 0) ::close(fd_);
    release_rx();
}

shard& session::owner() const noexcept { return ns_.owner; }

void session::start() {
    // Write readiness is asked for only while a write waits for socket buffer space (see
    // want_writable): on a Unix socket every read by the peer wakes the writer's watchers.
    if (auto ec = ns_.owner.add_fd(fd_, io_events::readable | io_events::read_hangup, this)) {
        log(log_level::error, "session %s: cannot register with the reactor: %s", peer_.c_str(), ec.message().c_str());
        finalize(ec);
        return;
    }
    last_rx_tick_ = ns_.owner.now_tick();
    arm_timer();
    ns_.handler->on_open(*this);
}

bool session::trim_if_idle(std::uint64_t quiet_ticks) noexcept {
    if (state_ != state::open || !tx_.empty()) return false;
    if (ns_.owner.now_tick() - last_rx_tick_ < quiet_ticks) return false;
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
    // Every ring is recv_buffer bytes (normalized to hold the server's max_frame); a frame must
    // fit in it whole, so that is the ceiling.
    max_frame_ = static_cast<std::uint32_t>(std::min<std::size_t>(max_frame, ns_.limits.recv_buffer));
}

void session::send(std::span<const std::byte> bytes) {
    if (state_ != state::open) return;
    tx_.append(bytes);
    queued();
}

void session::send(shared_buffer_ptr buf) {
    auto n = buf->size();
    send(std::move(buf), 0, n);
}

void session::send(shared_buffer_ptr buf, std::size_t offset, std::size_t length) {
    if (state_ != state::open) return;
    tx_.append(std::move(buf), offset, length);
    queued();
}

// Sends are counted per session and added to the shard's counter once per flush: a shared
// counter per message costs more than the append itself.
void session::publish_sends() noexcept {
    if (unpublished_sends_) {
        bump(ns_.counters.sends, unpublished_sends_);
        unpublished_sends_ = 0;
    }
}

// After every append: enforce the hard output limit, else schedule this turn's flush.
void session::queued() {
    ++unpublished_sends_;
    if (tx_.size() > ns_.limits.max_queued) {
        bump(ns_.counters.slow_consumers);
        log_limited(log_level::warn, "session %s: slow consumer (%zu bytes queued), disconnecting", peer_.c_str(), tx_.size());
        abort(net_errc::slow_consumer);
        return;
    }
    ns_.owner.mark_dirty(*this);
}

void session::on_io(std::uint32_t events) {
    if (state_ == state::closed) return;
    if (events & io_events::error) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
        finalize(std::error_code(err ? err : ECONNRESET, std::generic_category()));
        return;
    }
    if (events & (io_events::readable | io_events::hangup | io_events::read_hangup)) {
        if (state_ == state::open) {
            if (read_paused_)
                read_pending_ = true;
            else
                do_read();
        }
    }
    if (state_ != state::closed && (events & io_events::writable) && !tx_.empty()) ns_.owner.mark_dirty(*this);
}

bool session::acquire_rx() {
    if (rx_.has_storage()) return true;
    std::byte* p = ns_.take_rx_buffer();
    if (!p) return false;
    rx_.attach(p, ns_.limits.recv_buffer);
    return true;
}

void session::release_rx(bool cold) {
    if (!rx_.has_storage()) return;
    rx_.clear();
    if (std::byte* p = rx_.detach()) ns_.give_rx_buffer(p, cold);
}

// Reads until the socket is drained (a short read means it is), handing frames to the handler
// after every read so the ring never has to hold more than one read's worth plus a partial frame.
void session::do_read() {
    read_pending_ = false;
    if (!acquire_rx()) {
        abort(std::make_error_code(std::errc::not_enough_memory));
        return;
    }
    while (state_ == state::open) {
        if (tx_.size() >= ns_.limits.high_water) {
            // Output is piling up: stop taking input until the peer drains it (resume_reading).
            pause_reading();
            read_pending_ = true;
            break;
        }
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
        ssize_t r = n == 1 ? ::read(fd_, iov[0].iov_base, iov[0].iov_len) : ::readv(fd_, iov, n);
        if (r > 0) {
            rx_.commit(static_cast<std::size_t>(r));
            bump(ns_.counters.reads);
            bump(ns_.counters.bytes_in, static_cast<std::uint64_t>(r));
            last_rx_tick_ = ns_.owner.now_tick();
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

// Sizes the frame at p: ok (len set), need_more, or a framing error. Reads only the header's
// bytes until the whole frame is present, so limits are enforced before anything is buffered.
session::frame_check session::check_frame(const std::byte* p, std::size_t avail, std::size_t& len) const noexcept {
    if (ns_.format == frame_format::length_prefix_le32) {
        if (avail < length_prefix_size) return frame_check::need_more;
        std::uint32_t n = load_le32(p);
        if (n < length_prefix_size) return frame_check::too_small;
        if (n > max_frame_) return frame_check::too_large;
        if (avail < n) return frame_check::need_more;
        len = n;
        return frame_check::ok;
    }
    auto res = decode_frame(std::span<const std::byte>(p, avail), codec_limits{max_frame_});
    switch (res.error) {
        case frame_errc::ok: len = res.consumed; return frame_check::ok;
        case frame_errc::need_more: return frame_check::need_more;
        case frame_errc::length_too_small: return frame_check::too_small;
        case frame_errc::length_too_large: return frame_check::too_large;
        default: return frame_check::bad;
    }
}

// Hands every complete frame to the handler, in place: frames are cut straight out of the
// ring's contiguous readable span and consumed once per batch. Only a frame that straddles the
// ring's end costs a move (linearize). Returns false when the session stopped reading (framing
// error, or the handler closed it).
bool session::process_frames() {
    std::uint64_t frames = 0;
    bool go_on = true;
    while (go_on) {
        auto span = rx_.read_span();
        std::size_t off = 0;
        frame_check st = frame_check::need_more;
        while (state_ == state::open) {
            std::size_t len = 0;
            st = check_frame(span.data() + off, span.size() - off, len);
            if (st != frame_check::ok) break;
            ++frames;
            ns_.handler->on_frame(*this, span.subspan(off, len));
            off += len;
        }
        if (state_ == state::closed) {
            // The handler aborted us: finalize() already released the ring.
            bump(ns_.counters.frames_in, frames);
            return false;
        }
        rx_.consume(off);
        if (state_ != state::open) break;  // the handler called close()
        if (st != frame_check::ok && st != frame_check::need_more) {
            bump(ns_.counters.frames_in, frames);
            protocol_error(st == frame_check::too_small   ? net_errc::frame_too_small
                           : st == frame_check::too_large ? net_errc::frame_too_large
                                                          : net_errc::bad_frame);
            return false;
        }
        // Incomplete at the end of the span: if more bytes wrapped to the ring's start, make the
        // rest contiguous and go on; otherwise wait for the next read.
        go_on = rx_.size() > rx_.read_span().size();
        if (go_on) rx_.linearize(rx_.size());
    }
    bump(ns_.counters.frames_in, frames);
    return state_ == state::open;
}

void session::protocol_error(std::error_code ec) {
    bump(ns_.counters.frame_errors);
    log_limited(log_level::warn, "session %s: %s; closing", peer_.c_str(), ec.message().c_str());
    rx_.clear();
    ns_.handler->on_protocol_error(*this, ec);
    close(ec);
}

void session::pause_reading() {
    if (read_paused_) return;
    read_paused_ = true;
    paused_since_tick_ = ns_.owner.now_tick();
    bump(ns_.counters.read_pauses);
    arm_timer();
}

void session::resume_reading() {
    if (!read_paused_) return;
    read_paused_ = false;
    // Edge-triggered: data that arrived while paused raised no new edge, so read it now.
    if (read_pending_ && state_ == state::open) do_read();
}

void session::on_flush() {
    if (state_ == state::closed) return;
    flush_now();
    if (state_ == state::closed) return;
    if (read_paused_ && tx_.size() <= ns_.limits.low_water) resume_reading();
    if (state_ == state::closing && tx_.empty()) {
        finalize(close_reason_);
    }
}

// EPOLLOUT is registered only while output waits for socket buffer space. Registered for good,
// every skb the peer consumes on a Unix socket (unix_write_space) runs our epoll callback and
// wakes the shard, whether or not anything is queued: one spurious wakeup per message read.
// EPOLL_CTL_MOD re-polls the socket, so space freed before the call still raises the event.
void session::want_writable(bool on) {
    if (write_interest_ == on || state_ == state::closed) return;
    std::uint32_t ev = io_events::readable | io_events::read_hangup;
    if (on) ev |= io_events::writable;
    if (auto ec = ns_.owner.modify_fd(fd_, ev, this)) {
        log_limited(log_level::warn, "session %s: cannot change write interest: %s", peer_.c_str(), ec.message().c_str());
        finalize(ec);
        return;
    }
    write_interest_ = on;
}

void session::flush_now() {
    publish_sends();
    flush_writes();
    if (state_ == state::closed) return;
    want_writable(!tx_.empty());
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
            w = ::send(fd_, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL);
        } else {
            msghdr msg{};
            msg.msg_iov = iov;
            msg.msg_iovlen = static_cast<std::size_t>(n);
            w = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
        }
        if (w > 0) {
            tx_.consume(static_cast<std::size_t>(w));
            bump(ns_.counters.writes);
            bump(ns_.counters.bytes_out, static_cast<std::uint64_t>(w));
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
    if (state_ != state::open) return;
    close_reason_ = reason ? reason : make_error_code(net_errc::closed_by_app);
    if (tx_.empty()) {
        finalize(close_reason_);
        return;
    }
    state_ = state::closing;
    ::shutdown(fd_, SHUT_RD);
    ns_.owner.hold();
    holds_shard_ = true;
    // Bound the flush: a peer that stops reading must not keep us forever.
    close_deadline_tick_ = ns_.owner.now_tick() + std::max<std::uint64_t>(1, ns_.owner.ticks_for(ns_.limits.close_linger));
    arm_timer();
    ns_.owner.mark_dirty(*this);
}

void session::abort(std::error_code reason) {
    if (state_ == state::closed) return;
    tx_.clear();
    finalize(reason);
}

// One timer per session serves three deadlines: idle (nothing received), stall (reading paused
// by backpressure: the peer does not drain its output) and close linger. Reads do not touch the
// wheel; the timer fires at the earliest deadline and re-arms itself for whatever remains.
void session::arm_timer() {
    auto& sh = ns_.owner;
    const std::uint64_t now = sh.now_tick();
    std::uint64_t due = UINT64_MAX;
    if (state_ == state::closing) {
        due = close_deadline_tick_;
    } else if (state_ == state::open) {
        if (auto idle = sh.ticks_for(ns_.limits.idle_timeout)) due = std::min(due, last_rx_tick_ + idle);
        if (read_paused_)
            if (auto stall = sh.ticks_for(ns_.limits.stall_timeout)) due = std::min(due, paused_since_tick_ + stall);
    }
    if (due == UINT64_MAX) {
        sh.timers().cancel(timer_);
        return;
    }
    sh.timers().schedule(timer_, due > now ? due - now : 1);
}

void session::on_timer(timer_node& t) {
    auto& s = *static_cast<session*>(t.ctx);
    auto& sh = s.ns_.owner;
    const std::uint64_t now = sh.now_tick();
    if (s.state_ == state::closing) {
        if (now >= s.close_deadline_tick_) {
            log_limited(log_level::info, "session %s: close linger expired with %zu bytes unsent", s.peer_.c_str(), s.tx_.size());
            s.abort(s.close_reason_);
            return;
        }
    } else if (s.state_ == state::open) {
        auto idle = sh.ticks_for(s.ns_.limits.idle_timeout);
        if (idle && now - s.last_rx_tick_ >= idle) {
            bump(s.ns_.counters.idle_timeouts);
            log_limited(log_level::info, "session %s: idle timeout", s.peer_.c_str());
            s.abort(net_errc::idle_timeout);
            return;
        }
        auto stall = sh.ticks_for(s.ns_.limits.stall_timeout);
        if (stall && s.read_paused_ && now - s.paused_since_tick_ >= stall) {
            bump(s.ns_.counters.slow_consumers);
            log_limited(log_level::warn, "session %s: slow consumer (output not drained for %lld ms), disconnecting",
                        s.peer_.c_str(), static_cast<long long>(s.ns_.limits.stall_timeout.count()));
            s.abort(net_errc::slow_consumer);
            return;
        }
    } else {
        return;
    }
    s.arm_timer();
}

void session::finalize(std::error_code reason) {
    if (state_ == state::closed) return;
    state_ = state::closed;
    ns_.owner.timers().cancel(timer_);
    publish_sends();
    if (holds_shard_) {
        ns_.owner.release_hold();
        holds_shard_ = false;
    }
    ns_.owner.remove_fd(fd_);
    ::close(fd_);
    fd_ = -1;
    tx_.clear();
    release_rx();
    // Keep this object alive for the rest of the turn: events already fetched may name it.
    ns_.owner.retire(session_ptr(this));
    ns_.handler->on_close(*this, reason);
    ns_.forget(*this);
}

}  // namespace strix
