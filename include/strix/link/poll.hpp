#pragma once
// poll(): waits until any of several blocking sockets can receive or send, as zmq_poll does.
//
//     strix::link::poll_item items[] = {{&frontend, strix::link::poll_in}, {&control, strix::link::poll_in}};
//     if (strix::link::poll(items, 100ms) > 0 && (items[0].revents & strix::link::poll_in))
//         auto m = frontend.recv(0ms);  // does not wait
//
// Readable: a message waits in the socket's incoming pipe (recv(0ms) returns it). Writable: a
// send would not wait (fewer than sndhwm messages in the outgoing pipe, or sndhwm 0), and for
// REQ/REP it is the socket's turn to send (REQ before its request, REP holding one).
//
// The thread sleeps on every socket's wake-up word at once (Linux's futex_waitv, 5.16 and
// later); an older kernel makes it look again every millisecond instead. The shard socket API
// needs no poller: its on_message and on_writable callbacks are its readiness (socket.hpp).
//
// Thread contract: the thread that uses the sockets (each may be polled by one thread at a
// time, the one that sends and receives on it).

#include <strix/link/blocking.hpp>

#include <chrono>
#include <cstdint>
#include <span>

namespace strix::link {

/// What poll() waits for and reports (bit flags, as ZMQ_POLLIN / ZMQ_POLLOUT).
enum poll_events : std::uint8_t { poll_in = 1, poll_out = 2 };

struct poll_item {
    blocking_socket* socket = nullptr;
    std::uint8_t events = 0;   // poll_in | poll_out
    std::uint8_t revents = 0;  // set by poll(): the events that are ready now
};

/// Sets every item's revents and returns how many items have any, waiting up to `timeout` for
/// at least one (negative: no limit; 0: look once); an interrupted socket
/// (blocking_socket::interrupt) ends the wait early. At most 128 items. The sockets' thread.
std::size_t poll(std::span<poll_item> items, std::chrono::milliseconds timeout);

/// Whether a recv(0ms) would return a message now. The socket's thread.
bool readable(blocking_socket& s) noexcept;
/// Whether a send would queue without waiting now. The socket's thread.
bool writable(blocking_socket& s) noexcept;

}  // namespace strix::link
