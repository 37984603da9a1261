#pragma once
// A socket's peers as the patterns see them: a pipe per peer, written with an outgoing message.
// Each transport implements pipe (zmtp/zmtp_pipe.cpp for tcp:// and ipc://, transport/inproc.cpp)
// and attaches its pipes to the socket as their peers complete the handshake.
//
//   pattern ──outgoing──> pipe::write ──> zmtp_pipe: ZMTP frames into the session's send queue
//                                    └──> inproc_pipe: owned parts, batched per turn to the peer

#include <strix/core/shared_buffer.hpp>
#include <strix/link/message.hpp>
#include <strix/link/socket.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <system_error>
#include <vector>

namespace strix::link::detail {

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
    message_properties_ptr props;  // tcp/ipc: the connection's, set before attach; inproc: none
    std::string routing_id;  // ROUTER: the id this peer is known by
    std::uint64_t mark = 0;  // a pattern's scratch space (fan-out dedupe)
    std::size_t topics = 0;  // PUB/XPUB: distinct topics this peer subscribes to
    bool attached = false;
};

}  // namespace strix::link::detail
