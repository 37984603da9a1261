#pragma once
// proxy(): a broker between two blocking sockets, as zmq_proxy_steerable is.
//
//     // clients (REQ/DEALER) -> ROUTER frontend ... DEALER backend -> workers (REP/DEALER)
//     strix::link::blocking_socket front(ctx, socket_type::router), back(ctx, socket_type::dealer);
//     front.bind("tcp://*:5559");
//     back.bind("tcp://*:5560");
//     strix::link::proxy(front, back);                     // until a TERMINATE on a control socket
//
// Every message read from one side is sent whole to the other (XSUB/XPUB: subscriptions go
// upstream from the XPUB to the XSUB, messages downstream; ROUTER/DEALER: the routing envelope
// travels with the request and brings the reply back). A capture socket, when given, gets a
// copy of every message forwarded, either way. A control socket, when given, takes commands of
// one part:
//
//     PAUSE       stop forwarding (messages wait in the sockets, and then at their peers)
//     RESUME      forward again
//     TERMINATE   return from proxy()
//     STATISTICS  reply with 8 parts of uint64 (host order, as libzmq's): frontend messages
//                 in, bytes in, messages out, bytes out, then the same for the backend
//
// A REP control socket gets a reply to every command (the statistics, else an empty part),
// so a REQ can steer it; other types get a reply only to STATISTICS.
//
// It runs on the calling thread over blocking sockets, as libzmq's does on the application
// thread: the sockets' shards move the bytes, the thread only hands messages from one pipe to
// the other (a batch per wake-up). Sends wait while the other side is at its high-water mark,
// so a slow side holds the fast one back instead of losing messages (PUB-like sides drop, as
// they do anyway).
//
// Thread contract: the calling thread uses the sockets until proxy() returns.

#include <strix/link/blocking.hpp>

#include <cstdint>

namespace strix::link {

/// Counters a proxy keeps (and STATISTICS reports).
struct proxy_stats {
    struct side {
        std::uint64_t messages_in = 0, bytes_in = 0, messages_out = 0, bytes_out = 0;
    };
    side frontend, backend;
};

/// Forwards between frontend and backend until a TERMINATE arrives on control (forever when
/// there is no control socket) or one of the sockets is interrupted (blocking_socket::interrupt). capture and control
/// may be nullptr. Returns the counters. The sockets' thread.
proxy_stats proxy(blocking_socket& frontend, blocking_socket& backend, blocking_socket* capture = nullptr,
                  blocking_socket* control = nullptr);

}  // namespace strix::link
