#pragma once
// direct_link: the blocking API's inproc fast path between a blocking REQ and a blocking REP,
// from one application thread to the other with no shard in between.
//
//   REQ's thread                                             REP's thread
//   send() ──> to_rep (msg_pipe) ── futex wake only if ──> recv()
//   recv() <── to_req (msg_pipe) <── the reader sleeps ─── send() (the reply to a direct request)
//
// The two sockets stay connected through their shards as well (inproc://, idle while the fast
// path carries the requests): the shards keep peers, events and the fallback. Scope and every
// fallback rule are in docs/link.md ("The blocking API's inproc fast path"); in short:
//   - a link is made at a REQ's connect() to an inproc name a blocking REP bound, when that
//     connect is the REQ's first and only endpoint, and the REP has no link yet (one per REP);
//   - the REQ uses it while it has no other endpoint and the REP is open; once either changes,
//     every later request takes the shard path for good;
//   - REQ and REP alternate, so at most one request and one reply are in the pipes: nothing
//     sent on one path can overtake something sent on the other.
// A blocking_socket's own thread is the only one that touches its end of the pipes; the other
// thread is woken through the receiver's wake_seq with the same Dekker handshake the shard
// uses (publish, fence, read `waiting`).

#include "link/blocking/msg_pipe.hpp"

#include <atomic>
#include <memory>
#include <string_view>

namespace strix::link::detail {

struct blocking_shared;

struct direct_link {
    direct_link(std::shared_ptr<blocking_shared> req_side, std::shared_ptr<blocking_shared> rep_side)
        : req(std::move(req_side)), rep(std::move(rep_side)) {}

    const std::shared_ptr<blocking_shared> req;  // kept alive: the other side may still wake it
    const std::shared_ptr<blocking_shared> rep;
    msg_pipe to_rep;  // producer: REQ's thread, consumer: REP's thread
    msg_pipe to_req;  // producer: REP's thread, consumer: REQ's thread
    std::atomic<bool> rep_closed{false};  // the REP's destructor began: requests take the shard
};

/// A blocking REP bound `name` (inproc_key: the engine-scoped name): REQs connecting to it may get a
/// direct link. The REP's thread, after the bind succeeded.
void direct_offer(std::string_view name, const std::shared_ptr<blocking_shared>& rep);
/// The REP unbound `name`: REQs that connect to it from now on get no link to this REP (its
/// link, if any, stays). The REP's thread.
void direct_unoffer(std::string_view name, const blocking_shared* rep);
/// The REP closes: its names are no longer offered and its link (if any) says rep_closed. The
/// REP's thread.
void direct_withdraw(const blocking_shared* rep) noexcept;
/// A REQ whose first endpoint is inproc `name`: the link to the blocking REP that bound it,
/// or null (no blocking REP there, or it has a link already). The REQ's thread.
std::shared_ptr<direct_link> direct_connect(std::string_view name, const std::shared_ptr<blocking_shared>& req);

/// Appends m to `p` as one message and publishes it (the producer's thread).
void direct_put(msg_pipe& p, const message& m);
void direct_put(msg_pipe& p, bytes_view one_part);
/// Wakes `to`'s thread if it sleeps on a receive or a poll (after a direct_put). Any thread.
void direct_wake(blocking_shared& to) noexcept;

}  // namespace strix::link::detail
