#pragma once
// libzmq's C API (zmq.h, 4.3 stable) on strix::link: the objects behind its void pointers.
//
//   zmq_ctx_new  -> ctx     one link::context (its own engine, ZMQ_IO_THREADS shards), made
//                           when the first socket needs it, so zmq_ctx_set applies before
//   zmq_socket   -> sock    libzmq's options and state around one link::blocking_socket, made
//                           at the first bind/connect/send/recv/poll (options set before go in
//                           whole; later ones through blocking_socket::set_options)
//   zmq_msg_t    -> msg_rep placement-new'd into the caller's 64 bytes (zmq_msg.cpp)
//
// Every entry point checks its pointer's tag first (libzmq's EFAULT / ENOTSOCK) and sets errno
// as libzmq does. A socket is used by one thread at a time, as libzmq requires; a context from
// any thread (its mutex).
#include <strix/link/blocking.hpp>
#include <strix/link/poll.hpp>

#include <zmq.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <vector>

namespace strix::zmq_abi {

namespace link = strix::link;

constexpr std::uint32_t ctx_tag = 0xabadcafe;
constexpr std::uint32_t sock_tag = 0xbaddecaf;
constexpr std::uint32_t dead_tag = 0xdeadbeef;
/// What ZMQ_MAXMSGSIZE -1 (libzmq's "no limit", the default) means here: no limit either. Parts
/// up to 16 MiB come through each connection's receive ring, larger ones are collected in a buffer
/// of their own as they arrive (docs/zmq-abi.md, "Message size").
constexpr std::size_t unlimited_msg_size = SIZE_MAX;

struct sock;

struct ctx {
    std::uint32_t tag = ctx_tag;
    std::mutex mu;
    std::condition_variable cv;  // zmq_ctx_term waits here for its sockets to close
    std::unique_ptr<link::context> lc;
    std::set<sock*> sockets;
    // Closed sockets, kept (marked dead) a while so a call on one gets libzmq's ENOTSOCK
    // instead of touching freed memory; the oldest go beyond `quarantined_max`.
    std::deque<std::unique_ptr<sock>> closed;
    static constexpr std::size_t quarantined_max = 256;
    std::atomic<bool> terminating{false};  // zmq_ctx_shutdown / zmq_ctx_term were called
    // zmq_ctx_set's options.
    int io_threads = ZMQ_IO_THREADS_DFLT;
    int max_sockets = ZMQ_MAX_SOCKETS_DFLT;
    int ipv6 = 0;
    int blocky = 1;
    int max_msgsz = INT_MAX;
    int thread_priority = -1;
    int thread_sched_policy = -1;
    std::string thread_name_prefix;

    /// The link context, made on first use (under mu).
    link::context& link_locked();
};

/// What only the C API keeps per socket: options without a link counterpart, kept to be read
/// back (docs/zmq-abi.md lists them).
struct stored_options {
    int sndtimeo = -1, rcvtimeo = -1;
    int rate = 100, recovery_ivl = 10000, sndbuf = -1, rcvbuf = -1, tos = 0, backlog = 100;
    int multicast_hops = 1, multicast_maxtpdu = 1500, connect_timeout = 0, tcp_maxrt = 0;
    int ipv6 = 0, invert_matching = 0, use_fd = -1, req_correlate = 0, req_relaxed = 0;
    int router_handover = 0, router_raw = 0, stream_notify = 1, xpub_nodrop = 0, xpub_verboser = 0;
    int zap_enforce_domain = 0, loopback_fastpath = 0, multicast_loop = 1;
    int mechanism = ZMQ_NULL;  // what the security options add up to (ZMQ_MECHANISM)
    std::int64_t maxmsgsize = -1;
    std::uint64_t affinity = 0;
    std::string socks_proxy, bindtodevice, connect_routing_id;
};

/// The security settings as set, before they add up to a mechanism (effective_security).
struct security_settings {
    int as_server = 0;
    std::string plain_username, plain_password, zap_domain;
    std::string curve_public, curve_secret, curve_server;  // raw 32 bytes each, when set
};

struct sock {
    std::uint32_t tag = sock_tag;
    ctx* owner;
    int type;
    link::socket_type ltype;
    link::socket_options opts;
    stored_options so;
    security_settings sec;
    link::security_options applied_security;  // what the live socket was last given
    std::unique_ptr<link::blocking_socket> bs;  // made by live()
    link::blocking_socket* live_bs = nullptr;     // bs for zmq_ctx_term's interrupt, under owner->mu
    // SUBSCRIBE/UNSUBSCRIBE before the socket was made: applied in order when it is.
    std::vector<std::pair<bool, std::string>> early_subs;
    std::string last_endpoint;
    int connects = 0;  // endpoints connected (not bound): libzmq queues for those before a peer
    // A message being sent part by part (ZMQ_SNDMORE): the parts so far.
    link::message out;
    bool out_open = false;
    // A message being received part by part: the parts after the one returned.
    std::vector<link::part> in;
    std::size_t in_next = 0;
    link::message_properties_ptr in_props;  // the properties of the message being read
    bool rcvmore = false;
    // REQ: a request went out and its reply is not complete; REP: a request is being answered.
    bool req_sent = false;
    bool rep_holding = false;
    // zmq_socket_monitor's PAIR (lives on bs's shard) and its event mask.
    std::shared_ptr<struct monitor> mon;

    sock(ctx* c, int t, link::socket_type lt);
    /// The link socket, made now if it is not yet (with opts and early_subs). Throws what
    /// link throws.
    link::blocking_socket& live();
    bool terminated() const;
    /// libzmq's PUSH, DEALER, REQ and PAIR queue only for connected endpoints: with only binds
    /// and no peer, a send would block (EAGAIN with ZMQ_DONTWAIT).
    bool waits_for_a_peer() const noexcept;
};

/// errno for a link error code.
int errno_of(const std::error_code& ec) noexcept;
/// Sets errno and returns -1.
inline int fail(int e) noexcept {
    errno = e;
    return -1;
}
/// errno for an exception a link call threw (system_error keeps its errno; invalid_argument is
/// EINVAL, anything else EINVAL too).
int errno_of_exception() noexcept;

/// The socket behind a zmq_* socket argument, or null with errno set (ENOTSOCK).
sock* as_sock(void* s) noexcept;
/// The context behind a zmq_* context argument, or null with errno set (EFAULT).
ctx* as_ctx(void* c) noexcept;

/// blocking_socket timeouts for libzmq's flags and the socket's *TIMEO option.
inline link::blocking_socket::duration wait_for(int flags, int timeo) noexcept {
    if (flags & ZMQ_DONTWAIT) return link::blocking_socket::duration(0);
    return link::blocking_socket::duration(timeo < 0 ? -1 : timeo);
}

// zmq_options.cpp
int set_option(sock& s, int option, const void* v, std::size_t len);
int get_option(sock& s, int option, void* v, std::size_t* len);
/// The link options the socket's settings add up to.
link::socket_options effective_options(const sock& s);
/// ZMQ_EVENTS: ZMQ_POLLIN / ZMQ_POLLOUT now (rearms the socket's ZMQ_FD first).
int socket_events(sock& s);

// zmq_monitor.cpp
void stop_monitor(sock& s);

}  // namespace strix::zmq_abi
