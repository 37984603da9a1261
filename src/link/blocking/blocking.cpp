// context and blocking_socket: the application thread's half of the blocking API. The shard's
// half, and the pipes between the two, are in blocking_bridge.hpp.
#include <strix/link/blocking.hpp>

#include "link/blocking/blocking_bridge.hpp"
#include "link/blocking/direct_link.hpp"
#include "link/pattern/socket_types.hpp"
#include "link/transport/inproc.hpp"

#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace strix::link {

using detail::app_wait;
using detail::blocking_shared;

context::context(unsigned shards) : closing_(std::make_shared<detail::closing_sockets>()) {
    engine_config c;
    c.shards = shards == 0 ? 1 : shards;
    c.pin_threads = false;  // the application's threads share the machine with these
    owned_ = std::make_unique<engine>(c);
    owned_->start();
    eng_ = owned_.get();
}

context::context(engine& e) : closing_(std::make_shared<detail::closing_sockets>()), eng_(&e) {}

context::~context() {
    if (owned_) {
        closing_->wait_none();
        owned_->stop();
        owned_->join();
    }
}

unsigned context::next_shard() noexcept { return next_++ % eng_->shard_count(); }

namespace {

// Sleeps until ready() or the timeout (negative: none); true when ready. The shard wakes the
// thread through wake_seq when something it waits for (`why`) may have happened.
template <class Ready>
bool wait_until(blocking_shared& s, app_wait why, blocking_socket::duration timeout, Ready&& ready) {
    if (ready()) return true;
    if (timeout.count() == 0) return false;
    const bool forever = timeout.count() < 0;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const std::uint32_t seq = s.wake_seq.load(std::memory_order_acquire);
        s.waiting.store(why, std::memory_order_relaxed);
        // Dekker with the shard's on_flush: it publishes, fences, then reads `waiting`.
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (ready()) {
            s.waiting.store(app_wait::none, std::memory_order_relaxed);
            return true;
        }
        timespec ts{};
        if (!forever) {
            const auto left = deadline - std::chrono::steady_clock::now();
            if (left <= std::chrono::steady_clock::duration::zero()) {
                s.waiting.store(app_wait::none, std::memory_order_relaxed);
                return false;
            }
            const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
            ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
            ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
        }
        if (s.interrupted.load(std::memory_order_acquire)) {
            s.waiting.store(app_wait::none, std::memory_order_relaxed);
            return false;
        }
        detail::futex_wait(s.wake_seq, seq, forever ? nullptr : &ts);
        s.waiting.store(app_wait::none, std::memory_order_relaxed);
        if (ready()) return true;
    }
}

}  // namespace

template <class F>
auto blocking_socket::on_shard(F&& f) -> decltype(f()) {
    // What was sent before the call goes first (stats, subscriptions in order).
    return ctx_.eng().run_on(shard_, [&] {
        bridge_->drain(SIZE_MAX);
        return f();
    });
}

// Runs f as on_shard does, and returns once what f set off has settled: the socket's work after
// the turn has run (disconnect closes its pipes there), every other shard has taken what that
// sent it (the mesh is FIFO per pair) and ended the turn in which it did, and this shard has
// ended the turn after (the pipes closed on it are flushed then). Each shard's own state is
// published at the end of its turn, after its dirty objects.
template <class F>
void blocking_socket::on_shard_settled(F&& f) {
    engine& e = ctx_.eng();
    const unsigned n = e.shard_count();
    const unsigned mine = shard_;
    std::promise<void> settled;
    std::atomic<unsigned> left{n};
    auto arrive = [&] {
        if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) settled.set_value();
    };
    on_shard([&] {
        f();
        shard& here = e.at(mine);
        here.post_after_turn([&] {
            for (unsigned i = 0; i < n; ++i) {
                if (i == mine)
                    here.post_after_turn(arrive);  // from an after-turn task: the next turn's
                else
                    here.post_to(i, [&e, i, &arrive] { e.at(i).post_after_turn(arrive); });
            }
        });
    });
    settled.get_future().wait();
}

blocking_socket::blocking_socket(context& ctx, socket_type type, socket_options opts)
    : ctx_(ctx),
      shard_(ctx.next_shard()),
      type_(type),
      can_send_(detail::find_type_info(type) && detail::find_type_info(type)->send != detail::send_rule::none),
      sync_sends_(type == socket_type::router && opts.router_mandatory),
      conflate_(opts.conflate),
      immediate_(opts.immediate),
      st_(std::make_shared<blocking_shared>(opts)) {
    bridge_ = ctx_.eng().run_on(shard_, [&] {
        return detail::blocking_bridge::create(ctx_.eng().at(shard_), type, opts, st_, ctx_.closing_);
    });
}

blocking_socket::~blocking_socket() {
    if (offered_) detail::direct_withdraw(st_.get());
    ctx_.eng().run_on(shard_, [&] { bridge_->close(); });
}

std::string blocking_socket::bind(std::string_view address) {
    std::string where = on_shard([&] { return bridge_->sock().bind(address); });
    ++endpoints_;
    direct_ok_ = false;  // a REQ with a second endpoint has peers the link does not reach
    const auto inproc = detail::inproc_name(address);
    if (type_ == socket_type::rep && inproc) {
        detail::direct_offer(detail::inproc_key(ctx_.eng(), *inproc), st_);
        offered_ = true;
    }
    return where;
}

void blocking_socket::unbind(std::string_view address) {
    on_shard_settled([&] { bridge_->sock().unbind(address); });
    // REQs that connect from now on do not get a direct link through the name (pipes made before
    // stay, as the shard's inproc connections do).
    const auto inproc = detail::inproc_name(address);
    if (offered_ && inproc) detail::direct_unoffer(detail::inproc_key(ctx_.eng(), *inproc), st_.get());
}

void blocking_socket::disconnect(std::string_view address) {
    on_shard_settled([&] { bridge_->sock().disconnect(address); });
    direct_ok_ = false;  // for good: later requests take the shard, to the peers that remain
}

void blocking_socket::set_options(const socket_options& o) {
    on_shard([&] { bridge_->set_options(o); });
    sync_sends_ = type_ == socket_type::router && o.router_mandatory;
    conflate_ = o.conflate;
    immediate_ = o.immediate;
}

void blocking_socket::connect(std::string_view address) {
    on_shard([&] { bridge_->sock().connect(address); });
    ++endpoints_;
    direct_ok_ = false;
    // The shard's connection stays too: it carries peers and events, and the requests once the
    // REQ gets a second endpoint or the REP closes.
    const auto inproc = detail::inproc_name(address);
    if (type_ == socket_type::req && endpoints_ == 1 && inproc) {
        link_ = detail::direct_connect(detail::inproc_key(ctx_.eng(), *inproc), st_);
        direct_ok_ = link_ != nullptr;
    }
}

// The link this send takes, or null: the shard's path.
detail::msg_pipe* blocking_socket::direct_out() noexcept {
    if (type_ == socket_type::req) {
        if (!direct_ok_ || req_waiting_) return nullptr;
        if (link_->rep_closed.load(std::memory_order_acquire)) {
            direct_ok_ = false;  // for good: later requests go to whatever peers the shard has
            return nullptr;
        }
        return &link_->to_rep;
    }
    if (type_ == socket_type::rep && rep_holding_ && reply_direct_)
        return &st_->direct.load(std::memory_order_relaxed)->to_req;
    return nullptr;
}

// A message went into direct_out(): wake the other side and take the turn.
void blocking_socket::sent_direct() noexcept {
    if (type_ == socket_type::req)
        detail::direct_wake(*link_->rep);
    else
        detail::direct_wake(*st_->direct.load(std::memory_order_relaxed)->req);
    turn_taken();
    if (type_ == socket_type::req) req_direct_ = true;
    ++direct_out_;
}

// Where recv's next message comes from: the shard's incoming pipe or the link, taking turns
// when both have one; null when neither has (or may give) one.
detail::msg_pipe* blocking_socket::next_in() noexcept {
    detail::msg_pipe* d = nullptr;
    bool shard_ok = true;
    if (type_ == socket_type::req && link_) {
        d = &link_->to_req;
    } else if (type_ == socket_type::rep) {
        // One request at a time, as the shard's REP delivers them: none while one is answered.
        if (!rep_holding_) {
            if (detail::direct_link* l = st_->direct.load(std::memory_order_acquire)) d = &l->to_rep;
        }
        shard_ok = !(rep_holding_ && reply_direct_);
    }
    detail::msg_pipe& in = st_->in;
    if (d && prefer_direct_ && !d->empty()) return d;
    if (shard_ok && !in.empty()) return &in;
    if (d && !d->empty()) return d;
    return nullptr;
}

// Sends whose result only the shard knows (out of turn, ROUTER with router_mandatory) ask it.
bool blocking_socket::queueable() const noexcept {
    if (sync_sends_) return false;
    if (type_ == socket_type::req) return !req_waiting_;
    if (type_ == socket_type::rep) return rep_holding_;
    return true;
}

// The message is in the pipe: publish it and wake the drainer if it went idle.
void blocking_socket::queued() {
    st_->out.end_message();
    st_->out.publish();
    // Dekker with the drainer going idle: it stores drain_idle, fences, looks at the pipe.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (st_->drain_idle.load(std::memory_order_relaxed) && st_->drain_idle.exchange(false, std::memory_order_acq_rel)) {
        auto* b = bridge_;
        ctx_.eng().post(shard_, [b] { b->drain(); });
    }
    turn_taken();
}

void blocking_socket::turn_taken() noexcept {
    if (type_ == socket_type::req) req_waiting_ = true;
    if (type_ == socket_type::rep) rep_holding_ = false;
}

// ZMQ_IMMEDIATE: no completed connection, no queueing. The shard publishes its peer count once
// per turn; a zero is checked with the shard before waiting.
std::error_code blocking_socket::await_peer(duration timeout) {
    if (!immediate_ || st_->peers.load(std::memory_order_acquire) > 0) return {};
    return wait_for_peers(1, timeout) ? std::error_code{} : make_error_code(link_errc::would_block);
}

std::error_code blocking_socket::send(const message& m, duration timeout) {
    if (!can_send_) return link_errc::not_supported;
    if (const std::error_code ec = await_peer(timeout)) return ec;
    if (detail::msg_pipe* d = direct_out()) {
        detail::direct_put(*d, m);
        sent_direct();
        return {};
    }
    if (!queueable()) {
        // A request through the link still owes its reply (the shard's REQ knows nothing of it).
        if (type_ == socket_type::req && req_direct_ && !link_->rep_closed.load(std::memory_order_acquire))
            return link_errc::bad_state;
        const std::error_code ec = send_sync(m, timeout);
        if (!ec) turn_taken();
        return ec;
    }
    if (const std::error_code ec = send_queued(timeout)) return ec;
    auto& out = st_->out;
    if (m.empty()) out.put_empty();
    for (std::size_t i = 0; i < m.size(); ++i) {
        const bool more = i + 1 < m.size();
        const part& p = m[i];
        if (p.size() <= detail::msg_pipe::inline_max && !p.by_reference_only())
            out.put(p.bytes(), more);
        else
            out.put(p, more);  // a reference: the bytes are immutable
    }
    queued();
    return {};
}

std::error_code blocking_socket::send(bytes_view bytes, duration timeout) {
    if (!can_send_) return link_errc::not_supported;
    if (bytes.size() > detail::msg_pipe::inline_max || !queueable()) return send(message(bytes), timeout);
    if (const std::error_code ec = await_peer(timeout)) return ec;
    if (detail::msg_pipe* d = direct_out()) {
        detail::direct_put(*d, bytes);
        sent_direct();
        return {};
    }
    // The common small message: straight into the pipe, no message object.
    if (const std::error_code ec = send_queued(timeout)) return ec;
    st_->out.put(bytes, false);
    queued();
    return {};
}

// Waits for room in the outgoing pipe: it holds fewer than sndhwm messages.
std::error_code blocking_socket::send_queued(duration timeout) {
    auto& s = *st_;
    const std::uint64_t limit = s.out_limit.load(std::memory_order_relaxed);
    if (limit == 0 || !s.out.backlog_at_least(limit)) return {};
    if (conflate_) {
        // Only the newest waiting message counts: the drainer drops the older ones, which
        // makes room even while no peer takes anything.
        auto* b = bridge_;
        ctx_.eng().post(shard_, [b] { b->drain(); });
    }
    const bool room = wait_until(s, app_wait::space, timeout, [&] { return s.out.backlog() < limit; });
    return room ? std::error_code{} : make_error_code(link_errc::would_block);
}

std::error_code blocking_socket::send_sync(const message& m, duration timeout) {
    const bool req = type_ == socket_type::req;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const std::uint64_t seen = st_->writable.load(std::memory_order_acquire);
        const std::error_code ec = ctx_.eng().run_on(shard_, [&] { return bridge_->send_now(m, req); });
        if (ec != link_errc::would_block) return ec;
        // Wait for on_writable (which follows a would_block once sending can go on).
        duration left = timeout;
        if (timeout.count() >= 0) {
            left = std::chrono::duration_cast<duration>(deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return ec;
        }
        if (!wait_until(*st_, app_wait::any, left,
                        [&] { return st_->writable.load(std::memory_order_acquire) != seen; }))
            return ec;
    }
}

namespace {

// The parts at a pipe's front as one message (parts passed by reference are moved out).
template <class Parts>
message parts_to_message(Parts& parts) {
    message m;
    for (auto& e : parts) {
        if (e.ref)
            m.add(std::move(*e.ref));
        else
            m.add(e.bytes);
    }
    return m;
}

}  // namespace

// Takes the next message: take(parts) reads its parts before they are popped.
template <class Take>
bool blocking_socket::recv_with(duration timeout, Take&& take) {
    auto& s = *st_;
    auto& parts = s.app_entries;
    detail::msg_pipe* from = next_in();
    if (!from && !wait_until(s, app_wait::recv, timeout, [&] { return (from = next_in()) != nullptr; })) return false;
    from->front(parts);
    if (from != &s.in) {
        // Through the link: no conflate (REQ/REP), no pause (one message at a time).
        take(parts);
        from->pop(parts);
        recv_props_ = nullptr;  // a thread of this process: no connection properties
        ++direct_in_;
        prefer_direct_ = false;
        if (type_ == socket_type::req) req_waiting_ = req_direct_ = false;
        if (type_ == socket_type::rep) rep_holding_ = reply_direct_ = true;
        return true;
    }
    prefer_direct_ = true;
    if (conflate_) {
        // ZMQ_CONFLATE: the newest message waiting replaces the older ones.
        while (s.in.backlog_seen_by_consumer() > 1) {
            s.in.pop(parts);
            s.in.front(parts);
        }
    }
    take(parts);
    recv_props_ = s.in.take_properties();
    s.in.pop(parts);
    // Below half the bound again: let the shard read from its peers once more.
    if (s.in_paused.load(std::memory_order_acquire) &&
        s.in.backlog_seen_by_consumer() <= s.in_cap.load(std::memory_order_relaxed) / 2 &&
        s.in_paused.exchange(false, std::memory_order_acq_rel)) {
        auto* b = bridge_;
        ctx_.eng().post(shard_, [b] { b->resume_receiving(); });
    }
    // REQ: the reply came (the socket passes on nothing else); REP: a request to answer.
    if (type_ == socket_type::req) req_waiting_ = req_direct_ = false;
    if (type_ == socket_type::rep) {
        rep_holding_ = true;
        reply_direct_ = false;
    }
    return true;
}

std::optional<message> blocking_socket::recv(duration timeout) {
    std::optional<message> m;
    recv_with(timeout, [&](auto& parts) { m = parts_to_message(parts); });
    if (m) m->set_properties(std::move(recv_props_));
    return m;
}

bool blocking_socket::recv_into(part_sink sink, void* user, duration timeout) {
    return recv_with(timeout, [&](auto& parts) {
        for (std::size_t i = 0; i < parts.size(); ++i) sink(user, parts[i].bytes, parts[i].ref, i + 1 < parts.size());
        if (parts.empty()) sink(user, bytes_view(), nullptr, false);  // a message of no parts
    });
}

int blocking_socket::notify_fd() {
    int fd = st_->notify_fd.load(std::memory_order_acquire);
    if (fd >= 0) return fd;
    fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
    st_->notify_fd.store(fd, std::memory_order_release);
    // Readable at once: the application looks at the state before waiting, as after a clear.
    st_->notify_set.store(true, std::memory_order_relaxed);
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(fd, &one, sizeof one);
    return fd;
}

void blocking_socket::clear_notify() noexcept {
    const int fd = st_->notify_fd.load(std::memory_order_relaxed);
    if (fd < 0) return;
    st_->notify_set.store(false, std::memory_order_relaxed);
    // Dekker with the shard's notify(): it publishes, fences, then reads notify_set.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    std::uint64_t v;
    [[maybe_unused]] const auto n = ::read(fd, &v, sizeof v);
}

void blocking_socket::interrupt() noexcept {
    st_->interrupted.store(true, std::memory_order_release);
    st_->wake_seq.fetch_add(1, std::memory_order_release);
    detail::futex_wake_all(st_->wake_seq);
    const int fd = st_->notify_fd.load(std::memory_order_acquire);
    if (fd >= 0) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(fd, &one, sizeof one);
    }
}

std::size_t blocking_socket::peers_seen() const noexcept {
    return static_cast<std::size_t>(st_->peers.load(std::memory_order_acquire));
}

bool blocking_socket::interrupted() const noexcept { return st_->interrupted.load(std::memory_order_acquire); }

void blocking_socket::on_shard_event(std::function<void(const socket_event&)> f) {
    ctx_.eng().run_on(shard_, [&] { bridge_->set_event_hook(std::move(f)); });
}

void blocking_socket::subscribe(std::string_view topic) {
    on_shard([&] { bridge_->sock().subscribe(topic); });
}

void blocking_socket::unsubscribe(std::string_view topic) {
    on_shard([&] { bridge_->sock().unsubscribe(topic); });
}

// Polls a count on the shard, waking early for any event (subscriptions and handshakes are
// announced as events) and at least every 10 ms.
template <class Count>
static bool wait_for_count(blocking_shared& s, blocking_socket::duration timeout, std::size_t n, Count&& count) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const std::uint64_t seen = s.event_seq.load(std::memory_order_acquire);
        if (count() >= n) return true;
        if (timeout != blocking_socket::forever && std::chrono::steady_clock::now() >= deadline) return false;
        if (s.interrupted.load(std::memory_order_acquire)) return false;
        wait_until(s, app_wait::any, std::chrono::milliseconds(10),
                   [&] { return s.event_seq.load(std::memory_order_acquire) != seen; });
    }
}

bool blocking_socket::wait_for_subscribers(std::size_t n, duration timeout) {
    return wait_for_count(*st_, timeout, n, [&] { return on_shard([&] { return bridge_->sock().subscribers(); }); });
}

bool blocking_socket::wait_for_peers(std::size_t n, duration timeout) {
    return wait_for_count(*st_, timeout, n, [&] { return on_shard([&] { return bridge_->sock().peers(); }); });
}

std::optional<socket_event> blocking_socket::next_event(duration timeout) {
    auto& s = *st_;
    auto have = [&] {
        std::lock_guard lk(s.mu);
        return !s.events.empty();
    };
    if (!wait_until(s, app_wait::any, timeout, have)) return std::nullopt;
    std::lock_guard lk(s.mu);
    socket_event e = std::move(s.events.front());
    s.events.pop_front();
    return e;
}

socket_stats blocking_socket::stats() {
    socket_stats st = on_shard([&] { return bridge_->sock().stats(); });
    st.messages_out += direct_out_;
    st.messages_in += direct_in_;
    return st;
}

}  // namespace strix::link
