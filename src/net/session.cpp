#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>
#include <strix/net/connection.hpp>
#include <strix/net/framer.hpp>
#include <strix/net/admission.hpp>
#include <strix/net/net_errc.hpp>
#include <strix/net/session.hpp>
#include <strix/net/session_group.hpp>
#include <strix/net/tls.hpp>

#include "core/backend/poller.hpp"
#include "net/tls/tls_stream.hpp"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace strix {
namespace {

// Errors a peer causes all the time: not worth a warning each.
bool expected_errno(int e) noexcept { return e == ECONNRESET || e == EPIPE || e == ETIMEDOUT; }

}  // namespace

session::session(session_group& g, unique_fd fd, std::uint64_t id, std::string peer, intrusive_ptr<connection> origin)
    : group_(g),
      owner_(g.owner()),
      fd_(std::move(fd)),
      id_(id),
      peer_(peer.data(), peer.size()),
      origin_(std::move(origin)),
      timer_([this] { on_timer(); }) {
    in_.framing = &g.framing();
    in_.length_prefix = in_.framing == &length_prefix_framer();
    in_.max_frame = g.limits().max_frame;
}

// finalize() ran unless the group was torn down with the session still registered; then the
// ring still goes back (its memory belongs to the group's pool) and unique_fd closes the socket.
// After finalize nothing here touches the group, so a session may outlive it (a handler's
// session_ptr).
session::~session() { release_rx(); }

connection* session::origin() const noexcept { return origin_.get(); }

void session::start() {
    if (auto ec = open_stream()) {
        if (ec != net_errc::tls_handshakes_capped)
            log(log_level::error, "session {}: cannot register with the reactor: {}", peer(), ec);
        finalize(ec);
        return;
    }
    if (life_.state != phase::open) return;  // a TLS client's first flight failed
    in_.last_rx_tick = life_.opened_tick = owner().now_tick();
    group_.list_for_sweep(*this);  // the stream's own state (TLS) is trimmed once it is quiet
    arm_timer();
    if (!tls_) open_handler();  // a TLS session opens when its handshake is done (established)
}

// The stream under the session: the backend's own, or TLS over it for a group that serves TLS
// (accepted sessions) or a connection that asked for it.
std::error_code session::open_stream() {
    auto& backend = detail::backend_of(owner_);
    const tls_server* server_tls = origin_ ? nullptr : group_.tls_.get();
    const tls_client* client_tls = origin_ ? origin_->opts_.tls.get() : nullptr;
    if (!server_tls && !client_tls) {
        io_ = backend.open_stream(fd_.get(), *this, *this);
        return io_->start();
    }
    detail::tls_stream_config tc;
    tc.owner = &owner_;
    tc.counters = &group_.counters_;
    tc.address = std::string(admission::address_of(peer()));
    if (tc.address.empty()) tc.address = std::string(peer());
    detail::ssl_ptr ssl;
    if (server_tls) {
        const tls_server_config& c = server_tls->config();
        if (!group_.tls_gate().enter(tc.address, c.max_handshakes_per_shard, c.max_handshakes_per_address)) {
            bump(group_.counters_.tls_refused);
            log_limited(log_level::warn,
                        "session {}: {} handshakes in progress on this shard, cap {} (and {} per address); closing",
                        peer(), group_.tls_gate().in_progress(), c.max_handshakes_per_shard,
                        c.max_handshakes_per_address);
            return net_errc::tls_handshakes_capped;
        }
        tc.gate = &group_.tls_gate();
        tc.handshake_timeout = c.handshake_timeout;
        ssl = detail::new_server_ssl(*server_tls);
    } else {
        tc.handshake_timeout = client_tls->config().handshake_timeout;
        tc.resume = &origin_->tls_resume();
        const std::string& name =
            origin_->opts_.server_name.empty() ? origin_->target_.host : origin_->opts_.server_name;
        ssl = detail::new_client_ssl(*client_tls, name);
    }
    if (!ssl) {
        if (tc.gate) tc.gate->leave(tc.address);
        return std::make_error_code(std::errc::not_enough_memory);
    }
    stream_user& self = *this;
    auto t = std::make_unique<detail::tls_stream>(std::move(ssl), server_tls != nullptr, self, std::move(tc));
    t->attach(backend.open_stream(fd_.get(), *this, *t));
    tls_ = t.get();
    io_ = std::move(t);
    return io_->start();
}

void session::open_handler() {
    life_.handler_open = true;
    group_.handler().on_open(*this);
}

// The TLS handshake is done: the handler meets the session now, with a fresh handshake and idle
// clock (the TLS handshake had its own deadline).
void session::established() {
    if (life_.state != phase::open) return;
    in_.last_rx_tick = life_.opened_tick = owner().now_tick();
    group_.list_for_sweep(*this);  // the stream's own state (TLS) is trimmed once it is quiet
    arm_timer();
    open_handler();
}

const tls_info* session::tls() const noexcept { return tls_ ? tls_->info() : nullptr; }

session::sweep_result session::trim_if_idle(std::uint64_t quiet_ticks) noexcept {
    sweep_result r;
    if (life_.state != phase::open || !out_.tx.empty()) return r;
    if (owner().now_tick() - in_.last_rx_tick < quiet_ticks) return r;
    if (out_.tx.has_chunks()) {
        out_.tx.trim();
        r.freed = true;
    }
    if (in_.rx.has_storage() && in_.rx.empty()) {
        release_rx(true);
        r.freed = true;
    }
    io_->trim();
    // Holding nothing now: off the sweep's list until a read takes a ring or a send queues.
    r.settled = !in_.rx.has_storage();
    return r;
}

void session::set_max_frame(std::uint32_t max_frame) noexcept {
    STRIX_ASSERT_OWNER(owner(), "session::set_max_frame");
    // Every ring is recv_buffer bytes (normalized to hold the group's max_frame); a frame must
    // fit in it whole, so that is the ceiling.
    in_.max_frame = static_cast<std::uint32_t>(std::min<std::size_t>(max_frame, group_.limits().recv_buffer));
}

void session::set_framer(const framer& f) noexcept {
    STRIX_ASSERT_OWNER(owner(), "session::set_framer");
    in_.framing = &f;
    in_.length_prefix = in_.framing == &length_prefix_framer();
}

void session::send(std::span<const std::byte> bytes) {
    STRIX_ASSERT_OWNER(owner(), "session::send");
    if (life_.state != phase::open) return;
    out_.tx.append(bytes);
    queued();
}

void session::send(std::span<const std::byte> head, std::span<const std::byte> body) {
    STRIX_ASSERT_OWNER(owner(), "session::send");
    if (life_.state != phase::open) return;
    // The second append extends the first one's segment: one iovec, one message counted.
    out_.tx.append(head);
    out_.tx.append(body);
    queued();
}

void session::send(shared_buffer_ptr buf) {
    auto n = buf->size();
    send(std::move(buf), 0, n);
}

void session::send(shared_buffer_ptr buf, std::size_t offset, std::size_t length) {
    STRIX_ASSERT_OWNER(owner(), "session::send");
    if (life_.state != phase::open) return;
    out_.tx.append(std::move(buf), offset, length);
    queued();
}

// Sends are counted per session and added to the shard's counter once per flush: a shared
// counter per message costs more than the append itself.
void session::publish_sends() noexcept {
    if (out_.unpublished_sends) {
        bump(group_.counters_.sends, out_.unpublished_sends);
        out_.unpublished_sends = 0;
    }
}

// After every append: enforce the hard output limit, else schedule this turn's flush. A slow
// consumer's output is dropped and the session closes in this turn's flush, not here: send()
// never calls back into the handler (a broadcast loop over its sessions stays valid).
inline void session::queued() {
    ++out_.unpublished_sends;
    group_.list_for_sweep(*this);
    if (out_.tx.size() > group_.limits().max_queued) [[unlikely]]
        drop_slow_consumer();
    owner_.mark_dirty(*this);
}

void session::drop_slow_consumer() noexcept {
    bump(group_.counters_.slow_consumers);
    log_limited(log_level::warn, "session {}: slow consumer ({} bytes queued), disconnecting", peer(), out_.tx.size());
    out_.tx.clear();
    life_.state = phase::closing;  // send() is a no-op from here; on_flush finalizes
    life_.close_reason = net_errc::slow_consumer;
}

// Readiness, for a backend that works by readiness (epoll): the stream does the I/O.
void session::on_io(std::uint32_t events) { io_->ready(events); }

bool session::acquire_rx() {
    if (in_.rx.has_storage()) return true;
    std::byte* p = group_.take_rx_buffer();
    if (!p) return false;
    in_.rx.attach(p, group_.limits().recv_buffer);
    group_.list_for_sweep(*this);
    return true;
}

void session::release_rx(bool cold) {
    if (!in_.rx.has_storage()) return;
    in_.rx.clear();
    if (std::byte* p = in_.rx.detach()) group_.give_rx_buffer(p, cold);
}

// --- stream_user: the backend's calls ----------------------------------------------------------

// The ring's free space for the next bytes, or why there is none: reading stopped (0: the bytes
// wait) or ended (-1).
int session::recv_space(iovec (&iov)[2]) {
    if (life_.state != phase::open) return -1;
    if (in_.suspended || in_.paused) return 0;
    if (out_.tx.size() >= group_.limits().high_water) {
        // Output is piling up: stop taking input until the peer drains it (resume_reading).
        pause_reading();
        return 0;
    }
    if (!acquire_rx()) {
        abort(std::make_error_code(std::errc::not_enough_memory));
        return -1;
    }
    // A partial frame near the end of the ring moves to its start before the read, so the read
    // does not wrap the frame around (which would cost a linearize of all it read).
    if (!in_.rx.empty() && in_.rx.write_span().size() < in_.rx.capacity() / 2) in_.rx.compact(in_.rx.capacity() / 8);
    const int n = in_.rx.write_iov(iov);
    if (n == 0) {
        // Full ring: only possible mid-frame when a frame is as large as the ring, which
        // max_frame forbids; treat as a framing error rather than spin.
        protocol_error(net_errc::frame_too_large);
        return -1;
    }
    return n;
}

// n bytes landed in the ring: count them and hand the complete frames over. The ring stays
// attached while the peer is active (taking and returning it per read cost more than the read's
// own work); the group's idle sweep returns it (trim_if_idle).
bool session::received(std::size_t n) {
    in_.rx.commit(n);
    bump(group_.counters_.reads);
    bump(group_.counters_.bytes_in, n);
    in_.last_rx_tick = owner_.now_tick();
    const bool go_on = process_frames() && !in_.paused && !in_.suspended;
    flush_early();
    return go_on && life_.state == phase::open;
}

// Output a read's frames made that is already flush_bytes or more goes out now rather than at the
// turn's end. A turn may bring megabytes from hundreds of connections (io_uring: one wait's
// completions; epoll: a read of up to a ring per ready socket), and by the turn's end what the
// first sessions queued has left the cache: the kernel's copy of it then reads memory (a 1 KiB
// WebSocket echo at depth 128 over 100 connections spent twice the CPU per message of the same
// echo over 10). Smaller output, the common case for small messages, still waits for the turn's
// gather write. May end the session (a send that fails), which the caller checks.
void session::flush_early() {
    const std::size_t limit = group_.limits().flush_bytes;
    if (limit == 0 || out_.tx.size() < limit || life_.state != phase::open || io_->send_busy()) return;
    publish_sends();
    io_->send_now(out_.tx);
}

void session::peer_closed() {
    if (life_.state == phase::open) close(net_errc::peer_closed);
}

void session::stream_failed(std::error_code ec) {
    if (life_.state == phase::closed) return;
    if (ec.category() != std::generic_category() || !expected_errno(ec.value()))
        log_limited(log_level::warn, "session {}: I/O: {}", peer(), ec);
    finalize(ec);
}

void session::sent(std::size_t n) {
    bump(group_.counters_.writes);
    bump(group_.counters_.bytes_out, n);
}

// The socket has room again, or an asynchronous send finished: flush the rest (appends made
// meanwhile, a close or a drain watch) at the end of the turn.
void session::send_ready() {
    if (life_.state != phase::closed) owner_.mark_dirty(*this);
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
        const auto span = in_.rx.read_span();
        const std::size_t off = hand_frames(span, frames, bad);
        if (life_.state == phase::closed) {
            // The handler aborted us: finalize() already released the ring.
            bump(group_.counters_.frames_in, frames);
            return false;
        }
        in_.rx.consume(off);
        if (life_.state != phase::open) break;  // the handler called close()
        if (bad) {
            bump(group_.counters_.frames_in, frames);
            protocol_error(bad);
            return false;
        }
        if (in_.suspended || in_.rx.empty()) break;
        // Bytes are left. If the span was used up to its end (its last frame ended exactly at
        // the ring's end), the rest is the part that wrapped to the ring's start, now a span of
        // its own: go on with it. If the span ended inside a frame whose rest wrapped, make the
        // rest contiguous and go on. Otherwise the last frame is incomplete: wait for the next
        // read. (Only the second case used to go on, so whole frames behind a frame that ended
        // at the ring's end waited for more bytes, and a client waiting for their answer waited
        // for the frame timeout.)
        const bool wrapped = in_.rx.size() > in_.rx.read_span().size();
        go_on = off == span.size() || wrapped;
        if (wrapped) in_.rx.linearize(in_.rx.size());
    }
    bump(group_.counters_.frames_in, frames);
    if (group_.frame_ticks_ && life_.state == phase::open) track_partial(frames);
    return life_.state == phase::open;
}

// Cuts the complete frames at the front of span and hands them to the handler in place. Stops at
// an incomplete frame, a framing error (bad), a close, or a suspension (the rest waits). Returns
// the bytes of the frames handed over; frames counts them.
std::size_t session::hand_frames(std::span<const std::byte> span, std::uint64_t& frames, frame_error& bad) {
    std::size_t off = 0;
    if (in_.large) {
        off = collect_large(span, frames, bad);
        if (in_.large || bad || in_.suspended) return off;
    }
    while (life_.state == phase::open && off < span.size()) {
        frame_cut cut;
        if (in_.length_prefix) {
            cut.size = length_prefix_size(span.subspan(off));
            if (cut.size == 1) {
                bad = net_errc::frame_too_small;
                break;
            }
        } else {
            cut = in_.framing->cut(span.subspan(off), in_.max_frame);
            if (cut.error) {
                bad = cut.error;
                break;
            }
        }
        if (cut.size > in_.max_frame) {
            if (cut.size > group_.limits().max_large_frame) {
                bad = net_errc::frame_too_large;
                break;
            }
            // Larger than the ring holds, within max_large_frame: collected outside it.
            in_.large = true;
            group_.large_frame_of(id_).total = cut.size;
            off += collect_large(span.subspan(off), frames, bad);
            if (in_.large || bad || in_.suspended) break;
            continue;
        }
        if (cut.size == 0 || cut.size > span.size() - off) break;  // need more bytes
        ++frames;
        group_.handler().on_frame(*this, span.subspan(off, cut.size));
        off += cut.size;
        if (in_.suspended) break;  // the handler paused input: the rest waits
    }
    return off;
}

// Adds the front of bytes to the large frame being collected and hands the frame over once it is
// whole. The buffer grows with what arrives, at least doubling (a few reallocations for any size),
// never past the frame's size: a header that claims more than the peer sends costs nothing.
// Returns the bytes taken.
std::size_t session::collect_large(std::span<const std::byte> bytes, std::uint64_t& frames, frame_error& bad) {
    auto& f = group_.large_frame_of(id_);
    const std::size_t n = std::min(bytes.size(), f.total - f.size);
    if (f.size + n > f.cap) {
        constexpr std::size_t first = std::size_t(1) << 20;
        const std::size_t doubled = f.cap > f.total / 2 ? f.total : std::max(2 * f.cap, first);
        const std::size_t cap = std::min(f.total, std::max(f.size + n, doubled));
        void* p = std::realloc(f.data.get(), cap);
        if (!p) {
            bad = std::make_error_code(std::errc::not_enough_memory);
            return 0;
        }
        (void)f.data.release();  // realloc freed or kept it; p owns the bytes now
        f.data.reset(static_cast<std::byte*>(p));
        f.cap = cap;
    }
    if (n) std::memcpy(f.data.get() + f.size, bytes.data(), n);
    f.size += n;
    if (f.size < f.total) return n;
    auto frame = std::move(f.data);
    const std::size_t size = f.total;
    drop_large();
    ++frames;
    group_.handler().on_frame(*this, std::span<const std::byte>(frame.get(), size));
    return n;
}

void session::drop_large() noexcept {
    if (!in_.large) return;
    in_.large = false;
    group_.drop_large_frame(id_);
}

// The bytes still missing from the incomplete frame at the front of the ring; 0 when its size is
// not known yet (its header is incomplete, or the framer sizes a frame only once it is whole).
std::size_t session::rest_of_ring_frame() {
    const std::size_t have = in_.rx.size();
    const auto head = in_.rx.linearize(std::min<std::size_t>(have, 16));
    std::size_t size = 0;
    if (in_.length_prefix) {
        size = length_prefix_size(head);
    } else {
        const frame_cut cut = in_.framing->cut(head, in_.max_frame);
        if (cut.error) return 0;  // refused the usual way, from the ring
        size = cut.size;
    }
    if (size <= have || size > in_.max_frame) return 0;
    return size - have;
}

// The backend's own buffer holds what one receive brought (io_uring): the frames in it are
// handed over where they lie, saving the copy into the ring. A frame the ring holds the start of
// is completed first with exactly its missing bytes; an incomplete frame at the end is left to
// received() (copied into the ring). Reads and bytes are counted as by received(): a read once,
// here when nothing is left for received().
std::size_t session::received_in_place(std::span<std::byte> data) {
    if (life_.state != phase::open || in_.suspended || in_.paused) return 0;
    if (out_.tx.size() >= group_.limits().high_water) return 0;  // recv_space pauses reading
    // The ring is held as by a copying read (the pool's accounting and the idle sweep see the
    // same sessions either way); a failure is left to recv_space, which aborts the session.
    if (!acquire_rx()) return 0;
    std::size_t taken = 0;
    if (!in_.rx.empty()) {
        const std::size_t need = rest_of_ring_frame();
        if (need == 0 || need > data.size() || need > in_.rx.free_space()) return 0;
        in_.rx.write(data.first(need));
        taken = need;
        in_.last_rx_tick = owner_.now_tick();
        bump(group_.counters_.bytes_in, need);
        if (!process_frames() || in_.paused || in_.suspended || !in_.rx.empty()) {
            if (taken == data.size()) bump(group_.counters_.reads);
            return taken;
        }
    }
    std::uint64_t frames = 0;
    frame_error bad;
    const std::size_t off = hand_frames(data.subspan(taken), frames, bad);
    taken += off;
    bump(group_.counters_.frames_in, frames);
    if (taken > 0) {
        in_.last_rx_tick = owner_.now_tick();
        bump(group_.counters_.bytes_in, off);
    }
    if (taken == data.size()) bump(group_.counters_.reads);
    if (life_.state != phase::open) return taken;  // closed by the handler: the rest is dropped
    if (bad) {
        bump(group_.counters_.reads);
        protocol_error(bad);
        return data.size();
    }
    // The ring is empty here: an incomplete frame left over starts a new deadline in received().
    if (frames > 0) in_.partial_deadline_tick = no_deadline;
    if (group_.frame_ticks_ && taken == data.size()) track_partial(frames);
    if (frames > 0) flush_early();
    return taken;
}

// frame_timeout bookkeeping, once per batch of frames (not per frame, not per byte). The deadline
// belongs to the frame whose first byte is the first unconsumed byte of the ring: a batch that
// completed a frame and left bytes behind started a new frame in this read; a batch that completed
// nothing left the same frame incomplete, whose deadline stands. The timer is re-armed only when
// it would fire later than the new deadline: once armed it re-arms itself for what is left.
void session::track_partial(std::uint64_t frames) noexcept {
    if (in_.rx.empty() && !in_.large) {
        in_.partial_deadline_tick = no_deadline;
        return;
    }
    if (frames == 0 && in_.partial_deadline_tick != no_deadline) return;
    in_.partial_deadline_tick = owner().now_tick() + group_.frame_ticks_;
    if (!timer_.armed() || timer_.deadline() > in_.partial_deadline_tick) arm_timer();
}

// Reading resumes after a pause or a suspension: the incomplete frame gets a full frame_timeout
// from now (the peer could not send while we did not read).
void session::restart_partial() noexcept {
    if (in_.partial_deadline_tick == no_deadline || life_.state != phase::open) return;
    in_.partial_deadline_tick = owner().now_tick() + group_.frame_ticks_;
    if (!timer_.armed() || timer_.deadline() > in_.partial_deadline_tick) arm_timer();
}

void session::protocol_error(std::error_code ec) {
    bump(group_.counters_.frame_errors);
    log_limited(log_level::warn, "session {}: {}; closing", peer(), ec);
    in_.rx.clear();
    drop_large();
    group_.handler().on_protocol_error(*this, ec);
    close(ec);
}

void session::pause_reading() {
    if (in_.paused) return;
    in_.paused = true;
    io_->pause_receive();
    in_.paused_since_tick = owner().now_tick();
    bump(group_.counters_.read_pauses);
    arm_timer();
}

void session::suspend_reading(bool on) {
    STRIX_ASSERT_OWNER(owner(), "session::suspend_reading");
    if (in_.suspended == on) return;
    in_.suspended = on;
    if (on) {
        io_->pause_receive();
        return;
    }
    if (life_.state != phase::open) return;
    restart_partial();
    // Frames left in the ring when input was paused go first (a full ring must not be mistaken
    // for an oversized frame by the next read).
    if (!in_.rx.empty() && !process_frames()) return;
    update_receiving();
}

void session::resume_reading() {
    if (!in_.paused) return;
    in_.paused = false;
    if (in_.suspended) return;
    restart_partial();
    update_receiving();
}

// Reading goes on once neither backpressure nor the application holds it.
void session::update_receiving() {
    if (life_.state == phase::open && !in_.paused && !in_.suspended) io_->resume_receive();
}

void session::on_flush() {
    if (life_.state == phase::closed) return;
    flush_now();
    if (life_.state == phase::closed) return;
    if (in_.paused && out_.tx.size() <= group_.limits().low_water) resume_reading();
    if (life_.state == phase::closing && out_.tx.empty() && io_->finish()) {
        finalize(life_.close_reason);
        return;
    }
    if (life_.drain_watch && out_.tx.empty() && life_.state == phase::open) {
        life_.drain_watch = false;
        group_.handler().on_drained(*this);
    }
}

void session::flush_now() {
    publish_sends();
    io_->send(out_.tx);
}

void session::close(std::error_code reason) {
    STRIX_ASSERT_OWNER(owner(), "session::close");
    if (life_.state != phase::open) return;
    life_.close_reason = reason ? reason : make_error_code(net_errc::closed_by_app);
    if (out_.tx.empty() && (!io_ || io_->finish())) {
        finalize(life_.close_reason);
        return;
    }
    if (life_.state != phase::open) return;  // finish() found the stream broken: finalized
    life_.state = phase::closing;
    ::shutdown(fd_.get(), SHUT_RD);
    owner().hold();
    life_.holds_shard = true;
    // Bound the flush: a peer that stops reading must not keep us forever.
    life_.close_deadline_tick =
        owner().now_tick() + std::max<std::uint64_t>(1, owner().ticks_for(group_.limits().close_linger));
    arm_timer();
    owner().mark_dirty(*this);
}

void session::abort(std::error_code reason) {
    STRIX_ASSERT_OWNER(owner(), "session::abort");
    if (life_.state == phase::closed) return;
    out_.tx.clear();
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
    if (life_.state == phase::closing) {
        due = life_.close_deadline_tick;
    } else if (life_.state == phase::open) {
        if (auto idle = sh.ticks_for(lim.idle_timeout)) due = std::min(due, in_.last_rx_tick + idle);
        if (!life_.handshake_done)
            if (auto hs = sh.ticks_for(lim.handshake_timeout)) due = std::min(due, life_.opened_tick + hs);
        if (!in_.paused && !in_.suspended) due = std::min(due, in_.partial_deadline_tick);
        if (in_.paused)
            if (auto stall = sh.ticks_for(lim.stall_timeout)) due = std::min(due, in_.paused_since_tick + stall);
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
    if (life_.state == phase::closing) {
        if (now >= life_.close_deadline_tick) {
            log_limited(log_level::info, "session {}: close linger expired with {} bytes unsent", peer(),
                        out_.tx.size());
            abort(life_.close_reason);
            return;
        }
    } else if (life_.state == phase::open) {
        auto hs = sh.ticks_for(lim.handshake_timeout);
        if (hs && !life_.handshake_done && now - life_.opened_tick >= hs) {
            expire(net_errc::handshake_timeout, group_.counters_.handshake_timeouts);
            return;
        }
        if (!in_.paused && !in_.suspended && now >= in_.partial_deadline_tick) {
            expire(net_errc::frame_timeout, group_.counters_.frame_timeouts);
            return;
        }
        auto idle = sh.ticks_for(lim.idle_timeout);
        if (idle && now - in_.last_rx_tick >= idle) {
            bump(group_.counters_.idle_timeouts);
            log_limited(log_level::info, "session {}: idle timeout", peer());
            abort(net_errc::idle_timeout);
            return;
        }
        auto stall = sh.ticks_for(lim.stall_timeout);
        if (stall && in_.paused && now - in_.paused_since_tick >= stall) {
            bump(group_.counters_.slow_consumers);
            log_limited(log_level::warn, "session {}: slow consumer (output not drained for {} ms), disconnecting",
                        peer(), lim.stall_timeout.count());
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
void session::expire(std::error_code reason, counter& count) {
    bump(count);
    log_limited(log_level::info, "session {}: {}; closing", peer(), reason);
    in_.partial_deadline_tick = no_deadline;
    in_.rx.clear();
    group_.handler().on_protocol_error(*this, reason);
    close(reason);
}

void session::finalize(std::error_code reason) {
    if (life_.state == phase::closed) return;
    life_.state = phase::closed;
    auto& sh = owner();
    sh.timers().cancel(timer_);
    publish_sends();
    if (life_.holds_shard) {
        sh.release_hold();
        life_.holds_shard = false;
    }
    if (io_) io_->close();  // before the socket closes: its number may be reused at once
    fd_.reset();
    group_.released_bytes_ += out_.tx.size();  // the idle sweep may hand the pages back (malloc_trim)
    if (!io_ || !io_->send_busy()) out_.tx.clear();  // else the kernel still reads it: cleared on completion
    release_rx();
    drop_large();
    // Keep this object alive for the rest of the turn: events already fetched may name it.
    sh.retire(session_ptr(this));
    if (life_.handler_open) group_.handler().on_close(*this, reason);
    state_.reset();
    group_.forget(*this);
    if (origin_) origin_->session_closed(life_.handler_open ? std::error_code{} : reason);
}

}  // namespace strix
