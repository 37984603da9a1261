#pragma once
// The blocking convenience API: strix::link for threads that are not shards, as cppzmq is for
// libzmq. A client is a few lines:
//
//     strix::link::context ctx;                                   // one shard of its own
//     strix::link::blocking_socket req(ctx, strix::link::socket_type::req);
//     req.connect("tcp://127.0.0.1:5555");
//     req.send("hello");
//     auto reply = req.recv();                                    // std::optional<message>
//     std::cout << (*reply)[0].text() << '\n';
//
// Each blocking_socket wraps a link::socket living on one of the context's shards. Between the
// calling thread and that shard run two lock-free single-producer single-consumer pipes:
//
//   send() ──> [ outgoing pipe, up to sndhwm messages ] ──> shard: socket::send
//   recv() <── [ incoming pipe, up to rcvhwm messages ] <── shard: on_message
//
// send() copies (small parts) or references (large parts) the message into the outgoing pipe
// and returns; it waits only while the pipe holds sndhwm messages the shard could not pass on
// (every peer at its high-water mark, or none connected yet). It wakes the shard only when the
// shard's side went idle. recv() takes the next message from the incoming pipe and sleeps (a
// futex) only when it is empty; the shard wakes it once per loop turn that brought messages.
// When the incoming pipe holds rcvhwm messages the socket pauses receiving, so a slow reader
// pushes back on its peers instead of growing memory.
//
// Errors: a type's own refusals come back from the call (not_supported; REQ/REP out of turn:
// bad_state; ROUTER with router_mandatory: no_peer), and would_block when the timeout passed
// with sndhwm messages waiting. REQ and REP in turn and every other type take the pipe; a send
// out of turn and ROUTER with router_mandatory ask the shard and wait for its answer. A message
// taken into the pipe is the socket's: a pattern that drops it (PUB with no subscriber, ROUTER
// to an unknown id) counts it in stats(), as the shard-native socket does. With no peer yet,
// up to sndhwm messages wait in the pipe for one (as in libzmq without ZMQ_IMMEDIATE; with
// socket_options::immediate a send waits for a peer instead, and with conflate only the newest
// message waits). Several sockets are waited on together with poll() (strix/link/poll.hpp).
//
// inproc between a blocking REQ and a blocking REP skips the shard: a pipe from one thread to the
// other (src/link/blocking/direct_link.hpp; scope and fallbacks in docs/link.md).
//
// Closing: the destructor returns after a round trip to the shard; what is still in the
// outgoing pipe and the connections' queues keeps going out until delivered or the linger passes
// (socket_options::linger, default -1: until delivered, as libzmq's). Binds and listeners go
// once the pipe is empty (at once, unless messages wait at a high-water mark). ~context waits
// for its closing sockets, as zmq_ctx_term does.
//
// Thread contract: a blocking_socket may be used from any one thread at a time (not a shard of
// its context's engine: it would wait on itself); handing it to another thread needs the
// usual happens-before (a mutex, a join).

#include <strix/link/socket.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <cerrno>

namespace strix {
class engine;
}
namespace strix::link::detail {
struct blocking_shared;
class blocking_bridge;
struct direct_link;
class msg_pipe;
struct closing_sockets;
struct poll_access;
}  // namespace strix::link::detail

namespace strix::link {

class context {
public:
    /// An engine of its own with `shards` shards (not pinned), started now.
    explicit context(unsigned shards = 1);
    /// Places sockets on an engine the application runs (started, and outliving the context).
    explicit context(engine& e);
    /// With an engine of its own: waits until every socket closed on it delivered its queued
    /// output or its linger passed (as zmq_ctx_term does: a socket with linger -1 whose peer
    /// never takes its output keeps it waiting), then stops and joins the engine. Destroy the
    /// sockets first. The thread that built it.
    ~context();
    context(const context&) = delete;
    context& operator=(const context&) = delete;

    /// The engine the sockets live on. Any thread.
    engine& eng() noexcept { return *eng_; }
    /// The shard the next socket goes to (round-robin). Any one thread at a time.
    unsigned next_shard() noexcept;

private:
    friend class blocking_socket;
    std::shared_ptr<detail::closing_sockets> closing_;
    std::unique_ptr<engine> owned_;
    engine* eng_;
    unsigned next_ = 0;
};

class blocking_socket {
public:
    using duration = std::chrono::milliseconds;
    static constexpr duration forever{-1};

    /// A socket on the context's next shard (a round trip to it). The calling thread.
    blocking_socket(context& ctx, socket_type type, socket_options opts = {});
    /// Closes the socket (a round trip to the shard): queued output keeps going out in the
    /// background until delivered or the linger passes (socket_options::linger), and ~context
    /// waits for that. Binds go once the outgoing pipe is empty. The socket's thread.
    ~blocking_socket();
    blocking_socket(const blocking_socket&) = delete;
    blocking_socket& operator=(const blocking_socket&) = delete;

    /// See socket::bind / socket::connect. Errors are thrown here, on the calling thread (a round
    /// trip to the shard). The socket's thread.
    std::string bind(std::string_view address);
    void connect(std::string_view address);
    /// See socket::unbind / socket::disconnect (ENOENT and malformed addresses are thrown here,
    /// on the calling thread): a round trip to the shard, after the messages sent before. They
    /// return once the change has been heard: the inproc peers whose pipes it closed have
    /// detached them, so their next send or poll sees it (as libzmq's peer does, its next call
    /// taking the command first). The socket's thread.
    void unbind(std::string_view address);
    void disconnect(std::string_view address);

    /// See socket::set_options; the blocking API's own state follows too: send() waits at the
    /// new sndhwm, the incoming pipe holds up to the new rcvhwm, and conflate, immediate and
    /// router_mandatory apply to the next send and recv. A round trip to the shard, after the
    /// messages sent before (a message still waiting for room goes out under the new options).
    /// Throws std::invalid_argument (a malformed key) changing nothing. The socket's thread.
    void set_options(const socket_options& o);

    /// Queues a message for the socket's peers and returns. Waits only while sndhwm messages
    /// are queued (none while sndhwm is 0), up to `timeout` (then would_block); type errors
    /// (not_supported, REQ/REP bad_state, ROUTER no_peer with router_mandatory) come back at
    /// once. Parts up to 512 bytes are copied, larger ones referenced (message parts are
    /// immutable). The socket's thread.
    std::error_code send(const message& m, duration timeout = forever);
    /// A one-part message of these bytes (copied). The socket's thread.
    std::error_code send(bytes_view bytes, duration timeout = forever);
    std::error_code send(std::string_view text, duration timeout = forever) { return send(as_bytes(text), timeout); }

    /// The next message, or nullopt after `timeout` (0: only what is already there). A message
    /// from a tcp:// or ipc:// peer carries its connection's properties (message::properties():
    /// Socket-Type, Identity, Peer-Address, ZAP's User-Id and metadata; see message.hpp), shared
    /// with the connection's other messages. The socket's thread.
    std::optional<message> recv(duration timeout = forever);

    /// SUB/XSUB (a round trip to the shard, after the messages sent before it). The socket's
    /// thread.
    void subscribe(std::string_view topic);
    void unsubscribe(std::string_view topic);

    /// PUB/XPUB: waits until at least n peers hold a subscription (ZeroMQ's "slow joiner": a
    /// publisher that starts sending before its subscribers' subscriptions arrived loses the
    /// first messages). False after timeout. The socket's thread.
    bool wait_for_subscribers(std::size_t n, duration timeout = forever);
    /// Waits until at least n peers completed the handshake. False after timeout. The socket's
    /// thread.
    bool wait_for_peers(std::size_t n, duration timeout = forever);

    /// The next monitor event (the most recent 1,000 are kept), or nullopt after timeout. The
    /// socket's thread.
    std::optional<socket_event> next_event(duration timeout = duration(0));

    /// The socket's counters, after the messages sent before the call were taken from the
    /// outgoing pipe (a round trip to the shard). The socket's thread.
    socket_stats stats();

    /// The socket's type. Any thread.
    socket_type type() const noexcept { return type_; }

    // --- for event loops and the C API (libzmq's zmq.h is built on these) ---------------------

    /// Receives the next message part by part without building a message: sink(user, bytes,
    /// ref, more) for each part (bytes valid during the call; ref, for a part passed by
    /// reference, may be moved out). False after `timeout`, as recv(). The socket's thread.
    using part_sink = void (*)(void* user, bytes_view bytes, part* ref, bool more);
    bool recv_into(part_sink sink, void* user, duration timeout = forever);
    /// After recv_into(): the properties of the message it passed on (what zmq_msg_gets reads;
    /// see message_properties), handed over: null when it had none (inproc peers) or when they
    /// were taken already. recv() puts them in the message instead. The socket's thread.
    message_properties_ptr received_properties() noexcept { return std::move(recv_props_); }

    /// A file descriptor that turns readable when the socket may have become readable or
    /// writable, or had a monitor event since the last clear_notify() (libzmq's ZMQ_FD, edge
    /// triggered: look with readable()/writable() until they say no before waiting on it again).
    /// Made on the first call; closed with the socket. The socket's thread.
    int notify_fd();
    /// Rearms notify_fd; call it before looking at the socket's state (ZMQ_EVENTS does). The
    /// socket's thread.
    void clear_notify() noexcept;

    /// Makes the socket's waits (send, recv, poll, wait_for_*, next_event), current and later,
    /// return as if their timeout had passed; for a context being terminated (zmq_ctx_term's
    /// ETERM). Any thread.
    void interrupt() noexcept;
    /// Whether interrupt() was called. Any thread.
    bool interrupted() const noexcept;

    /// Calls f on the socket's shard for every monitor event from now on (an empty f: stop), as
    /// well as queueing it for next_event; for a monitor that must forward events while the
    /// application's thread is busy elsewhere. The socket's thread.
    void on_shard_event(std::function<void(const socket_event&)> f);
    /// Peers that completed the handshake, as of the shard's last turn that changed anything
    /// (no round trip; wait_for_peers asks the shard). Any thread.
    std::size_t peers_seen() const noexcept;
    /// The index of the shard the socket lives on (for work that must run beside it). Any thread.
    unsigned shard_index() const noexcept { return shard_; }

private:
    friend struct detail::poll_access;
    template <class F>
    auto on_shard(F&& f) -> decltype(f());
    template <class F>
    void on_shard_settled(F&& f);
    bool queueable() const noexcept;
    void queued();
    void turn_taken() noexcept;
    std::error_code send_sync(const message& m, duration timeout);
    std::error_code send_queued(duration timeout);
    std::error_code await_peer(duration timeout);
    detail::msg_pipe* direct_out() noexcept;
    detail::msg_pipe* next_in() noexcept;
    void sent_direct() noexcept;
    template <class Take>
    bool recv_with(duration timeout, Take&& take);

    context& ctx_;
    unsigned shard_;
    socket_type type_;
    bool can_send_;
    bool sync_sends_;            // ROUTER with router_mandatory: every send asks the shard
    bool conflate_;              // socket_options::conflate
    bool immediate_;             // socket_options::immediate
    bool req_waiting_ = false;   // REQ: a request went out, its reply not yet received
    bool rep_holding_ = false;   // REP: a request was received, its reply not yet sent
    // The inproc fast path between a blocking REQ and a blocking REP (src/link/blocking/direct_link.hpp).
    std::shared_ptr<detail::direct_link> link_;  // REQ: to the REP its only endpoint is bound by
    unsigned endpoints_ = 0;       // binds and connects so far
    bool direct_ok_ = false;       // REQ: requests may take link_
    bool req_direct_ = false;      // REQ: the request waiting for its reply went through link_
    bool reply_direct_ = false;    // REP: the request being answered came through the link
    bool offered_ = false;         // REP: bound an inproc name that REQs may link to
    bool prefer_direct_ = false;   // REP: which of its two inputs recv looks at first (fairness)
    std::uint64_t direct_out_ = 0, direct_in_ = 0;  // messages through the link (for stats)
    message_properties_ptr recv_props_;  // the last received message's, until taken
    std::shared_ptr<detail::blocking_shared> st_;
    detail::blocking_bridge* bridge_;  // lives on shard_ until it finished closing
};

}  // namespace strix::link
