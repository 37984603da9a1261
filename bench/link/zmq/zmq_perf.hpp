#pragma once
// The libzmq side of the link perf tools (zmq-local-thr, zmq-remote-thr, ...): a context and
// sockets with the contract's timeouts, and the send/receive loops on libzmq's C API. The
// family-neutral part of the contract (arguments, stamps, checks, output lines) is in
// ../perf_common.hpp, which the strix-link-* tools use too. libzmq specifics:
//
//   - The 30 s receive and send timeouts are ZMQ_RCVTIMEO and ZMQ_SNDTIMEO.
//   - Sockets close with a 30 s linger (libzmq's default is forever): pending messages are
//     delivered, but a dead peer cannot hold the process.

#include <zmq.h>

#include "../perf_common.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace strix::link_perf {

inline constexpr int linger_ms = 30000;

/// The throughput tools' options (--pattern, --hwm), explained once.
inline constexpr std::string_view thr_options_help =
    "  --pattern pushpull|pubsub|dealerrouter\n"
    "                              PUSH -> PULL (default), XPUB -> SUB subscribed to \"\", or\n"
    "                              DEALER -> ROUTER (the ROUTER receives [identity, message]);\n"
    "                              the XPUB sends only after it has received the subscription,\n"
    "                              so no message is lost to a slow joiner\n"
    "  --seq auto|on|off           receivers: check sequence numbers when message 0 carries the\n"
    "                              marker (auto, default), always, or never (sizes only)\n"
    "  --hwm N                     ZMQ_SNDHWM on the sender and ZMQ_RCVHWM on the receiver;\n"
    "                              default: libzmq's (1000) for pushpull, 0 (unlimited) for\n"
    "                              pubsub, since PUB drops what exceeds the HWM and a dropped\n"
    "                              message would fail the run\n";

/// Fails with libzmq's description of errno when rc is -1.
inline void check(const tool& t, int rc, const std::string& what) {
    if (rc == -1) t.fail(what + ": " + zmq_strerror(errno));
}

/// A libzmq context, terminated (after its sockets' linger) when it goes out of scope.
class zcontext {
public:
    explicit zcontext(const tool& t) : ctx_(zmq_ctx_new()) {
        if (ctx_ == nullptr) t.fail(std::string("zmq_ctx_new: ") + zmq_strerror(errno));
    }
    ~zcontext() {
        while (zmq_ctx_term(ctx_) == -1 && errno == EINTR) {
        }
    }
    zcontext(const zcontext&) = delete;
    zcontext& operator=(const zcontext&) = delete;
    void* get() const { return ctx_; }

private:
    void* ctx_;
};

/// One libzmq socket with the contract's timeouts and linger; closed when it goes out of scope.
/// Used by one thread at a time, like any libzmq socket.
class zsocket {
public:
    zsocket(const tool& t, const zcontext& ctx, int type) : t_(t), s_(zmq_socket(ctx.get(), type)) {
        if (s_ == nullptr) t.fail(std::string("zmq_socket: ") + zmq_strerror(errno));
        set(ZMQ_RCVTIMEO, timeout_ms);
        set(ZMQ_SNDTIMEO, timeout_ms);
        set(ZMQ_LINGER, linger_ms);
    }
    ~zsocket() { zmq_close(s_); }
    zsocket(const zsocket&) = delete;
    zsocket& operator=(const zsocket&) = delete;

    void* get() const { return s_; }

    void set(int option, int value) {
        check(t_, zmq_setsockopt(s_, option, &value, sizeof value), "zmq_setsockopt(" + std::to_string(option) + ")");
    }
    void subscribe_all() { check(t_, zmq_setsockopt(s_, ZMQ_SUBSCRIBE, "", 0), "ZMQ_SUBSCRIBE"); }
    void bind(const std::string& ep) { check(t_, zmq_bind(s_, ep.c_str()), "zmq_bind " + ep); }
    void connect(const std::string& ep) { check(t_, zmq_connect(s_, ep.c_str()), "zmq_connect " + ep); }

  /// The endpoint actually bound (a tcp port given as * resolved).
    std::string last_endpoint() const {
        char buf[512];
        std::size_t len = sizeof buf;
        check(t_, zmq_getsockopt(s_, ZMQ_LAST_ENDPOINT, buf, &len), "ZMQ_LAST_ENDPOINT");
        return std::string(buf, len > 0 ? len - 1 : 0);
    }

private:
    const tool& t_;
    void* s_;
};

/// Sets the HWMs the --pattern/--hwm contract asks for on one side (sender or receiver).
inline void apply_hwm(zsocket& s, const parsed_args& a, bool sender) {
    if (const std::optional<int> hwm = hwm_for(a)) s.set(sender ? ZMQ_SNDHWM : ZMQ_RCVHWM, *hwm);
}

/// A zmq_msg_t closed when it goes out of scope.
struct zmessage {
    zmq_msg_t m;
    zmessage() { zmq_msg_init(&m); }
    ~zmessage() { zmq_msg_close(&m); }
    zmessage(const zmessage&) = delete;
    zmessage& operator=(const zmessage&) = delete;
};

/// The sender's and the receiver's socket types for a --pattern (pubsub's sender is an XPUB,
/// which sees the subscription arrive).
inline int sender_type(pattern p) {
    return p == pattern::pubsub ? ZMQ_XPUB : p == pattern::dealerrouter ? ZMQ_DEALER : ZMQ_PUSH;
}
inline int receiver_type(pattern p) {
    return p == pattern::pubsub ? ZMQ_SUB : p == pattern::dealerrouter ? ZMQ_ROUTER : ZMQ_PULL;
}

/// Receives one frame into msg; fails on timeout or error.
inline void receive_frame(const tool& t, void* s, zmessage& msg, std::uint64_t seq, std::uint64_t count,
                          const std::string& what) {
    while (zmq_msg_recv(&msg.m, s, 0) == -1) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) t.fail(what + receive_timeout(seq, count));
        t.fail(what + "zmq_msg_recv: " + zmq_strerror(errno));
    }
}

/// Receives one message into msg (message `seq` of `count`); fails on timeout, wrong size or
/// wrong sequence number. `what` names the stream in the messages ("subscriber 3: ").
inline void receive_checked(const tool& t, void* s, zmessage& msg, std::size_t size, std::uint64_t seq,
                            std::uint64_t count, const std::string& what = "") {
    receive_frame(t, s, msg, seq, count, what);
    check_message(t, zmq_msg_data(&msg.m), zmq_msg_size(&msg.m), size, seq, what);
}

/// Receives message `seq` into msg and checks it with `check`; with `router`, first the
/// identity frame a ROUTER puts ahead of each message (which must be followed by exactly one).
inline void receive_checked(const tool& t, void* s, zmessage& msg, stream_check& check, bool router, std::size_t size,
                            std::uint64_t seq, std::uint64_t count, const std::string& what = "") {
    if (router) {
        receive_frame(t, s, msg, seq, count, what);
        if (!zmq_msg_more(&msg.m)) t.fail(what + "message " + std::to_string(seq) + " has 1 part, expected 2");
    }
    receive_frame(t, s, msg, seq, count, what);
    if (zmq_msg_more(&msg.m)) {
        t.fail(what + "message " + std::to_string(seq) + " has more parts than " + (router ? "2" : "1"));
    }
    check(t, zmq_msg_data(&msg.m), zmq_msg_size(&msg.m), size, seq, what);
}

/// Sends msg; fails on a send blocked for the timeout. Closes/reuses msg as zmq_msg_send does.
inline void send_checked(const tool& t, void* s, zmq_msg_t* msg, std::uint64_t seq, std::uint64_t count) {
    while (zmq_msg_send(msg, s, 0) == -1) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) t.fail(send_timeout(seq, count));
        t.fail(std::string("zmq_msg_send: ") + zmq_strerror(errno));
    }
}

/// Receives and checks `count` messages (as --seq and --pattern say); returns the seconds from
/// the first message's arrival to the last's (libzmq's local_thr clock).
inline double receive_all(const tool& t, void* s, const parsed_args& a, std::size_t size, std::uint64_t count) {
    zmessage msg;
    stream_check check(a.seq);
    const bool router = a.pat == pattern::dealerrouter;
    receive_checked(t, s, msg, check, router, size, 0, count);
    const auto start = perf_clock::now();
    for (std::uint64_t i = 1; i < count; ++i) receive_checked(t, s, msg, check, router, size, i, count);
    return seconds_between(start, perf_clock::now());
}

/// Sends `count` stamped messages of `size` bytes, each freshly allocated as libzmq's
/// remote_thr does.
inline void send_all(const tool& t, void* s, std::size_t size, std::uint64_t count) {
    for (std::uint64_t i = 0; i < count; ++i) {
        zmq_msg_t msg;
        check(t, zmq_msg_init_size(&msg, size), "zmq_msg_init_size");
        stamp(zmq_msg_data(&msg), size, i);
        send_checked(t, s, &msg, i, count);
        zmq_msg_close(&msg);
    }
}

/// On an XPUB: blocks until `n` subscription messages (first byte 1) have arrived. With
/// ZMQ_XPUB_VERBOSE set, each subscriber's "" subscription arrives, not only the first.
inline void wait_subscriptions(const tool& t, void* xpub, int n) {
    zmessage msg;
    for (int got = 0; got < n;) {
        if (zmq_msg_recv(&msg.m, xpub, 0) == -1) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                t.fail(subscription_timeout(static_cast<std::uint64_t>(got), static_cast<std::uint64_t>(n)));
            }
            t.fail(std::string("zmq_msg_recv (subscription): ") + zmq_strerror(errno));
        }
        if (zmq_msg_size(&msg.m) >= 1 && *static_cast<const unsigned char*>(zmq_msg_data(&msg.m)) == 1) ++got;
    }
}

/// The REP side: receives, checks (as --seq says) and echoes `count` requests.
inline void echo_all(const tool& t, void* rep, std::size_t size, std::uint64_t count, seq_mode seq) {
    zmessage msg;
    stream_check check(seq);
    for (std::uint64_t i = 0; i < count; ++i) {
        receive_checked(t, rep, msg, check, false, size, i, count);
        send_checked(t, rep, &msg.m, i, count);
    }
}

/// The REQ side: `count` stamped requests, each reply checked, each round trip timed alone.
inline roundtrips request_all(const tool& t, void* req, std::size_t size, std::uint64_t count) {
    roundtrips r;
    r.us.reserve(static_cast<std::size_t>(count));
    zmessage reply;
    const auto start = perf_clock::now();
    for (std::uint64_t i = 0; i < count; ++i) {
        zmq_msg_t msg;
        check(t, zmq_msg_init_size(&msg, size), "zmq_msg_init_size");
        std::memset(zmq_msg_data(&msg), 0, size);
        stamp(zmq_msg_data(&msg), size, i);
        const auto t0 = perf_clock::now();
        send_checked(t, req, &msg, i, count);
        zmq_msg_close(&msg);
        receive_checked(t, req, reply, size, i, count, "reply: ");
        r.us.push_back(seconds_between(t0, perf_clock::now()) * 1e6);
    }
    r.total_seconds = seconds_between(start, perf_clock::now());
    return r;
}

}  // namespace strix::link_perf
