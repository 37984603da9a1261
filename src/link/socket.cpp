// socket (the public facade) and socket_core: options, the pattern, bind/connect through the
// transport table (transport/transport.hpp), sending and closing. What a socket type means is in
// pattern/socket_types.cpp.
#include "link/socket_core.hpp"
#include "link/pattern/pattern.hpp"
#include "link/pattern/socket_types.hpp"
#include "link/security/mechanism.hpp"
#include "link/security/zap_client.hpp"

#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>

#include <algorithm>
#include <array>
#include <stdexcept>

namespace strix::link {
namespace detail {

socket_core::socket_core(shard& sh, socket_type t, socket_options o)
    : owner(sh), type(t), opts(std::move(o)), pat(make_pattern(*this, t)), linger_timer_([this] {
          // The linger is over: what is still queued is dropped (on_close ends the lingering).
          abort_transports();
      }) {
    check_security(opts.security);  // a malformed key throws here, not at the first connection
}

socket_core::~socket_core() {
    *alive_ = false;
    closing = true;
    if (exit_hook_) owner.remove_hook(exit_hook_);
    if (linger_timer_.armed()) owner.timers().cancel(linger_timer_);
    transports_.clear();  // closes what is open: peers detach their pipes while the pattern lives
    if (linger_done_) linger_done_();
}

void socket_core::close(std::unique_ptr<socket_core> c, std::chrono::milliseconds linger, std::function<void()> done) {
    c->linger_done_ = std::move(done);
    // The application is gone: nothing is delivered or announced to it any more.
    c->on_message = nullptr;
    c->on_writable = nullptr;
    c->on_event = nullptr;
    c->closing = true;
    shard& sh = c->owner;
    // Lingering needs the loop: before it runs, or once the engine stops (its stop hooks close
    // every session gracefully within the drain timeout), the core goes now.
    if (linger.count() == 0 || !sh.running() || shard::current() != &sh || sh.stopping()) return;
    for (auto& t : c->transports_) t.state->close();  // listeners and names go; peers flush
    if (c->flushing() == 0) return;
    socket_core* self = c.release();
    self->lingering_ = true;
    // At the shard's exit the transports abort their peers; peer_closed then ends the lingering.
    self->exit_hook_ = sh.on_exit([self] {
        self->exit_hook_ = 0;
        self->abort_transports();
        self->linger_check();
    });
    if (linger.count() > 0) sh.timers().schedule(self->linger_timer_, sh.ticks_for(linger));
}

// Called as peers close while lingering: the core goes, after the turn (the peer that closed
// may still refer to its transport), once no transport flushes any more.
void socket_core::linger_check() {
    if (check_pending_) return;
    check_pending_ = true;
    owner.post_after_turn([this] {
        check_pending_ = false;
        if (flushing() == 0) delete this;
    });
}

std::size_t socket_core::flushing() const noexcept {
    std::size_t n = 0;
    for (auto& t : transports_) n += t.state->flushing();
    return n;
}

void socket_core::abort_transports() {
    for (auto& t : transports_) t.state->abort();
}

// The table is read here, at bind and connect only: a peer's messages go from its pipe to the
// pattern and never ask which transport carries them.
transport_state& socket_core::transport_for(std::string_view address) {
    const transport& row = find_transport(address);
    for (auto& t : transports_)
        if (t.make == row.make) return *t.state;
    auto state = row.make(*this);
    return *transports_.emplace_back(transport_slot{row.make, std::move(state)}).state;
}

std::string socket_core::bind(std::string_view address) { return transport_for(address).bind(address); }

void socket_core::connect(std::string_view address) { transport_for(address).connect(address); }

// A transport the socket never used is asked too: it checks the address (invalid_argument) and
// knows nothing there (no_such_file_or_directory).
void socket_core::unbind(std::string_view address) {
    transport_for(address).unbind(address);
    prune_later();  // what the unbind left goes once unused
}

void socket_core::disconnect(std::string_view address) {
    transport_for(address).disconnect(address);
    prune_later();
}

void socket_core::set_options(socket_options o) {
    check_security(o.security);
    opts = std::move(o);
    snapshot_.reset();
    for (auto& t : transports_) t.state->options_changed();
}

std::shared_ptr<const socket_options> socket_core::options_snapshot() {
    if (!snapshot_) snapshot_ = std::make_shared<const socket_options>(opts);
    return snapshot_;
}

void socket_core::peer_closed() {
    if (lingering_)
        linger_check();
    else
        prune_later();
}

void socket_core::prune_later() {
    if (prune_pending_ || closing) return;
    prune_pending_ = true;
    // After the turn: the sessions closed in it are released by then, and nothing that
    // called us still refers to their group.
    owner.post_after_turn([this, alive = alive_] {
        if (!*alive) return;
        prune_pending_ = false;
        if (closing) return;  // close() ended everything already
        bool again = false;
        for (auto& t : transports_) again |= t.state->prune();
        if (again) prune_later();
    });
}

std::error_code socket_core::send_part(bytes_view part, bool more) {
    if (closing) return link_errc::closed;
    if (more) {
        pending_store_.emplace_back(part.begin(), part.end());
        return {};
    }
    if (pending_store_.empty()) return send_parts(std::span(&part, 1));
    pending_.clear();
    for (auto& p : pending_store_) pending_.emplace_back(p);
    pending_.push_back(part);
    const auto ec = send_parts(pending_);
    // A message refused for the mark stays whole for the next try of its last part.
    if (ec != link_errc::would_block) pending_store_.clear();
    return ec;
}

std::error_code socket_core::send_parts(std::span<const bytes_view> parts, const part* source) {
    if (closing) return link_errc::closed;
    const auto ec = pat->send(parts, source);
    if (!ec) ++stats.messages_out;
    return ec;
}

void socket_core::attach(pipe& p) {
    p.attached = true;
    ++stats.peers;
    pat->attach(p);
    greet(p);
    // A new peer is room to send: a sender that was told would_block may go on.
    pipe_writable(p);
}

// What a new peer gets before anything else: ZMQ_PROBE_ROUTER's empty message, ZMQ_XPUB_WELCOME_MSG.
// Straight onto the pipe, past the pattern (a REQ's probe is not a request), as libzmq does.
void socket_core::greet(pipe& p) {
    bytes_view body;
    if (opts.probe_router && (type == socket_type::router || type == socket_type::dealer || type == socket_type::req)) {
        body = {};
    } else if (type == socket_type::xpub && !opts.xpub_welcome_msg.empty()) {
        body = as_bytes(opts.xpub_welcome_msg);
    } else {
        return;
    }
    outgoing o(std::span(&body, 1));
    p.write(o);
}

void socket_core::detach(pipe& p) {
    if (!p.attached) return;
    p.attached = false;
    --stats.peers;
    pat->detach(p);
}

void socket_core::deliver(std::span<const bytes_view> parts, const message_properties_ptr* props) {
    if (on_message) on_message(message_view(parts, props));
}

void socket_core::event(socket_event::kind k, const std::string& ep, std::error_code ec, std::string detail) {
    if (on_event) on_event(socket_event{k, ep, ec, std::move(detail)});
}

void socket_core::pipe_writable(pipe& p) {
    pat->writable(p);
    if (!want_writable_ || notifying_ || closing) return;
    want_writable_ = false;
    if (!on_writable) return;
    notifying_ = true;  // a callback that sends until would_block must not re-enter itself
    on_writable();
    notifying_ = false;
}

zap_client& socket_core::zap() {
    if (!zap_) zap_ = std::make_unique<zap_client>(owner);
    return *zap_;
}

void socket_core::pause(bool on) {
    if (paused == on) return;
    paused = on;
    for (auto& t : transports_) t.state->pause(on);
}

}  // namespace detail

// --- the public facade ---------------------------------------------------------------------

const char* to_string(socket_event::kind k) noexcept {
    using e = socket_event::kind;
    switch (k) {
        case e::listening: return "listening";
        case e::accepted: return "accepted";
        case e::connected: return "connected";
        case e::connect_retried: return "connect_retried";
        case e::handshake_succeeded: return "handshake_succeeded";
        case e::handshake_failed: return "handshake_failed";
        case e::disconnected: return "disconnected";
        case e::hwm_reached: return "hwm_reached";
        case e::subscribed: return "subscribed";
        case e::unsubscribed: return "unsubscribed";
        case e::closed: return "closed";
    }
    return "?";
}

socket::socket(shard& sh, socket_type type, socket_options opts)
    : core_(std::make_unique<detail::socket_core>(sh, type, std::move(opts))) {}

socket::~socket() {
    if (!core_) return;  // closed already (the blocking API's bridge closes with its own linger)
    const auto linger = core_->opts.linger;
    detail::socket_core::close(std::move(core_), linger);
}

std::string socket::bind(std::string_view address) {
    STRIX_ASSERT_OWNER(core_->owner, "link::socket::bind");
    return core_->bind(address);
}

void socket::connect(std::string_view address) {
    STRIX_ASSERT_OWNER(core_->owner, "link::socket::connect");
    core_->connect(address);
}

void socket::unbind(std::string_view endpoint) {
    STRIX_ASSERT_OWNER(core_->owner, "link::socket::unbind");
    core_->unbind(endpoint);
}

void socket::disconnect(std::string_view endpoint) {
    STRIX_ASSERT_OWNER(core_->owner, "link::socket::disconnect");
    core_->disconnect(endpoint);
}

void socket::set_options(const socket_options& o) {
    STRIX_ASSERT_OWNER(core_->owner, "link::socket::set_options");
    core_->set_options(o);
}

std::error_code socket::send(bytes_view part, bool more) {
    STRIX_ASSERT_OWNER(core_->owner, "link::socket::send");
    return core_->send_part(part, more);
}

std::error_code socket::send(const message& m) {
    STRIX_ASSERT_OWNER(core_->owner, "link::socket::send");
    // The message's parts are shared buffers: large ones go out by reference, never copied.
    // Views of up to 8 parts live on the stack (no allocation per send).
    constexpr std::size_t inline_parts = 8;
    if (m.size() <= inline_parts) {
        std::array<bytes_view, inline_parts> a;
        for (std::size_t i = 0; i < m.size(); ++i) a[i] = m[i].bytes();
        return core_->send_parts(std::span<const bytes_view>(a.data(), m.size()), m.size() ? &m[0] : nullptr);
    }
    std::vector<bytes_view> v;
    v.reserve(m.size());
    for (auto& p : m) v.push_back(p.bytes());
    return core_->send_parts(v, &m[0]);
}

std::error_code socket::send(std::initializer_list<bytes_view> parts) {
    return core_->send_parts(std::span(parts.begin(), parts.size()));
}

void socket::on_message(std::function<void(message_view)> f) { core_->on_message = std::move(f); }
void socket::on_writable(std::function<void()> f) { core_->on_writable = std::move(f); }
void socket::on_event(std::function<void(const socket_event&)> f) { core_->on_event = std::move(f); }

void socket::subscribe(bytes_view topic) {
    const auto* row = detail::find_type_info(core_->type);
    const bool manual = core_->type == socket_type::xpub && core_->opts.xpub_manual;
    if (!manual && (!row || !row->subscribes()))
        throw std::invalid_argument("subscribe() is for SUB and XSUB sockets (and XPUB with xpub_manual)");
    core_->pat->subscribe(true, topic);
}

void socket::unsubscribe(bytes_view topic) {
    const auto* row = detail::find_type_info(core_->type);
    const bool manual = core_->type == socket_type::xpub && core_->opts.xpub_manual;
    if (!manual && (!row || !row->subscribes()))
        throw std::invalid_argument("unsubscribe() is for SUB and XSUB sockets (and XPUB with xpub_manual)");
    core_->pat->subscribe(false, topic);
}

void socket::pause_receiving(bool on) {
    STRIX_ASSERT_OWNER(core_->owner, "link::socket::pause_receiving");
    core_->pause(on);
}

std::size_t socket::subscribers() const noexcept { return core_->pat->subscribers(); }
std::size_t socket::peers() const noexcept { return core_->stats.peers; }
socket_type socket::type() const noexcept { return core_->type; }
shard& socket::owner() const noexcept { return core_->owner; }
const socket_options& socket::options() const noexcept { return core_->opts; }
socket_stats socket::stats() const noexcept { return core_->stats; }

}  // namespace strix::link
