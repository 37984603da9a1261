#pragma once
// strix::link::socket: a ZeroMQ-style messaging socket that lives on one shard.
//
// The socket, its connections and the application code that uses it run on the same shard
// thread: a message goes from the application's send() into the connection's send queue and out
// in the loop turn's one gather write, and a received message goes from the receive buffer to
// the application's callback without crossing a thread (libzmq moves every message between an
// application thread and an I/O thread through a pipe).
//
//     // on shard sh:
//     strix::link::socket pull(sh, strix::link::socket_type::pull);
//     pull.bind("tcp://127.0.0.1:5555");
//     pull.on_message([](strix::link::message_view m) { use(m[0]); });
//
//     strix::link::socket push(sh, strix::link::socket_type::push);
//     push.connect("tcp://127.0.0.1:5555");
//     push.on_writable([&] { while (!push.send(payload)) {} });  // sends until would_block
//
// Patterns follow RFC 28-31 (rfc.zeromq.org) and libzmq 4.3: PAIR, PUB/SUB, XPUB/XSUB, PUSH/PULL,
// REQ/REP, DEALER/ROUTER. Transports: tcp://, ipc:// (Unix socket), inproc:// (same process).
// Wire: ZMTP 3.1, so libzmq peers interoperate (strix/link/zmtp.hpp); NULL by default, CURVE or
// PLAIN with ZAP through socket_options::security (strix/link/security.hpp).
//
// Sending never blocks the shard. send() returns an error_code: empty (queued), would_block
// (every eligible peer is at its high-water mark, or none is connected yet: messages are never
// queued for a peer that is not connected, as libzmq does with ZMQ_IMMEDIATE), or a pattern's
// own error. After would_block the on_writable callback runs once sending can succeed again.
// PUB and XPUB never report would_block: a subscriber at its high-water mark misses the message.
//
// Thread contract: everything here on the socket's shard only (the blocking API in
// blocking.hpp wraps a socket for other threads). Build it on the shard, or before the engine
// starts; destroy it on the shard.

#include <strix/link/message.hpp>
#include <strix/link/security.hpp>
#include <strix/link/zmtp.hpp>
#include <strix/net/endpoint.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace strix {
class shard;
}

namespace strix::link {

enum class socket_type : std::uint8_t { pair, pub, sub, req, rep, dealer, router, pull, push, xpub, xsub };

/// "PUB", "ROUTER", ... (ZMTP's Socket-Type names).
const char* to_string(socket_type t) noexcept;
/// Whether a socket of type a may talk to a peer of type b (RFC 28-31, libzmq's table).
bool compatible(socket_type a, socket_type b) noexcept;

struct socket_options {
    /// Messages queued per peer before the high-water mark: PUB drops, the others report
    /// would_block. 0 = no limit. Inproc peers add both sides' marks, as libzmq does.
    std::uint32_t sndhwm = 1000;
    std::uint32_t rcvhwm = 1000;
    /// Largest message part accepted from a peer, checked from the frame header before anything
    /// is buffered; a peer that announces more is closed (and counted).
    std::size_t max_msg_size = 1024 * 1024;
    /// Routing id announced to ROUTER peers (REQ, DEALER, ROUTER; empty = let the ROUTER choose).
    std::string routing_id;
    /// ROUTER: a message to an unknown routing id fails with no_peer (and a full peer with
    /// would_block) instead of being dropped.
    bool router_mandatory = false;
    /// XPUB: pass every subscription message to the application, not only the first per topic.
    bool xpub_verbose = false;
    /// ZMTP heartbeats: send a PING every interval; close when nothing arrives within timeout
    /// (0 = the interval); ask the peer to close when it hears nothing from us for ttl (0 = none).
    std::chrono::milliseconds heartbeat_ivl{0};
    std::chrono::milliseconds heartbeat_timeout{0};
    std::chrono::milliseconds heartbeat_ttl{0};
    /// A connection must finish its ZMTP handshake within this (0 = no limit).
    std::chrono::milliseconds handshake_ivl{30000};
    /// Reconnect delay of connecting sides: starts here, doubles up to reconnect_ivl_max.
    std::chrono::milliseconds reconnect_ivl{100};
    std::chrono::milliseconds reconnect_ivl_max{5000};
    /// How long a closed socket keeps sending what it had queued for its peers: negative = until
    /// it is delivered (libzmq's default, -1), 0 = dropped at once, else up to this long. The
    /// blocking API's queue counts too. See docs/link.md, "Linger".
    std::chrono::milliseconds linger{-1};

    // --- more of libzmq's options (docs/link.md, "Socket options", has libzmq's names) --------
    /// ROUTER, DEALER, REQ: send an empty message to every peer as its handshake completes, so
    /// a ROUTER on the other side learns the new peer's routing id at once (ZMQ_PROBE_ROUTER).
    bool probe_router = false;
    /// XPUB: subscriptions are not applied by the socket; every one goes to the application,
    /// which applies it with subscribe()/unsubscribe() for the peer that sent the last one
    /// (ZMQ_XPUB_MANUAL).
    bool xpub_manual = false;
    /// XPUB: sent to every peer as its handshake completes, when not empty (ZMQ_XPUB_WELCOME_MSG;
    /// a SUB receives it only when subscribed to a prefix of it).
    std::string xpub_welcome_msg;
    /// The blocking API: keep only the newest message in each direction (ZMQ_CONFLATE): recv()
    /// returns the newest one waiting and drops the older ones, and messages waiting for a peer
    /// are replaced by the newest. For one-part messages on PUSH, PULL, PUB, SUB and DEALER.
    bool conflate = false;
    /// The blocking API: a send with no completed connection waits for one (up to its timeout,
    /// then would_block) instead of queueing up to sndhwm messages (ZMQ_IMMEDIATE). Messages are
    /// never handed to a connection before its handshake completes, whatever this says.
    bool immediate = false;
    /// TCP keepalive on this socket's tcp connections, bound and connected (ZMQ_TCP_KEEPALIVE,
    /// _IDLE, _INTVL, _CNT): -1 leaves the system's setting, as libzmq's defaults do.
    int tcp_keepalive = -1;
    int tcp_keepalive_idle = -1;
    int tcp_keepalive_intvl = -1;
    int tcp_keepalive_cnt = -1;

    /// CURVE or PLAIN with their keys, credentials and ZAP handler (strix/link/security.hpp);
    /// NULL when left empty. Applies to tcp:// and ipc:// peers (inproc needs none).
    security_options security;
};

/// What a monitor hears (socket::on_event). endpoint is the bound or connected address.
struct socket_event {
    enum class kind : std::uint8_t {
        listening,           // bind succeeded
        accepted,            // a peer connected to a bound endpoint
        connected,           // an outbound connection's TCP/IPC connect succeeded
        connect_retried,     // an outbound attempt failed; another follows after a delay
        handshake_succeeded, // ZMTP handshake done: the peer can exchange messages
        handshake_failed,    // bad greeting, wrong mechanism, wrong socket type, timeout (error says)
        disconnected,        // a connected peer went away (error says why)
        hwm_reached,         // a send found a peer at its high-water mark (PUB: message dropped)
        subscribed,          // PUB/XPUB: a peer subscribed (topic in detail) -- see subscribers()
        unsubscribed,        // PUB/XPUB: a peer cancelled a subscription
        closed,              // a listener or connection closed
    };
    kind what;
    std::string endpoint;
    std::error_code error;
    std::string detail;
};
const char* to_string(socket_event::kind k) noexcept;

/// Per-socket counters.
struct socket_stats {
    std::uint64_t messages_out = 0, messages_in = 0;
    std::uint64_t dropped_hwm = 0;         // PUB/XPUB/ROUTER: messages a full peer missed
    std::uint64_t dropped_unroutable = 0;  // ROUTER: unknown routing id; REQ/REP: out of turn
    std::uint64_t handshake_failures = 0;  // peers refused during the handshake
    std::uint64_t protocol_errors = 0;     // peers closed for bad frames or oversized messages
    std::uint64_t peers = 0;               // peers that completed the handshake and are attached
};

namespace detail {
class socket_core;
struct socket_access;
}// namespace detail

class socket {
public:
    socket(shard& sh, socket_type type, socket_options opts = {});
    /// Closes the socket: inproc names and listeners go now, inproc peers get what was sent to
    /// them, and tcp/ipc peers keep receiving what is queued for them until it is written or
    /// the linger (socket_options::linger) passes; the socket's callbacks are not called any
    /// more. The output outlives the object only while the shard runs and is not stopping (an
    /// engine's stop drains it instead, bounded by its drain timeout). On the socket's shard.
    ~socket();
    socket(const socket&) = delete;
    socket& operator=(const socket&) = delete;

    /// Listens at tcp://host:port (port 0 or * = any free port), ipc://path or inproc://name.
    /// Returns the bound address (with the real port). Throws std::system_error (address in
    /// use, bad path) or std::invalid_argument (malformed address).
    std::string bind(std::string_view address);

    /// Connects to tcp://, ipc:// or inproc:// and keeps reconnecting (reconnect_ivl) until the
    /// socket closes. Returns at once; on_event tells what happens. inproc: the name may be
    /// bound later (the connection completes then).
    void connect(std::string_view address);

    /// zmq_unbind: stops listening at `endpoint`, as bind() returned it (tcp: with the real port;
    /// tcp://*:N and tcp://0.0.0.0:N are one) or as given to bind() when that named a port. The
    /// port, path or name is free again at return, and a `closed` event says so. tcp and ipc:
    /// the connections the listener accepted close too, after the loop turn (a callback of one
    /// of them may call this), sending what they hold within the linger (libzmq 4.3 does the
    /// same); inproc: connections made before stay, as in libzmq.
    /// Throws std::system_error with errc::no_such_file_or_directory (libzmq's ENOENT) when the
    /// socket has no such bind, std::invalid_argument for a malformed address. On the shard.
    void unbind(std::string_view endpoint);
    /// zmq_disconnect: ends the connections made by connect(endpoint) (every one, when it was
    /// connected twice) and their reconnecting, after the loop turn; what they still hold is
    /// dropped, as libzmq drops an endpoint's queued messages (inproc: the peer gets what was
    /// sent); an inproc connect still waiting for its bind is withdrawn at once.
    /// Throws as unbind. On the shard.
    void disconnect(std::string_view endpoint);

    /// zmq_setsockopt after creation: replaces the options. What belongs to a connection
    /// (sndhwm and rcvhwm of inproc pipes, max_msg_size, routing_id, heartbeats, handshake_ivl,
    /// reconnect intervals, tcp keepalive, security) applies to the binds and connects made
    /// after the call: a listener and a connection keep the options they were made with, as
    /// libzmq's do. sndhwm also applies to existing tcp and ipc connections (libzmq 4.3 updates
    /// its pipes too); linger applies at close, to every connection; router_mandatory,
    /// xpub_verbose, xpub_manual, probe_router and xpub_welcome_msg to the next send,
    /// subscription or peer. Throws std::invalid_argument for a malformed key, changing
    /// nothing. On the shard.
    void set_options(const socket_options& o);

    /// Sends one part; more = further parts follow (the message goes out with the last one).
    std::error_code send(bytes_view part, bool more = false);
    std::error_code send(std::string_view text, bool more = false) { return send(as_bytes(text), more); }
    /// Sends a whole message.
    std::error_code send(const message& m);
    std::error_code send(std::initializer_list<bytes_view> parts);

    /// Called for every received message (after the pattern's rules: SUB filtering, REQ/REP
    /// envelopes stripped, ROUTER's routing id added as the first part).
    void on_message(std::function<void(message_view)> f);
    /// Called once sending may succeed again after a would_block.
    void on_writable(std::function<void()> f);
    /// Monitor: connection, handshake, high-water and subscription events.
    void on_event(std::function<void(const socket_event&)> f);

    /// SUB/XSUB: receive messages whose first part starts with topic (empty = everything).
    /// Counted: two subscribes of one topic need two unsubscribes. XPUB with xpub_manual: the
    /// peer whose (un)subscription came last gets (or loses) the topic.
    void subscribe(bytes_view topic);
    void subscribe(std::string_view topic) { subscribe(as_bytes(topic)); }
    void unsubscribe(bytes_view topic);
    void unsubscribe(std::string_view topic) { unsubscribe(as_bytes(topic)); }

    /// Stops (true) or resumes (false) taking messages from peers, for an application that
    /// consumes them elsewhere and must not fall behind without bound: connections stop reading
    /// (the kernel and then the peer's high-water mark hold the rest) and inproc peers wait for
    /// credit. Messages already read when it is called are still delivered.
    void pause_receiving(bool on);

    /// PUB/XPUB: peers that currently hold at least one subscription. With on_event's
    /// `subscribed` this answers ZeroMQ's "slow joiner": wait for your subscribers before
    /// publishing.
    std::size_t subscribers() const noexcept;
    /// Peers that completed the handshake.
    std::size_t peers() const noexcept;

    socket_type type() const noexcept;
    shard& owner() const noexcept;
    const socket_options& options() const noexcept;
    socket_stats stats() const noexcept;

private:
    friend struct detail::socket_access;
    std::unique_ptr<detail::socket_core> core_;
};

}  // namespace strix::link
