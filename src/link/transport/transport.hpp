#pragma once
// A link transport: how a socket binds, connects, unbinds, disconnects, closes and pauses on one
// address scheme. The table (transport_table.cpp) has a row per scheme; socket_core looks the row
// up at bind, connect, unbind and disconnect, makes the transport's state for the socket at its
// first use there, and asks every state it made at close, pause_receiving and set_options. Messages never pass through
// here: a transport's peers are pipes (pipe.hpp) that the pattern writes to directly.
//
//   socket::bind("tcp://...") ──find_transport──> row {"tcp", make_stream_transport}
//                                                   │ first tcp:// or ipc:// use in this socket
//                                                   v
//                             transport_state (this socket's listeners, connections or names)
//                                                   │ each peer becomes a pipe
//                                                   v
//                                     socket_core::attach(pipe) ──> pattern ──> pipe::write
//
// Adding a transport: one file with a transport_state (and the pipe its peers use, unless it
// carries ZMTP over a net session like stream.cpp) and its make function, and one row in
// transport_table.cpp.

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace strix::link::detail {

class socket_core;

/// What one transport holds for one socket: its listeners, connections or names there. Made on
/// the socket's shard (or before the engine starts) and used only there. Destroying it drops
/// what is still open at once (the socket's core is going; its pattern still lives).
class transport_state {
public:
    virtual ~transport_state() = default;
    /// Listens at `address` (scheme included) and reports `listening`; returns the bound address
    /// (tcp: with the real port). Throws std::system_error or std::invalid_argument.
    virtual std::string bind(std::string_view address) = 0;
    /// Connects to `address` (scheme included), retrying as the socket's options say; returns at
    /// once (on_event tells the rest). Throws std::invalid_argument for a malformed address.
    virtual void connect(std::string_view address) = 0;
    /// Stops listening at `address` (as bind returned it, or as given to bind when that named a
    /// port) and reports `closed`; what the listener accepted goes as the transport says.
    /// Throws std::system_error(no_such_file_or_directory) when nothing is bound there, and
    /// std::invalid_argument for a malformed address.
    virtual void unbind(std::string_view address) = 0;
    /// Ends the connections made by connect(address) and their reconnecting. Throws as unbind.
    virtual void disconnect(std::string_view address) = 0;
    /// socket::set_options replaced the socket's options: apply what applies to what exists
    /// (the linger); binds and connects made from now on read the new ones themselves.
    virtual void options_changed() {}
    /// After a loop turn in which a peer closed, or unbind or disconnect ran: end what they
    /// left to end, and drop what is unused. True: call again after the next turn.
    virtual bool prune() { return false; }
    /// The socket closes and may linger: listeners and names go, and peers get what was sent to
    /// them before their close.
    virtual void close() = 0;
    /// The linger is over (or the shard exits): what still flushes is dropped now.
    virtual void abort() = 0;
    /// Peers still writing what was queued before close(); the socket lingers while a transport
    /// has some, and hears socket_core::peer_closed as each goes.
    virtual std::size_t flushing() const noexcept = 0;
    /// socket::pause_receiving: stop (true) or resume (false) taking messages from peers.
    virtual void pause(bool on) = 0;
};

/// A row of the transport table.
struct transport {
    std::string_view scheme;  // "tcp" for tcp://... addresses
    /// Makes this transport's state in a socket. Rows with the same function share one state per
    /// socket (tcp and ipc: one session group).
    std::unique_ptr<transport_state> (*make)(socket_core& c);
};

/// The row for address's scheme (the text before "://"). Throws std::invalid_argument naming
/// the schemes there are when no row has it. Any thread.
const transport& find_transport(std::string_view address);

/// Every row, in table order. Any thread.
std::span<const transport> transports() noexcept;

}  // namespace strix::link::detail
