// strix-echo-bench --ws: the load tool's messages as masked frames, and the checks of the frames
// that come back.

#include "echo_ws_messages.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "echo_wire.hpp"

namespace strix {
namespace {

[[gnu::format(printf, 2, 3)]] void set_error(ws_parse_result& r, const char* fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    r.error = what;
}

}  // namespace

ws_messages::ws_messages(std::size_t size, std::uint32_t connections, bool broadcast)
    : size_(size),
      connections_(connections),
      broadcast_(broadcast),
      wire_(ws_header_size(size, true) + size),
      pattern_(std::max<std::size_t>(size, 1)) {
    // Any fixed bytes would do; pseudo-random ones make a misplaced slice of the body visible.
    echo_fill_body(pattern_.data(), size_, 0xffffffffU, 0x5eedULL);
    expected_ = pattern_;
}

ws_receive_state ws_messages::new_state() const {
    ws_receive_state st;
    if (broadcast_) st.from.assign(connections_, 0);
    return st;
}

void ws_messages::stamp(std::uint8_t* p, std::uint32_t sender, std::uint64_t seq) const noexcept {
    stamp_with(sender, seq, [p](std::size_t i, std::uint8_t b) { p[i] = b; });
}

void ws_messages::append(ws_own_counts own, echo_buffer& out, std::uint64_t n) {
    std::uint8_t* p = out.prepare(static_cast<std::size_t>(n) * wire_);
    for (std::uint64_t k = 0; k < n; ++k) {
        const std::uint32_t mask = masker_.next();
        const std::size_t h = ws_write_client_header(p, ws_op_binary, size_, mask);
        // The body is the pattern masked in one pass, then the stamp written over it masked.
        ws_copy_masked(p + h, pattern_.data(), size_, mask);
        std::uint8_t key[4];
        std::memcpy(key, &mask, 4);
        std::uint8_t* body = p + h;
        stamp_with(own.id, own.next_send++,
                   [&](std::size_t i, std::uint8_t b) { body[i] = static_cast<std::uint8_t>(b ^ key[i & 3]); });
        p += wire_;
    }
    out.commit(static_cast<std::size_t>(n) * wire_);
}

ws_parse_result ws_messages::parse(ws_receive_state& st, ws_own_counts own, echo_buffer& in, echo_buffer& out) {
    ws_parse_result r;
    for (;;) {
        ws_frame_header h;
        const int got = ws_parse_header(in.data(), in.size(), h);
        if (got < 0) {
            set_error(r, "frame with a 64-bit length over 2^63");
            return r;
        }
        if (got == 0 || in.size() - h.header_len < h.len) return r;
        if (h.masked) {
            set_error(r, "the server sent a masked frame (RFC 6455 5.1 forbids it)");
            return r;
        }
        if (h.rsv != 0) {
            set_error(r, "frame with RSV bits 0x%02x set (no extension was negotiated)", h.rsv);
            return r;
        }
        const std::uint8_t* payload = in.data() + h.header_len;
        const std::size_t len = static_cast<std::size_t>(h.len);
        if (h.opcode == ws_op_ping) {
            if (len > 125) {
                set_error(r, "ping with a %zu-byte payload (over 125)", len);
                return r;
            }
            // `in` and `out` are different buffers: preparing out leaves payload where it is.
            std::uint8_t* p = out.prepare(ws_header_size(len, true) + len);
            const std::uint32_t mask = masker_.next();
            const std::size_t hl = ws_write_client_header(p, ws_op_pong, len, mask);
            std::memcpy(p + hl, payload, len);
            ws_apply_mask(p + hl, len, mask);
            out.commit(hl + len);
            r.replied = true;
        } else if (h.opcode == ws_op_close) {
            const unsigned code = len >= 2 ? (unsigned{payload[0]} << 8) | payload[1] : 0;
            set_error(r, "the server sent a close frame (code %u; %llu of %llu echoes received)", code,
                      static_cast<unsigned long long>(own.next_recv), static_cast<unsigned long long>(own.next_send));
            return r;
        } else if (h.opcode != ws_op_pong) {
            if (!check_piece(st, own, h, payload, r)) return r;
        }
        in.consume(h.header_len + len);
    }
}

bool ws_messages::check_piece(ws_receive_state& st, ws_own_counts own, const ws_frame_header& h,
                              const std::uint8_t* payload, ws_parse_result& r) {
    const std::size_t len = static_cast<std::size_t>(h.len);
    if (st.off == 0 && h.opcode != ws_op_binary) {
        set_error(r, "expected a binary message, got opcode 0x%x", h.opcode);
        return false;
    }
    if (st.off > 0 && h.opcode != ws_op_continuation) {
        set_error(r, "opcode 0x%x in the middle of a fragmented message", h.opcode);
        return false;
    }
    if (st.off + len > size_) {
        set_error(r, "message #%llu is longer than the %zu bytes sent", static_cast<unsigned long long>(own.next_recv),
                  size_);
        return false;
    }
    if (st.off == 0) {
        std::uint64_t seq = own.next_recv;
        st.sender = own.id;
        if (broadcast_) {
            if (len < 12) {
                set_error(r, "broadcast message's first fragment has %zu bytes, too few to name its sender", len);
                return false;
            }
            st.sender = echo_load_u32le(payload + 8);
            if (st.sender >= connections_) {
                set_error(r, "broadcast message names sender %u; there are %u connections", st.sender, connections_);
                return false;
            }
            seq = st.from[st.sender];
        }
        if (st.sender == own.id && own.next_recv == own.next_send) {
            set_error(r, "unexpected message: all %llu messages sent were already received back",
                      static_cast<unsigned long long>(own.next_send));
            return false;
        }
        stamp(expected_.data(), st.sender, seq);
    } else {
        // expected_ is shared by the worker's connections: another's message may have been
        // checked since this one's first piece.
        stamp(expected_.data(), st.sender, broadcast_ ? st.from[st.sender] : own.next_recv);
    }
    if (std::memcmp(expected_.data() + st.off, payload, len) != 0) {
        std::size_t i = 0;
        while (expected_[st.off + i] == payload[i]) ++i;
        const std::uint64_t want = broadcast_ ? st.from[st.sender] : own.next_recv;
        set_error(r, "content mismatch in message #%llu from connection %u at byte %zu: expected 0x%02x, got 0x%02x",
                  static_cast<unsigned long long>(want), st.sender, st.off + i, expected_[st.off + i], payload[i]);
        return false;
    }
    st.off += len;
    if (!h.fin) return true;
    if (st.off != size_) {
        set_error(r, "message #%llu has %zu bytes, %zu were sent", static_cast<unsigned long long>(own.next_recv),
                  st.off, size_);
        return false;
    }
    st.off = 0;
    ++r.delivered;
    if (broadcast_) ++st.from[st.sender];
    if (st.sender == own.id) {
        ++own.next_recv;
        ++r.own;
    }
    return true;
}

}  // namespace strix
