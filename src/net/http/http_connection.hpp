#pragma once
// connection_state: what http::protocol keeps per session (the session's state, through a
// shared_ptr so that a handler closing the session mid-request does not free it under the
// parse loop): the parser, the queue of answers owed in request order, the bytes that wait while
// max_pipelined answers are owed, and the one timer that serves the head, body and keep-alive
// deadlines. The session's shard only.

#include "http_request_parser.hpp"

#include <strix/core/shard.hpp>
#include <strix/core/timing_wheel.hpp>
#include <strix/net/http_server.hpp>

#include <cstdint>
#include <deque>
#include <string>

namespace strix::http::detail {

/// One request's place in the answer queue.
struct slot {
    std::string bytes;       // the serialized answer, once done
    bool done = false;       // answered (waits only for the earlier ones)
    bool close = false;      // the connection closes after this answer
    bool head_only = false;  // HEAD: the answer's head only
    unsigned version_minor = 1;
};

enum class timer_phase : std::uint8_t { none, idle, head, body };

struct connection_state {
    connection_state(protocol& p, session& s, parser_limits limits) : proto(p), parser(limits) {
        timer.set_callback([this, sp = &s] { proto.timer_fired(*sp); });
    }
    ~connection_state() = default;  // the timer is cancelled in protocol::on_close
    connection_state(const connection_state&) = delete;
    connection_state& operator=(const connection_state&) = delete;

    protocol& proto;
    request_parser parser;
    std::deque<slot> slots;        // answers owed or waiting for an earlier one, in request order
    std::uint64_t first_seq = 0;   // the sequence number of slots.front()
    std::uint64_t dispatched = 0;  // requests handed to the handler so far
    std::string pending;           // read but not parsed: max_pipelined answers are owed
    timer_node timer;
    timer_phase timer_for = timer_phase::none;
    std::uint64_t timer_request = 0;  // `dispatched` when the timer was armed
    bool waiting = false;             // reading suspended at max_pipelined
    bool parsing = false;             // inside protocol::parse (a nested resume waits for it)
    bool done = false;                // no more requests: a closing answer is queued or sent
    bool closed = false;              // the session is gone
};

}  // namespace strix::http::detail
