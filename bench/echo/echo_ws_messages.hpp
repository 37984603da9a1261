#pragma once
// strix-echo-bench --ws: writing the load tool's messages as masked frames and checking the
// frames that come back (echo_ws.hpp has the frame format). One per worker thread.
//
// A message's payload (S bytes from sender c, its sequence number q on that connection):
//
//   byte 0        8          12                               S-8        S
//        | q (LE) | c (LE)   | the run's pattern (fixed)        | q ^ c<<40 |
//
// (a shorter payload keeps what fits: q, then c; the tail only when S >= 20). The pattern is
// splitmix64 words made once per run, so building and checking a message costs a copy and a
// memcmp, not a pseudo-random stream per message: at 1 KB that stream was the client's largest
// cost and made the client, not the server, the limit of the shoot-out. Every byte is still
// checked; the head and tail name the message and its sender, so a message echoed to the wrong
// connection, out of order, or spliced from two messages fails. An echo may come back in
// fragments: each piece is compared with the expected body at its offset.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "echo_buffer.hpp"
#include "echo_ws.hpp"

namespace strix {

/// What one connection is in the middle of receiving.
struct ws_receive_state {
    std::size_t off = 0;         // payload bytes of the current message checked so far
    std::uint32_t sender = 0;    // whose message the current one is (--broadcast)
    std::vector<std::uint64_t> from;  // --broadcast: the next sequence number due from each sender
};

/// The sequence numbers of one connection's own messages.
struct ws_own_counts {
    std::uint32_t id = 0;
    std::uint64_t& next_send;  // the next message appended
    std::uint64_t& next_recv;  // the next own message due back
};

/// What one parse() found.
struct ws_parse_result {
    std::uint64_t delivered = 0;  // whole messages received (echo: = own)
    std::uint64_t own = 0;        // of those, the connection's own messages back
    bool replied = false;         // a pong was appended to the output
    std::string error;            // set: the run is void (the reason, for the log)
};

class ws_messages {
public:
    /// size: payload bytes per message; connections: how many there are (--broadcast: the
    /// senders a receiver may hear from). Owning worker thread only.
    ws_messages(std::size_t size, std::uint32_t connections, bool broadcast);

    /// Bytes one client frame takes on the wire.
    std::size_t wire_size() const noexcept { return wire_; }

    /// A receive state sized for this run. Owning worker thread only.
    ws_receive_state new_state() const;

    /// Appends the connection's next n messages to out, each masked with a new key. Owning
    /// worker thread only.
    void append(ws_own_counts own, echo_buffer& out, std::uint64_t n);

    /// Checks and consumes every complete frame in `in`: data frames must carry the expected
    /// message bytes, in order; a ping gets a pong appended to `out`; a close frame, a masked
    /// server frame or RSV bits are errors. Owning worker thread only.
    ws_parse_result parse(ws_receive_state& st, ws_own_counts own, echo_buffer& in, echo_buffer& out);

private:
    // Writes the per-message head and tail of (sender, seq) over a copy of pattern_ at p.
    void stamp(std::uint8_t* p, std::uint32_t sender, std::uint64_t seq) const noexcept;
    // The same bytes, each handed to put(offset in the body, byte): bytes [0, min(size, 12)) and,
    // from 20 bytes on, the last 8.
    template <class Put>
    void stamp_with(std::uint32_t sender, std::uint64_t seq, Put put) const noexcept {
        for (std::size_t i = 0; i < std::min<std::size_t>(size_, 8); ++i)
            put(i, static_cast<std::uint8_t>(seq >> (8 * i)));
        if (size_ >= 12)
            for (std::size_t i = 0; i < 4; ++i) put(8 + i, static_cast<std::uint8_t>(sender >> (8 * i)));
        if (size_ >= 20) {
            const std::uint64_t tail = seq ^ (static_cast<std::uint64_t>(sender) << 40) ^ 0x7a11ULL;
            for (std::size_t i = 0; i < 8; ++i) put(size_ - 8 + i, static_cast<std::uint8_t>(tail >> (8 * i)));
        }
    }
    // One data frame (a whole message or a piece of one); false with r.error set when it is wrong.
    bool check_piece(ws_receive_state& st, ws_own_counts own, const ws_frame_header& h, const std::uint8_t* payload,
                     ws_parse_result& r);

    const std::size_t size_;
    const std::uint32_t connections_;
    const bool broadcast_;
    const std::size_t wire_;
    std::vector<std::uint8_t> pattern_;   // the body's fixed middle, made once
    std::vector<std::uint8_t> expected_;  // pattern_ with the head and tail of the message checked
    ws_masker masker_;
};

}  // namespace strix
