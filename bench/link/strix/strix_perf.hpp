#pragma once
// The strix side of the link perf tools (strix-link-local-thr, ...): the same contract as the
// libzmq tools (../perf_common.hpp: arguments, stamps, checks, output lines), written against
// strix::link's shard-native API the way a strix application would be:
//
//   - A socket lives on one shard, and so does the code that uses it: the sender sends until the
//     socket says would_block and goes back to the loop, on_writable brings it back; the
//     receiver counts and checks in on_message. No thread hands messages to another.
//   - Sockets are built on the main thread before the engine starts (a receiver binds there, so
//     the port or socket file exists as early as libzmq's), started on their shard with
//     engine::post, and destroyed after engine::join.
//   - Whoever finishes the run (the receiver after its last message, the sender after queueing
//     its last) calls engine::stop, which flushes every connection's queued output before the
//     shard threads exit: a sender's last messages are delivered, as libzmq's linger does.
//   - The contract's 30 s receive and send timeouts are a watchdog timer on the shard that fails
//     the run when the tool's progress counter has not moved for 30 s.

#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>
#include <strix/core/timing_wheel.hpp>
#include <strix/link/socket.hpp>

#include "../perf_common.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace strix::link_perf {

/// The throughput tools' options (--pattern, --hwm), explained once.
inline constexpr std::string_view thr_options_help =
    "  --pattern pushpull|pubsub|dealerrouter\n"
    "                              PUSH -> PULL (default), PUB -> SUB subscribed to \"\", or\n"
    "                              DEALER -> ROUTER (the ROUTER receives [identity, message]);\n"
    "                              the PUB sends only once its subscribed event says the\n"
    "                              subscription has arrived, so no message is lost to a slow\n"
    "                              joiner\n"
    "  --seq auto|on|off           receivers: check sequence numbers when message 0 carries the\n"
    "                              marker (auto, default), always, or never (sizes only)\n"
    "  --hwm N                     sndhwm on the sender and rcvhwm on the receiver (messages);\n"
    "                              default: 1000 (strix's and libzmq's) for pushpull, 0\n"
    "                              (unlimited) for pubsub, since PUB drops what exceeds the HWM\n"
    "                              and a dropped message would fail the run\n";

/// An engine of `shards` unpinned shards (client and server share the machine's cores; the OS
/// places the threads, as it places libzmq's). The graceful stop may take the contract's 30 s to
/// flush a sender's queued messages.
inline engine_config engine_for(unsigned shards) {
    engine_config c;
    c.shards = shards;
    c.pin_threads = false;
    c.drain_timeout = std::chrono::milliseconds(timeout_ms);
    return c;
}

/// Socket options for one side of a run: the --pattern/--hwm marks, and a maximum message size
/// that admits `size`.
inline link::socket_options options_for(const parsed_args& a, std::size_t size) {
    link::socket_options o;
    if (const std::optional<int> hwm = hwm_for(a)) {
        o.sndhwm = static_cast<std::uint32_t>(*hwm);
        o.rcvhwm = static_cast<std::uint32_t>(*hwm);
    }
    o.max_msg_size = std::max(o.max_msg_size, size);
    return o;
}

/// `o` with `security` as its mechanism settings.
inline link::socket_options secured(link::socket_options o, link::security_options security) {
    o.security = std::move(security);
    return o;
}

/// Runs fn() on shard i of e; an exception from it (a malformed address, an address in use)
/// fails the run with its message. Any thread.
template <class F>
void post_checked(const tool& t, engine& e, unsigned i, F fn) {
    e.post(i, [&t, fn = std::move(fn)]() mutable {
        try {
            fn();
        } catch (const std::exception& ex) {
            t.fail(ex.what());
        }
    });
}

/// The sender's and the receiver's socket types for a --pattern.
inline link::socket_type sender_type(pattern p) {
    switch (p) {
        case pattern::pubsub: return link::socket_type::pub;
        case pattern::dealerrouter: return link::socket_type::dealer;
        case pattern::pushpull: break;
    }
    return link::socket_type::push;
}
inline link::socket_type receiver_type(pattern p) {
    switch (p) {
        case pattern::pubsub: return link::socket_type::sub;
        case pattern::dealerrouter: return link::socket_type::router;
        case pattern::pushpull: break;
    }
    return link::socket_type::pull;
}

/// Checks a received message's parts (`parts`: 1, or 2 for a ROUTER's [identity, message]) and
/// its last part with `check`; fails the run otherwise.
inline void check_received(const tool& t, stream_check& check, link::message_view m, std::size_t parts,
                           std::size_t size, std::uint64_t seq, std::string_view what = {}) {
    if (m.size() != parts) [[unlikely]] {
        t.fail(std::string(what) + "message " + std::to_string(seq) + " has " + std::to_string(m.size()) +
               " parts, expected " + std::to_string(parts));
    }
    const auto& p = m[parts - 1];
    check(t, p.data(), p.size(), size, seq, what);
}

/// Checks a received message: one part, of `size` bytes, carrying message seq's stamp
/// (check_message); fails the run otherwise. `what` prefixes the failure ("reply: ").
inline void check_received(const tool& t, link::message_view m, std::size_t size, std::uint64_t seq,
                           std::string_view what = {}) {
    if (m.size() != 1) [[unlikely]] {
        t.fail(std::string(what) + "message " + std::to_string(seq) + " has " + std::to_string(m.size()) +
               " parts, expected 1");
    }
    check_message(t, m[0].data(), m[0].size(), size, seq, what);
}

/// "the engine stopped after 5 of 10 messages": a run that ended without finishing.
inline std::string stopped_early(std::uint64_t done, std::uint64_t count, std::string_view what) {
    return "the engine stopped after " + std::to_string(done) + " of " + std::to_string(count) + " " +
           std::string(what);
}

/// Fails the run ("<why()>") when `counter` has not moved for 30 s: the contract's receive and
/// send timeouts. A timer on the shard reads the counter once a second, so the path that bumps
/// it pays nothing. Owner: the counter's shard (or the main thread before the engine starts).
class watchdog {
public:
    watchdog(const tool& t, shard& sh, const std::uint64_t& counter, std::function<std::string()> why)
        : t_(t), sh_(sh), counter_(counter), why_(std::move(why)) {
        sh_.timers().schedule(timer_, sh_.ticks_for(period));
    }
    ~watchdog() { stop(); }
    watchdog(const watchdog&) = delete;
    watchdog& operator=(const watchdog&) = delete;

  /// Disarms it (the counter has reached its end). On the shard.
    void stop() { sh_.timers().cancel(timer_); }

private:
    static constexpr std::chrono::milliseconds period{1000};

    void check() {
        if (counter_ != last_) {
            last_ = counter_;
            quiet_ = 0;
        } else if (++quiet_ * period.count() >= timeout_ms) {
            t_.fail(why_());
        }
        sh_.timers().schedule(timer_, sh_.ticks_for(period));
    }

    const tool& t_;
    shard& sh_;
    const std::uint64_t& counter_;
    std::function<std::string()> why_;
    std::uint64_t last_ = 0;
    int quiet_ = 0;
    timer_node timer_{[this] { check(); }};
};

/// The sending half of a throughput run: PUSH (or PUB for pubsub) sends `count` stamped messages
/// of `size` bytes; with stop_when_done it then stops the engine (which flushes them). `inproc`:
/// the peer is an inproc:// socket (large messages then cost a turn no copying; see batch_for).
class thr_sender {
public:
    thr_sender(const tool& t, shard& sh, const parsed_args& a, std::size_t size, std::uint64_t count,
               bool stop_when_done, bool inproc)
        : t_(t),
          sh_(sh),
          stop_(stop_when_done),
          pubsub_(a.pat == pattern::pubsub),
          s_(sh, sender_type(a.pat), options_for(a, size)),
          buf_(size),
          count_(count),
          batch_(batch_for(size, inproc)),
          dog_(t, sh, sent_,
               [this] { return pubsub_ && !started_ ? subscription_timeout(0, 1) : send_timeout(sent_, count_); }) {
        s_.on_writable([this] { pump(); });
        if (pubsub_) {
      // A PUB drops what it sends before the subscription arrives: wait for it (libzmq's tool
      // waits on an XPUB for the same reason).
            s_.on_event([this](const link::socket_event& e) {
                if (e.what == link::socket_event::kind::subscribed && !started_) {
                    started_ = true;
                    pump();
                }
            });
        }
    }

  /// Connects and starts sending. On the socket's shard.
    void start(const std::string& endpoint) {
        s_.connect(endpoint);
    // PUSH: the first send says would_block until the peer is there; on_writable goes on.
        if (!pubsub_) pump();
    }

private:
  // Bytes queued per call of pump() when no would_block comes first (PUB, or an unlimited HWM):
  // the loop must turn now and then to write what was queued.
    static constexpr std::size_t batch_bytes = 256 * 1024;

  // Messages of at least this size are built in a buffer of their own and handed over by
  // reference (what libzmq's tool does with zmq_msg_init_size + zmq_msg_send); smaller ones are
  // copied into the connection's queue, which is cheaper than an allocation.
    static constexpr std::size_t by_reference_min = 4096;

  // Messages per call of pump(). Over tcp and ipc the loop writes every byte queued, so a turn
  // queues about batch_bytes. Over inproc a message of by_reference_min bytes or more is handed
  // over by reference and nothing of its payload is touched again by the loop: counting its bytes
  // cut a 64 KB run into turns of 3 messages, each a batch posted to the receiver's shard and
  // usually a wake-up (21,000-32,000 context switches for 100,000 messages, 0.52-0.67x libzmq, whose
  // inproc_thr sends without yielding). It counts as by_reference_min bytes: 62 messages a turn.
    static std::size_t batch_for(std::size_t size, bool inproc) {
        const std::size_t cost = (inproc ? std::min(size, by_reference_min) : size) + 9;
        return std::max<std::size_t>(1, batch_bytes / cost);
    }

    std::error_code send_one() {
        if (buf_.size() < by_reference_min) {
            stamp(buf_.data(), buf_.size(), sent_);
            return s_.send(link::bytes_view(buf_));
        }
        if (!next_) {
            next_ = shared_buffer::create(buf_.size());
            stamp(next_->data(), buf_.size(), sent_);
        }
        link::message m;
        m.add(link::part(next_, 0, buf_.size()));
        const std::error_code ec = s_.send(m);
        if (ec != link::link_errc::would_block) next_.reset();  // kept for the retry otherwise
        return ec;
    }

    void pump() {
        for (std::size_t k = 0; k < batch_ && sent_ < count_; ++k) {
            const std::error_code ec = send_one();
            if (ec == link::link_errc::would_block) return;  // on_writable calls pump() again
            if (ec) t_.fail("send: " + ec.message());
            ++sent_;
        }
        if (sent_ == count_) {
            dog_.stop();
            if (stop_) sh_.owner().stop();
            return;
        }
        sh_.post_local([this] { pump(); });
    }

    const tool& t_;
    shard& sh_;
    const bool stop_;
    const bool pubsub_;
    link::socket s_;
    std::vector<std::byte> buf_;
    shared_buffer_ptr next_;  // a large message built and not yet accepted
    const std::uint64_t count_;
    const std::size_t batch_;
    std::uint64_t sent_ = 0;
    bool started_ = false;
    watchdog dog_;
};

/// The receiving half of a throughput run: PULL (or SUB subscribed to everything) checks `count`
/// messages, times the first to the last (libzmq's local_thr clock), then stops the engine.
class thr_receiver {
public:
  /// Builds the socket and binds it at `endpoint` (tcp://, ipc://, inproc://).
    thr_receiver(const tool& t, shard& sh, const parsed_args& a, const std::string& endpoint, std::size_t size,
                 std::uint64_t count)
        : t_(t),
          sh_(sh),
          s_(sh, receiver_type(a.pat), options_for(a, size)),
          size_(size),
          count_(count),
          parts_(a.pat == pattern::dealerrouter ? 2 : 1),
          check_(a.seq),
          dog_(t, sh, got_, [this] { return receive_timeout(got_, count_); }) {
        if (a.pat == pattern::pubsub) s_.subscribe(std::string_view());
        s_.on_message([this](link::message_view m) { on_message(m); });
        s_.bind(endpoint);
    }

  /// Seconds from the first message to the last; after the engine stopped.
    double seconds() const { return seconds_between(first_, last_); }
  /// Fails the run unless every message came (the engine stopped for another reason).
    void check_complete() const {
        if (got_ != count_) t_.fail(stopped_early(got_, count_, "messages"));
    }

private:
    void on_message(link::message_view m) {
        if (got_ == count_) return;
        check_received(t_, check_, m, parts_, size_, got_);
        if (got_ == 0) first_ = perf_clock::now();
        if (++got_ == count_) {
            last_ = perf_clock::now();
            dog_.stop();
            sh_.owner().stop();
        }
    }

    const tool& t_;
    shard& sh_;
    link::socket s_;
    const std::size_t size_;
    const std::uint64_t count_;
    const std::size_t parts_;
    stream_check check_;
    std::uint64_t got_ = 0;
    perf_clock::time_point first_, last_;
    watchdog dog_;
};

/// The echoing half of a latency run: REP checks each of `count` requests and sends it back;
/// with stop_when_done, stops the engine after the last reply (which the stop still flushes).
/// `security`: the socket's mechanism (NULL by default; the CURVE tools set a server's).
class lat_echoer {
public:
    lat_echoer(const tool& t, shard& sh, std::size_t size, std::uint64_t count, bool stop_when_done,
               seq_mode seq = seq_mode::automatic, link::security_options security = {})
        : t_(t),
          sh_(sh),
          s_(sh, link::socket_type::rep, secured(options_for({}, size), std::move(security))),
          check_(seq),
          size_(size),
          count_(count),
          stop_(stop_when_done),
          dog_(t, sh, got_, [this] { return receive_timeout(got_, count_); }) {
        s_.on_message([this](link::message_view m) { on_request(m); });
    }

    link::socket& socket() { return s_; }

private:
    void on_request(link::message_view m) {
        check_received(t_, check_, m, 1, size_, got_);
    // A reply is never refused for the high-water mark (it is one message owed).
        if (const std::error_code ec = s_.send(m[0])) t_.fail("send reply: " + ec.message());
        if (++got_ < count_) return;
        dog_.stop();
        if (stop_) sh_.owner().stop();
    }

    const tool& t_;
    shard& sh_;
    link::socket s_;
    stream_check check_;
    const std::size_t size_;
    const std::uint64_t count_;
    const bool stop_;
    std::uint64_t got_ = 0;
    watchdog dog_;
};

/// The timing half of a latency run: REQ sends `count` stamped requests one after another, checks
/// each reply and times each round trip alone (steady clock), then stops the engine.
/// `security`: the socket's mechanism (NULL by default; the CURVE tools set a client's).
class lat_requester {
public:
    lat_requester(const tool& t, shard& sh, std::size_t size, std::uint64_t count, link::security_options security = {})
        : t_(t),
          sh_(sh),
          s_(sh, link::socket_type::req, secured(options_for({}, size), std::move(security))),
          buf_(size),
          size_(size),
          count_(count),
          dog_(t, sh, done_, [this] { return "reply: " + receive_timeout(done_, count_); }) {
        r_.us.reserve(static_cast<std::size_t>(count));
        s_.on_message([this](link::message_view m) { on_reply(m); });
    // The first request waits for a peer (would_block); on_writable sends it once there is one.
        s_.on_writable([this] { send_next(); });
    }

    link::socket& socket() { return s_; }
  /// Sends the first request (or waits for a peer to send it to). On the socket's shard.
    void start() { send_next(); }
  /// The round trips; after the engine stopped. Fails the run unless every one was made.
    roundtrips result() const {
        if (done_ != count_) t_.fail(stopped_early(done_, count_, "round trips"));
        return r_;
    }

private:
    void send_next() {
        stamp(buf_.data(), size_, done_);
        const auto now = perf_clock::now();
        const std::error_code ec = s_.send(link::bytes_view(buf_));
        if (ec == link::link_errc::would_block) return;
        if (ec) t_.fail("send request: " + ec.message());
        if (done_ == 0) start_ = now;
        t0_ = now;
    }

    void on_reply(link::message_view m) {
        check_received(t_, m, size_, done_, "reply: ");
        const auto now = perf_clock::now();
        r_.us.push_back(seconds_between(t0_, now) * 1e6);
        if (++done_ == count_) {
            r_.total_seconds = seconds_between(start_, now);
            dog_.stop();
            sh_.owner().stop();
            return;
        }
        send_next();
    }

    const tool& t_;
    shard& sh_;
    link::socket s_;
    std::vector<std::byte> buf_;  // zeros but for the stamp, as libzmq's remote_lat sends
    const std::size_t size_;
    const std::uint64_t count_;
    std::uint64_t done_ = 0;
    perf_clock::time_point start_, t0_;
    roundtrips r_;
    watchdog dog_;
};

}  // namespace strix::link_perf
