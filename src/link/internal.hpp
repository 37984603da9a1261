#pragma once
// strix::link internals: the peers of a socket (pipes), the message being sent, the subscription
// trie, the patterns and the socket core that ties them to a session_group.
//
//   application ──send──> socket_core ──pattern (lb, dist, router, req/rep)──> pipe::write
//                                                                               ├─ zmtp_pipe (zmtp_pipe.cpp): ZMTP
//                                                                               frames into the session's send queue └─
//                                                                               inproc_pipe (inproc.cpp): owned parts,
//                                                                               batched per turn to the peer
//   session ──frames──> zmtp_pipe (greeting, READY, commands, multipart assembly) ─┐
//   inproc peer ──batch──> inproc_pipe ────────────────────────────────────────────┴─> pattern::receive ──> on_message

#include <strix/core/reactor_object.hpp>
#include <strix/core/shard.hpp>
#include <strix/core/shared_buffer.hpp>
#include <strix/core/timing_wheel.hpp>
#include <strix/link/socket.hpp>
#include <strix/net/connection.hpp>
#include <strix/net/session.hpp>
#include <strix/net/session_group.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace strix::link::detail {

class socket_core;

/// A message on its way out, with the encodings built once when several peers need them.
class outgoing {
public:
    /// `source`, when given, holds the same parts as shared buffers (socket::send(message)):
    /// large parts are then referenced, not copied.
    explicit outgoing(std::span<const bytes_view> parts, const part* source = nullptr) noexcept
        : parts_(parts), source_(source) {}
    std::span<const bytes_view> parts() const noexcept { return parts_; }
    /// Part i as a shared buffer, or nullptr when the application gave plain bytes.
    const part* source(std::size_t i) const noexcept { return source_ && source_[i].buffer() ? source_ + i : nullptr; }
    bool by_reference() const noexcept { return source_ != nullptr; }
    /// Bytes over all parts.
    std::size_t bytes() const noexcept {
        std::size_t n = 0;
        for (auto p : parts_) n += p.size();
        return n;
    }
    /// All parts as ZMTP frames in one shared buffer (fan-out to several ZMTP peers).
    const shared_buffer_ptr& wire();
    /// The parts copied into one shared buffer (inproc peers take references).
    const std::vector<part>& owned();
    /// True when more than one peer will take this message: share encodings instead of copying.
    bool shared = false;

private:
    std::span<const bytes_view> parts_;
    const part* source_;
    shared_buffer_ptr wire_;
    std::vector<part> owned_;
};

/// One peer of a socket.
class pipe {
public:
    virtual ~pipe() = default;
    /// At the high-water mark: a write now would exceed it.
    virtual bool full() noexcept = 0;
    /// Queues the message for the peer (the pattern checked full(), or accepts exceeding it).
    virtual void write(outgoing& m) = 0;
    /// SUB/XSUB: tells the peer to (un)subscribe topic.
    virtual void send_subscription(bool subscribe, bytes_view topic) = 0;
    /// Closes the connection to this peer (the socket hears detach).
    virtual void terminate(std::error_code why) = 0;
    /// The address this peer came through (for events).
    virtual const std::string& address() const noexcept = 0;
    /// Asks for socket_core::pipe_writable(*this) once the pipe drains below its mark.
    virtual void watch_writable() noexcept = 0;

    std::uint64_t id = 0;
    socket_type peer_type = socket_type::pair;
    std::string peer_identity;  // the Identity property from READY (may be empty)
    std::string routing_id;  // ROUTER: the id this peer is known by
    std::uint64_t mark = 0;  // a pattern's scratch space (fan-out dedupe)
    std::size_t topics = 0;  // PUB/XPUB: distinct topics this peer subscribes to
    bool attached = false;
};

/// Prefix subscriptions as a trie over topic bytes. Counted (a subscriber's own list: two adds
/// need two removes) or as a set per pipe (a publisher's view: a SUB repeats SUBSCRIBE for every
/// subscribe call and sends one CANCEL when its count reaches zero, as libzmq does).
class topic_trie {
public:
    explicit topic_trie(bool counted) noexcept : counted_(counted) {}
    struct change {
        bool pipe_first = false;  // this pipe gained the topic (or lost it)
        bool topic_first = false;  // the topic went from no subscription to one (or back)
    };
    change add(bytes_view topic, pipe* p);
    /// No-op (all false) when p does not hold the topic.
    change remove(bytes_view topic, pipe* p);
    /// Drops every subscription of p; f(topic, topic_gone) for each topic it held.
    void remove_all(pipe* p, const std::function<void(bytes_view, bool)>& f);
    /// Calls f(pipe*) for every subscription along msg's prefixes (a pipe may come twice).
    template <class F>
    void match(bytes_view msg, F&& f) const {
        std::uint32_t n = 0;
        for (std::size_t i = 0;; ++i) {
            for (auto& s : nodes_[n].subs) f(s.first);
            if (i == msg.size()) return;
            n = child(n, static_cast<std::uint8_t>(msg[i]));
            if (n == 0) return;
        }
    }
    /// True if any subscription is a prefix of msg.
    bool matches(bytes_view msg) const;
    /// Every topic with its total count (for re-sending subscriptions to a new peer).
    void for_each_topic(const std::function<void(bytes_view, std::uint32_t)>& f) const;
    bool empty() const noexcept { return topics_ == 0; }

private:
    struct node {
        std::vector<std::pair<std::uint8_t, std::uint32_t>> kids;  // sorted by byte
        std::vector<std::pair<pipe*, std::uint32_t>> subs;  // count per pipe
        std::uint32_t total = 0;
    };
    std::uint32_t child(std::uint32_t n, std::uint8_t b) const noexcept;
    std::uint32_t child_or_make(std::uint32_t n, std::uint8_t b);
    std::vector<node> nodes_{node{}};
    std::size_t topics_ = 0;
    bool counted_;
};

/// A socket type's rules.
class pattern {
public:
    explicit pattern(socket_core& c) : core_(c) {}
    virtual ~pattern() = default;
    virtual void attach(pipe& p) = 0;
    virtual void detach(pipe& p) = 0;
    virtual std::error_code send(std::span<const bytes_view> parts, const part* source) = 0;
    virtual void receive(pipe& p, std::span<const bytes_view> parts) = 0;
    /// A peer subscribed or cancelled (PUB/XPUB); others ignore it.
    virtual void subscription(pipe&, bool, bytes_view) {}
    /// SUB/XSUB only.
    virtual std::error_code subscribe(bool, bytes_view) { return link_errc::not_supported; }
    virtual std::size_t subscribers() const noexcept { return 0; }
    /// A pipe drained below its mark (after watch_writable).
    virtual void writable(pipe&) {}

protected:
    socket_core& core_;
};

std::unique_ptr<pattern> make_pattern(socket_core& c, socket_type t);

/// A socket's inproc pipes and names (inproc.cpp).
struct inproc_state;
struct inproc_state_deleter {
    void operator()(inproc_state* p) const noexcept;
};

/// What socket wraps: options, pattern, the session group for tcp/ipc, inproc pipes, callbacks.
class socket_core final : public session_handler {
public:
    socket_core(shard& sh, socket_type t, socket_options o);
    ~socket_core() override;

    /// Ends c (socket::~socket says what goes now and what lingers). When tcp/ipc peers still
    /// have output queued and the shard runs (not stopping), c deletes itself once that output
    /// is written, the peers are gone, `linger` passes (negative: no limit) or the shard exits;
    /// else it is deleted now. `done` runs as it is deleted. On c's shard, or on the owning
    /// thread before the shard runs.
    static void close(std::unique_ptr<socket_core> c, std::chrono::milliseconds linger,
                      std::function<void()> done = {});

    std::string bind(std::string_view address);
    void connect(std::string_view address);
    std::error_code send_part(bytes_view part, bool more);
    std::error_code send_parts(std::span<const bytes_view> parts, const part* source = nullptr);

    // --- called by pipes and patterns ----------------------------------------------------------
    void attach(pipe& p);
    void greet(pipe& p);  // probe_router, xpub_welcome_msg
    void detach(pipe& p);
    void deliver(std::span<const bytes_view> parts);  // to the application
    void event(socket_event::kind k, const std::string& ep, std::error_code ec = {}, std::string detail = {});
    void pipe_writable(pipe& p);
    void note_would_block() noexcept { want_writable_ = true; }
    std::uint64_t next_pipe_id() noexcept { return ++pipe_ids_; }

    // --- session_handler (tcp/ipc peers: zmtp_pipe.cpp) ----------------------------------------
    void on_open(session& s) override;
    void on_frame(session& s, std::span<const std::byte> frame) override;
    void on_protocol_error(session& s, std::error_code ec) override;
    void on_close(session& s, std::error_code ec) override;
    void on_connect_failed(connection& c, std::error_code ec) override;
    void on_drained(session& s) override;

    shard& owner;
    const socket_type type;
    const socket_options opts;
    socket_stats stats;
    std::unique_ptr<pattern> pat;
    std::function<void(message_view)> on_message;
    std::function<void()> on_writable;
    std::function<void(const socket_event&)> on_event;
    std::unique_ptr<inproc_state, inproc_state_deleter> inproc;
    bool closing = false;
    bool paused = false;  // pause_receiving(true)
    void pause(bool on);

private:
    void linger_check();

    std::function<void()> linger_done_;  // close()'s `done`
    timer_node linger_timer_;
    shard::hook_id exit_hook_ = 0;
    bool lingering_ = false;
    bool check_pending_ = false;
    std::unique_ptr<session_group> group_;  // declared last: destroyed first, while the pattern lives
    std::vector<connection_ptr> connections_;
    std::vector<bytes_view> pending_;  // parts of a message being sent with more = true
    std::vector<std::vector<std::byte>> pending_store_;
    std::uint64_t pipe_ids_ = 0;
    bool want_writable_ = false;
    bool notifying_ = false;
};

/// What the rest of strix::link reaches inside a socket (the blocking API's bridge).
struct socket_access {
    static socket_core& core(socket& s) noexcept { return *s.core_; }
    /// Closes s's core with this linger and `done` (s is left empty: destroy it next).
    static void close(socket& s, std::chrono::milliseconds linger, std::function<void()> done) {
        socket_core::close(std::move(s.core_), linger, std::move(done));
    }
};

// tcp:// and ipc:// (zmtp_pipe.cpp)
/// The session group's framing and limits for a socket's ZMTP peers.
session_group_config zmtp_group_config(const socket_options& o);

// inproc (inproc.cpp)
std::string inproc_bind(socket_core& c, std::string_view name);
void inproc_connect(socket_core& c, std::string_view name);
void inproc_close_all(socket_core& c);
/// Delivers what inproc peers sent while the socket was paused.
void inproc_resume(socket_core& c);

}  // namespace strix::link::detail
