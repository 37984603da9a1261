// zmtp_pipe: one tcp:// or ipc:// peer of a socket, a session running ZMTP 3.1 (greeting, READY,
// commands, multipart assembly, heartbeats), and zmtp_peers, the session handler that gives each
// session its pipe (zmtp_pipe.hpp). transport/inproc.cpp holds the other transport's pipe. With
// CURVE or PLAIN the pipe hands the handshake's commands to its mechanism
// (security/mechanism.hpp) instead of READY, and with CURVE boxes every frame after it
// (put_boxed, unbox). Where the mechanism (or NULL with a zap_domain) needs ZAP, the handshake
// suspends until the answer (ask_zap; the handler socket's answers come through
// security/zap_client.hpp), and the connection's message properties (properties.hpp) are built
// when it completes.
#include "link/zmtp/zmtp_pipe.hpp"

#include "link/pattern/pattern.hpp"
#include "link/pattern/socket_types.hpp"
#include "link/properties.hpp"
#include "link/security/mechanism.hpp"
#include "link/security/zap_client.hpp"
#include "link/socket_core.hpp"

#include <strix/core/shard.hpp>
#include <strix/net/framer.hpp>
#include <strix/net/net_errc.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>

namespace strix::link::detail {
namespace {

constexpr std::size_t max_parts = 1024;  // parts of one incoming message

// One tcp:// or ipc:// peer: the session's state (session::emplace_state), from the greeting to
// the end of the connection.
class zmtp_pipe final : public pipe, private zap_waiter {
public:
    enum class phase : std::uint8_t { greeting, handshake, ready };

    zmtp_pipe(socket_core& c, const socket_options& o, session& s, std::string addr)
        : core_(c),
          opts_(o),
          sess_(&s),
          addr_(std::move(addr)),
          peer_addr_(peer_address_of(s.native_handle())),
          hs_timer_([this] { on_handshake_timer(); }),
          ping_timer_([this] { on_ping_timer(); }),
          ttl_timer_([this] { on_ttl_timer(); }) {
        id = c.next_pipe_id();
        const mechanism_kind k = check_security(opts_.security);
        if (k != mechanism_kind::null) {
            mechanism_context ctx;
            ctx.opts = &opts_.security;
            ctx.peer_address = peer_addr_;
            ctx.zap_request_id = id;
            const socket_type_info* me = find_type_info(c.type);
            const std::string_view type_name = to_string(c.type);
            put_property(ctx.metadata, "Socket-Type", as_bytes(type_name));
            if (me && me->announces_identity) put_property(ctx.metadata, "Identity", as_bytes(opts_.routing_id));
            mech_ = make_mechanism(k, std::move(ctx));
        }
    }
    ~zmtp_pipe() override {
        stop_zap();
        auto& w = core_.owner.timers();
        w.cancel(hs_timer_);
        w.cancel(ping_timer_);
        w.cancel(ttl_timer_);
    }

    void start() {
        std::byte g[zmtp::greeting_size];
        if (mech_)
            zmtp::write_greeting(std::span<std::byte, zmtp::greeting_size>(g), mech_->name(), mech_->as_server());
        else
            zmtp::write_greeting(std::span<std::byte, zmtp::greeting_size>(g));
        put(bytes_view(g, sizeof g));
        // READY waits for the peer's greeting (on_frame), as libzmq's does: sent right behind
        // ours, it reached libzmq before libzmq's own READY left, and libzmq, finding our type
        // incompatible, closed without a READY, so strix could neither see nor count the mismatch.
        if (opts_.handshake_ivl.count() > 0)
            core_.owner.timers().schedule(hs_timer_, core_.owner.ticks_for(opts_.handshake_ivl));
    }

    // --- pipe --------------------------------------------------------------------------------
    bool full() noexcept override {
        if (!core_.opts.sndhwm) return false;
        // Messages whose last byte the session has written are out of the queue.
        const std::uint64_t written = appended_ - sess_->queued_bytes();
        while (!ends_.empty() && ends_.front() <= written) ends_.pop_front();
        return ends_.size() >= core_.opts.sndhwm;
    }

    void write(outgoing& m) override {
        write_frames(m);
        // The byte count at the message's end marks when it leaves the queue (see full()).
        if (core_.opts.sndhwm) ends_.push_back(appended_);
    }

    void write_frames(outgoing& m) {
        if (boxed_) {
            const auto parts = m.parts();
            for (std::size_t i = 0; i < parts.size(); ++i)
                put_boxed(i + 1 < parts.size() ? zmtp::flag_more : 0, parts[i]);
            return;
        }
        if (m.shared && !m.by_reference()) {
            put(m.wire());  // one encoding referenced by every peer
            return;
        }
        const auto parts = m.parts();
        for (std::size_t i = 0; i < parts.size(); ++i) {
            const std::uint8_t flags = i + 1 < parts.size() ? zmtp::flag_more : 0;
            const bytes_view b = parts[i];
            if (b.size() <= small_copy) {
                // Header and body in one append: the common small message costs one copy.
                std::byte buf[zmtp::max_header + small_copy];
                const std::size_t h = zmtp::write_header(buf, flags, b.size());
                if (!b.empty()) std::memcpy(buf + h, b.data(), b.size());
                put(bytes_view(buf, h + b.size()));
                continue;
            }
            std::byte hdr[zmtp::max_header];
            const std::size_t h = zmtp::write_header(hdr, flags, b.size());
            put(bytes_view(hdr, h));
            if (const part* src = m.source(i))
                put(src->buffer(), src->offset(), src->size());  // the application's buffer, by reference
            else
                put(b);
        }
    }

    void send_subscription(bool on, bytes_view topic) override {
        if (v31_) {
            put_command(zmtp::command_frame(on ? "SUBSCRIBE" : "CANCEL", topic));
            return;
        }
        std::vector<std::byte> body;
        body.reserve(topic.size() + 1);
        body.push_back(on ? std::byte{1} : std::byte{0});
        body.insert(body.end(), topic.begin(), topic.end());
        if (boxed_) {
            put_boxed(0, body);
            return;
        }
        std::byte hdr[zmtp::max_header];
        put(bytes_view(hdr, zmtp::write_header(hdr, 0, body.size())));
        put(bytes_view(body));
    }

    void terminate(std::error_code why) override { sess_->close(why); }
    const std::string& address() const noexcept override { return addr_; }
    void watch_writable() noexcept override {
        watching_ = true;
        sess_->notify_when_drained();
    }
    bool take_watch() noexcept {
        const bool w = watching_;
        watching_ = false;
        return w;
    }

    // --- frames from the session ------------------------------------------------------------
    void on_frame(std::span<const std::byte> whole) {
        last_rx_tick_ = core_.owner.now_tick();
        if (phase_ == phase::ready) {
            zmtp::frame f = zmtp::split(whole);
            if (boxed_ && !unbox(f)) return;
            if (f.command()) {
                on_command(f.body);
                return;
            }
            on_message_frame(f);
            return;
        }
        if (phase_ == phase::greeting)
            on_greeting(whole);
        else
            on_handshake_frame(whole);
    }

    void on_greeting(std::span<const std::byte> whole) {
        zmtp::greeting g;
        if (auto ec = zmtp::parse_greeting(whole.first<zmtp::greeting_size>(), g)) {
            fail(ec);
            return;
        }
        const char* mine = mech_ ? mech_->name() : "NULL";
        if (g.mechanism != mine) {
            put(bytes_view(zmtp::error_frame("unsupported security mechanism " + g.mechanism)));
            fail(link_errc::unsupported_mechanism, g.mechanism);
            return;
        }
        v31_ = g.major > 3 || g.minor >= 1;
        phase_ = phase::handshake;
        sess_->set_framer(zmtp::frame_framer());
        if (mech_) {
            std::vector<std::byte> out;
            mech_->start(out);
            if (!out.empty()) put(bytes_view(out));
            return;
        }
        // With a zap_domain, NULL asks ZAP first (once the peer's READY is here): READY waits.
        if (!null_zap()) put_ready();
    }

    // Handshake: READY (or ERROR), or the mechanism's commands, and nothing else.
    void on_handshake_frame(std::span<const std::byte> whole) {
        const zmtp::frame f = zmtp::split(whole);
        zmtp::command cmd;
        if (f.command() && mech_ && libzmq_plain_error(f.body)) {
            fail(link_errc::peer_error, error_reason(f.body.subspan(5)));
            return;
        }
        if (!f.command() || !zmtp::parse_command(f.body, cmd)) {
            fail(link_errc::bad_handshake);
            return;
        }
        if (cmd.name == "ERROR") {
            fail(link_errc::peer_error, error_reason(cmd.data));
            return;
        }
        if (zap_id_) {
            // Every mechanism's client waits for the server's answer, which waits for ZAP's.
            fail(link_errc::bad_handshake, "command while ZAP decides");
            return;
        }
        if (mech_) {
            std::vector<std::byte> out;
            const step st = mech_->on_command(cmd, out);
            if (!out.empty()) put(bytes_view(out));  // WELCOME, INITIATE, READY or ERROR
            handshake_step(st);
            return;
        }
        if (cmd.name != "READY") {
            fail(link_errc::bad_handshake);
            return;
        }
        if (null_zap()) {
            null_ready_.assign(cmd.data.begin(), cmd.data.end());
            mechanism_context ctx;
            ctx.opts = &opts_.security;
            ctx.peer_address = peer_addr_;
            ctx.zap_request_id = id;
            ask_zap(make_zap_request(ctx, "NULL", {}, cmd.data));
            return;
        }
        accept_peer(cmd.data);
    }

    // The peer's READY properties (NULL's READY, or what the mechanism received): its socket
    // type must talk to ours; then the peer is attached, its messages carrying the connection's
    // properties (built here, once).
    void accept_peer(bytes_view announced) {
        bool have_type = false, type_ok = false;
        const bool props_ok = zmtp::for_each_property(announced, [&](std::string_view name, bytes_view value) {
            if (zmtp::iequals(name, "Socket-Type")) {
                have_type = true;
                const std::string_view t = as_text(value);
                if (const auto st = type_from_name(t)) {
                    peer_type = *st;
                    type_ok = compatible(core_.type, *st);
                }
                peer_type_name_ = std::string(t);
            } else if (zmtp::iequals(name, "Identity")) {
                peer_identity = std::string(as_text(value));
            }
        });
        if (!props_ok || !have_type) {
            fail(link_errc::bad_handshake);
            return;
        }
        if (!type_ok) {
            put_command(zmtp::error_frame("Invalid socket type"));
            fail(link_errc::socket_type_mismatch, peer_type_name_);
            return;
        }
        phase_ = phase::ready;
        props = make_properties(peer_addr_, zap_done_ ? &zap_ : nullptr, announced);
        core_.owner.timers().cancel(hs_timer_);
        if (opts_.heartbeat_ivl.count() > 0)
            core_.owner.timers().schedule(ping_timer_, core_.owner.ticks_for(opts_.heartbeat_ivl));
        core_.event(socket_event::kind::handshake_succeeded, addr_, {}, peer_type_name_);
        core_.attach(*this);
    }

    // --- ZAP ------------------------------------------------------------------------------------
    // The in-process function answers now; a handler socket bound at inproc://zeromq.zap.01
    // answers later (zap_answered, from the loop: the handshake waits, the shard does not); with
    // neither, libzmq 4.3 lets CURVE and NULL peers in unauthenticated and refuses PLAIN ones.
    void ask_zap(const zap_request& r) {
        if (const auto& f = opts_.security.zap) {
            zap_answered(call_zap(f, r));
            return;
        }
        if ((zap_id_ = core_.zap().ask(r, opts_.routing_id, *this))) return;
        if (mech_ && std::string_view(mech_->name()) == "PLAIN") {
            fail(link_errc::zap_unavailable, "no ZAP handler at inproc://zeromq.zap.01");
            return;
        }
        resume(zap_reply{});
    }

    // The handshake may have ended meanwhile (failed, timed out, or the peer went).
    bool zap_pending_ended() const noexcept { return failed_ || phase_ != phase::handshake || !sess_->is_open(); }

    void zap_answered(const zap_reply& r) override {
        zap_id_ = 0;
        if (zap_pending_ended()) return;
        zap_ = r;
        zap_done_ = true;
        resume(r);
    }

    void zap_failed(std::error_code ec, std::string detail) override {
        zap_id_ = 0;
        if (zap_pending_ended()) return;
        fail(ec, std::move(detail));
    }

    // The handshake goes on with ZAP's answer (or the accepting default when nobody was asked).
    void resume(const zap_reply& r) {
        std::vector<std::byte> out;
        if (mech_) {
            const step st = mech_->on_zap(r, out);
            if (!out.empty()) put(bytes_view(out));
            handshake_step(st);
            return;
        }
        if (!r.accepted()) {
            const step st = zap_refusal(r, out);
            if (!out.empty()) put(bytes_view(out));
            fail(st.error, st.detail);
            return;
        }
        put_ready();
        accept_peer(bytes_view(null_ready_));
    }

    void stop_zap() noexcept {
        if (!zap_id_) return;
        core_.zap().forget(zap_id_);
        zap_id_ = 0;
    }

    phase current_phase() const noexcept { return phase_; }
    /// A handshake that ended without success and was not yet counted as failed.
    bool handshake_unfinished() const noexcept { return phase_ != phase::ready && !failed_; }
    void mark_failed() noexcept { failed_ = true; }

private:
    static constexpr std::size_t small_copy = 512;

    void handshake_step(const step& st) {
        switch (st.st) {
            case step::status::more: break;
            case step::status::failed: fail(st.error, st.detail); break;
            case step::status::zap: ask_zap(mech_->pending_zap()); break;
            case step::status::done:
                boxed_ = mech_->boxes();
                accept_peer(bytes_view(mech_->peer_metadata()));
                break;
        }
    }

    // NULL asks ZAP only when the socket names a domain (libzmq's rule).
    bool null_zap() const noexcept { return !mech_ && !opts_.security.zap_domain.empty(); }

    void put_ready() {
        const socket_type_info* me = find_type_info(core_.type);
        const bytes_view idv = as_bytes(opts_.routing_id);
        put(bytes_view(zmtp::ready_frame(to_string(core_.type), me && me->announces_identity ? &idv : nullptr)));
    }

    // Every byte this pipe queues on its session goes through put(), so appended_ minus what is
    // still queued is what the session has written.
    void put(bytes_view b) {
        appended_ += b.size();
        sess_->send(b);
    }
    void put(const shared_buffer_ptr& buf) {
        appended_ += buf->size();
        sess_->send(buf);
    }
    void put(const shared_buffer_ptr& buf, std::size_t off, std::size_t len) {
        appended_ += len;
        sess_->send(buf, off, len);
    }

    // A command frame (header included) as it goes out: itself, or boxed after a CURVE handshake.
    void put_command(const std::vector<std::byte>& whole) {
        if (!boxed_) {
            put(bytes_view(whole));
            return;
        }
        put_boxed(zmtp::flag_command, zmtp::split(bytes_view(whole)).body);
    }

    // One frame as a CURVE MESSAGE: small ones through the stack, large ones through tx_.
    void put_boxed(std::uint8_t flags, bytes_view body) {
        const std::size_t need = body.size() + mechanism::boxed_overhead;
        if (need <= sizeof(boxbuf_)) {
            put(bytes_view(boxbuf_, mech_->encode(flags, body, boxbuf_)));
            return;
        }
        tx_.resize(need);
        put(bytes_view(tx_.data(), mech_->encode(flags, body, tx_.data())));
        if (tx_.capacity() > 256 * 1024) std::vector<std::byte>().swap(tx_);
    }

    // Opens a CURVE MESSAGE in place of the frame f; false (the peer dropped) when it does not.
    bool unbox(zmtp::frame& f) {
        std::uint8_t flags = 0;
        if (!mech_->decode(f.body, flags, rx_)) {
            ++core_.stats.protocol_errors;
            drop(link_errc::bad_crypto);
            return false;
        }
        if (rx_.size() - 1 > opts_.max_msg_size) {
            ++core_.stats.protocol_errors;
            drop(link_errc::message_too_large);
            return false;
        }
        f.flags = flags;
        f.body = bytes_view(rx_).subspan(1);
        return true;
    }

    // libzmq 4.3.4's PLAIN server writes its ERROR as 0x5E "RROR" (the C literal "\x05ERROR"
    // reads \x05E as one hex escape) followed by the reason: read it as the ERROR it means.
    static bool libzmq_plain_error(bytes_view body) {
        return body.size() >= 6 && body[0] == std::byte{0x5E} && std::memcmp(body.data() + 1, "RROR", 4) == 0;
    }

    static std::string error_reason(bytes_view data) {
        if (data.empty()) return {};
        const std::size_t n = std::min<std::size_t>(static_cast<std::size_t>(data[0]), data.size() - 1);
        return std::string(as_text(data.subspan(1, n)));
    }

    // Closes a connected peer for a reason found here. Detached first, so the socket hears one
    // disconnected event, this one (on_close would report a second, with the session's reason).
    void drop(std::error_code ec, std::string detail = {}) {
        core_.detach(*this);
        core_.event(socket_event::kind::disconnected, addr_, ec, std::move(detail));
        // A peer that stopped answering reads nothing either: waiting to flush its output would
        // last the socket's linger (which may have no end), so it goes now, as in libzmq.
        if (ec == link_errc::heartbeat_timeout)
            sess_->abort(ec);
        else
            sess_->close(ec);
    }

    void fail(std::error_code ec, std::string detail = {}) {
        stop_zap();
        failed_ = true;
        ++core_.stats.handshake_failures;
        core_.event(socket_event::kind::handshake_failed, addr_, ec, std::move(detail));
        sess_->close(ec);  // flushes an ERROR queued just before
    }

    void on_command(bytes_view body) {
        zmtp::command cmd;
        if (!zmtp::parse_command(body, cmd)) {
            ++core_.stats.protocol_errors;
            drop(link_errc::bad_frame);
            return;
        }
        if (cmd.name == "PING") {
            if (cmd.data.size() < 2) return;
            const unsigned ttl = (static_cast<unsigned>(cmd.data[0]) << 8) | static_cast<unsigned>(cmd.data[1]);
            put_command(zmtp::pong_frame(cmd.data.subspan(2)));
            if (ttl > 0 && !ttl_timer_.armed()) {
                peer_ttl_ = std::chrono::milliseconds(ttl * 100u);
                core_.owner.timers().schedule(ttl_timer_, core_.owner.ticks_for(peer_ttl_));
            }
        } else if (cmd.name == "SUBSCRIBE") {
            core_.pat->subscription(*this, true, cmd.data);
        } else if (cmd.name == "CANCEL") {
            core_.pat->subscription(*this, false, cmd.data);
        } else if (cmd.name == "ERROR") {
            drop(link_errc::peer_error, error_reason(cmd.data));
        }
        // PONG needs nothing (any frame counts as traffic); unknown commands are ignored.
    }

    void on_message_frame(const zmtp::frame& f) {
        if (asm_parts_.empty() && !f.more()) {
            // The common case: a one-part message, handed over straight from the receive ring.
            ++core_.stats.messages_in;
            core_.pat->receive(*this, std::span(&f.body, 1));
            return;
        }
        const std::size_t most = opts_.max_msg_size > SIZE_MAX / 4 ? SIZE_MAX : 4 * opts_.max_msg_size;
        if (asm_parts_.size() + 1 >= max_parts || asm_.size() + f.body.size() > most) {
            ++core_.stats.protocol_errors;
            drop(link_errc::message_too_large, "too many parts");
            return;
        }
        if (f.more()) {
            asm_parts_.emplace_back(asm_.size(), f.body.size());
            asm_.insert(asm_.end(), f.body.begin(), f.body.end());
            return;
        }
        // The last part stays in the ring; the earlier ones were copied as they came.
        views_.clear();
        for (auto [off, len] : asm_parts_) views_.emplace_back(asm_.data() + off, len);
        views_.push_back(f.body);
        asm_parts_.clear();
        ++core_.stats.messages_in;
        core_.pat->receive(*this, views_);
        asm_.clear();
        if (asm_.capacity() > 64 * 1024) asm_.shrink_to_fit();
    }

    void on_handshake_timer() {
        if (phase_ != phase::ready) fail(link_errc::handshake_timeout);
    }

    void on_ping_timer() {
        auto& sh = core_.owner;
        const auto timeout = opts_.heartbeat_timeout.count() > 0 ? opts_.heartbeat_timeout : opts_.heartbeat_ivl;
        if (ping_outstanding_ && sh.now_tick() - ping_sent_tick_ >= sh.ticks_for(timeout) &&
            last_rx_tick_ < ping_sent_tick_) {
            drop(link_errc::heartbeat_timeout);
            return;
        }
        if (!ping_outstanding_ || last_rx_tick_ >= ping_sent_tick_) {
            const auto ttl = static_cast<std::uint16_t>(std::min<long long>(opts_.heartbeat_ttl.count() / 100, 65535));
            put_command(zmtp::ping_frame(ttl, {}));
            ping_outstanding_ = true;
            ping_sent_tick_ = sh.now_tick();
        }
        // Tick at the shorter of interval and timeout so a lost peer is noticed in time.
        sh.timers().schedule(ping_timer_, sh.ticks_for(std::min(opts_.heartbeat_ivl, timeout)));
    }

    void on_ttl_timer() {
        auto& sh = core_.owner;
        const auto ttl = sh.ticks_for(peer_ttl_);
        const auto quiet = sh.now_tick() - last_rx_tick_;
        if (quiet >= ttl) {
            drop(link_errc::heartbeat_timeout, "peer's TTL");
            return;
        }
        sh.timers().schedule(ttl_timer_, ttl - quiet);
    }

    socket_core& core_;
    const socket_options& opts_;  // as at the bind or connect (sndhwm: the socket's, live)
    session* sess_;
    std::string addr_;
    std::string peer_addr_;  // libzmq's form: ZAP's address frame, the Peer-Address property
    std::string peer_type_name_;
    timer_node hs_timer_, ping_timer_, ttl_timer_;
    std::chrono::milliseconds peer_ttl_{0};
    std::uint64_t last_rx_tick_ = 0;
    std::uint64_t ping_sent_tick_ = 0;
    std::uint64_t appended_ = 0;     // bytes ever queued on the session
    std::deque<std::uint64_t> ends_;  // appended_ at the end of each message still queued
    phase phase_ = phase::greeting;
    bool v31_ = true;
    bool watching_ = false;
    bool ping_outstanding_ = false;
    bool failed_ = false;  // the handshake failure was counted (fail, on_protocol_error)
    std::unique_ptr<mechanism> mech_;  // PLAIN or CURVE; null for NULL
    std::uint64_t zap_id_ = 0;          // the request a handler socket has yet to answer
    bool zap_done_ = false;             // ZAP answered (zap_): User-Id and its metadata apply
    zap_reply zap_;
    std::vector<std::byte> null_ready_;  // NULL with ZAP: the peer's READY, until ZAP answers
    bool boxed_ = false;               // CURVE after the handshake: every frame is a MESSAGE
    std::vector<std::byte> rx_;        // an opened MESSAGE: flags, then the body
    std::vector<std::byte> tx_;        // a large frame being boxed
    std::byte boxbuf_[small_copy + mechanism::boxed_overhead];
    std::vector<std::byte> asm_;
    std::vector<std::pair<std::size_t, std::size_t>> asm_parts_;
    std::vector<bytes_view> views_;
};

}  // namespace

session_group_config zmtp_group_config(const socket_options& o) {
    session_group_config g;
    g.framing = &zmtp::greeting_framer();
    // The session refuses a frame above the limit from its header, before buffering it. Parts up
    // to ring_part come through the connection's receive ring (sized for them); larger ones, up
    // to max_msg_size, are collected in a buffer of their own as their bytes arrive
    // (session_limits::max_large_frame). CURVE's MESSAGE adds its name, nonce, MAC and flags
    // around each part.
    constexpr std::size_t ring_part = std::size_t(16) << 20;
    const std::size_t overhead = zmtp::max_header + (check_security(o.security) == mechanism_kind::curve ? 64 : 0);
    g.limits.max_frame = static_cast<std::uint32_t>(std::min(o.max_msg_size, ring_part) + overhead);
    if (o.max_msg_size > ring_part) {
        // PTRDIFF_MAX at most: no buffer can be larger, and the framer's "unrepresentable" is above.
        constexpr std::size_t most = PTRDIFF_MAX;
        g.limits.max_large_frame = o.max_msg_size > most - overhead ? most : o.max_msg_size + overhead;
    }
    g.limits.max_queued = SIZE_MAX;        // the high-water mark (messages) bounds output instead
    g.limits.stall_timeout = std::chrono::milliseconds(0);
    g.limits.high_water = 4 * 1024 * 1024;
    g.limits.low_water = 1024 * 1024;
    // A closed socket's sessions flush for as long as its linger allows (socket_core::close ends
    // them at the linger's end; a negative linger waits as long as the peer reads).
    g.limits.close_linger = o.linger.count() < 0 ? std::chrono::hours(24 * 365) : o.linger;
    g.keepalive = {o.tcp_keepalive, o.tcp_keepalive_idle, o.tcp_keepalive_intvl, o.tcp_keepalive_cnt};
    return g;
}

void zmtp_peers::on_open(session& s) {
    if (core_.paused) s.suspend_reading(true);
    auto& p = s.emplace_state<zmtp_pipe>(core_, opts_, s,
                                         s.origin() ? s.origin()->target().to_string() : std::string(s.peer()));
    core_.event(s.origin() ? socket_event::kind::connected : socket_event::kind::accepted, p.address());
    p.start();
}

void zmtp_peers::on_frame(session& s, std::span<const std::byte> frame) {
    if (auto* p = s.state<zmtp_pipe>()) p->on_frame(frame);
}

void zmtp_peers::on_protocol_error(session& s, std::error_code ec) {
    auto* p = s.state<zmtp_pipe>();
    if (!p) return;
    if (p->current_phase() != zmtp_pipe::phase::ready) {
        p->mark_failed();
        ++core_.stats.handshake_failures;
        core_.event(socket_event::kind::handshake_failed, p->address(), ec);
    } else {
        ++core_.stats.protocol_errors;
        core_.detach(*p);  // the one disconnected event is this one, not on_close's
        core_.event(socket_event::kind::disconnected, p->address(),
                    ec == net_errc::frame_too_large ? make_error_code(link_errc::message_too_large) : ec);
    }
}

void zmtp_peers::on_close(session& s, std::error_code ec) {
    auto* p = s.state<zmtp_pipe>();
    if (!p) return;
    const bool was_attached = p->attached;
    core_.detach(*p);
    if (was_attached) {
        core_.event(socket_event::kind::disconnected, p->address(), ec);
    } else if (p->handshake_unfinished() && !core_.closing) {
        // The peer went away mid-handshake (a truncated greeting, or a libzmq peer refusing us):
        // a failed handshake too, as libzmq reports it (HANDSHAKE_FAILED_NO_DETAIL).
        ++core_.stats.handshake_failures;
        core_.event(socket_event::kind::handshake_failed, p->address(), ec);
    }
    core_.peer_closed();
}

void zmtp_peers::on_connect_failed(connection& c, std::error_code ec) {
    core_.event(socket_event::kind::connect_retried, c.target().to_string(), ec);
}

void zmtp_peers::on_drained(session& s) {
    auto* p = s.state<zmtp_pipe>();
    if (p && p->take_watch() && p->attached) core_.pipe_writable(*p);
}

}  // namespace strix::link::detail
