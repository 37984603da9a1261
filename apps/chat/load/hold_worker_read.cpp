// hold_worker's input side: bytes read into the worker's buffer, cut into units (the upgrade
// answer, WebSocket messages, strix frames) in place, and each frame handled. A unit cut by the
// end of a read is the only thing a connection keeps (hold_conn::carry), exactly its size once
// its header says how long it is.
#include "hold_worker.hpp"

#include "apps/chat/common/chat_frame.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace strix::chat::hold {
namespace {

constexpr std::uint64_t max_unit = 64ull << 20;  // larger is a broken stream, not a frame
constexpr std::int64_t retry_ns = 200'000'000;

std::string_view str(const flatbuffers::String* s) {
    return s == nullptr ? std::string_view{} : std::string_view(s->data(), s->size());
}

// Bytes the unit at p needs in all: > 0 once known, 0 while its header is incomplete, -1 when
// the stream is broken.
std::int64_t unit_need(conn_state st, bool ws, const std::byte* p, std::size_t n) {
    if (st == conn_state::upgrading) {
        const std::string_view s(reinterpret_cast<const char*>(p), n);
        const std::size_t end = s.find("\r\n\r\n");
        if (end != std::string_view::npos) return static_cast<std::int64_t>(end + 4);
        return n > 8192 ? -1 : 0;
    }
    std::uint64_t total = 0;
    if (ws) {
        std::size_t header = 0;
        if (!ws_unit_size(p, n, header, total)) return 0;
    } else {
        if (n < 4) return 0;
        std::uint32_t len = 0;
        std::memcpy(&len, p, 4);  // little-endian, as the host
        total = len;
        if (total < frame_header_size) return -1;
    }
    return total > max_unit ? -1 : static_cast<std::int64_t>(total);
}

}  // namespace

void hold_worker::on_readable(std::uint32_t slot, std::int64_t now) {
    hold_conn& c = conns_[slot];
    for (int round = 0; round < 4 && c.fd >= 0; ++round) {
        std::size_t off = 0;
        if (c.carry != nullptr) {
            const std::int64_t need = unit_need(static_cast<conn_state>(c.state), ws_, c.carry, c.carry_len);
            if (need > static_cast<std::int64_t>(c.carry_len)) {
                // A long unit: read its rest straight into the carry, no bigger than the unit.
                const auto want = static_cast<std::size_t>(need);
                if (want > c.carry_cap) {
                    c.carry = static_cast<std::byte*>(std::realloc(c.carry, want));
                    c.carry_cap = static_cast<std::uint32_t>(want);
                }
                const ssize_t n = ::recv(c.fd, c.carry + c.carry_len, want - c.carry_len, 0);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
                    fail(slot, "the server closed the connection", true, now);
                    return;
                }
                if (n < 0) return;
                c.carry_len += static_cast<std::uint32_t>(n);
                if (c.carry_len < want) return;
                std::byte* unit = c.carry;
                c.carry = nullptr;
                c.carry_len = c.carry_cap = 0;
                const bool alive = on_unit(slot, {unit, want}, now);
                std::free(unit);
                if (!alive) return;
                continue;
            }
            // Its header is still incomplete: it is small; start the buffer with it.
            off = c.carry_len;
            std::memcpy(buf_.data(), c.carry, off);
            std::free(c.carry);
            c.carry = nullptr;
            c.carry_len = c.carry_cap = 0;
        }
        const ssize_t n = ::recv(c.fd, buf_.data() + off, buf_.size() - off, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            fail(slot, "the server closed the connection", true, now);
            return;
        }
        if (n < 0) {
            if (off != 0) keep_carry(c, buf_.data(), off, 0);
            return;
        }
        const std::size_t have = off + static_cast<std::size_t>(n);
        bool alive = true;
        const std::size_t used = parse(slot, buf_.data(), have, now, alive);
        if (!alive) return;
        if (used < have) {
            const std::int64_t need = unit_need(static_cast<conn_state>(c.state), ws_, buf_.data() + used, have - used);
            keep_carry(c, buf_.data() + used, have - used, need > 0 ? static_cast<std::size_t>(need) : 0);
        }
        if (have < buf_.size()) return;  // the socket is drained
    }
}

std::size_t hold_worker::parse(std::uint32_t slot, std::byte* p, std::size_t n, std::int64_t now, bool& alive) {
    std::size_t at = 0;
    while (at < n) {
        const std::int64_t need = unit_need(static_cast<conn_state>(conns_[slot].state), ws_, p + at, n - at);
        if (need < 0) {
            out_counters_.corrupt.add();
            fail(slot, "the server sent a broken stream (bad frame length or upgrade answer)", false, now);
            alive = false;
            return at;
        }
        if (need == 0 || static_cast<std::size_t>(need) > n - at) break;
        if (!on_unit(slot, {p + at, static_cast<std::size_t>(need)}, now)) {
            alive = false;
            return at;
        }
        at += static_cast<std::size_t>(need);
    }
    return at;
}

void hold_worker::keep_carry(hold_conn& c, const std::byte* p, std::size_t n, std::size_t need) {
    const std::size_t cap = std::max(n, need);
    c.carry = static_cast<std::byte*>(std::malloc(cap));
    std::memcpy(c.carry, p, n);
    c.carry_len = static_cast<std::uint32_t>(n);
    c.carry_cap = static_cast<std::uint32_t>(cap);
}

bool hold_worker::on_unit(std::uint32_t slot, std::span<std::byte> unit, std::int64_t now) {
    const auto st = static_cast<conn_state>(conns_[slot].state);
    if (st == conn_state::upgrading) return on_upgrade_answer(slot, unit);
    if (!ws_) return on_frame(slot, unit, now);
    std::size_t header = 0;
    std::uint64_t total = 0;
    ws_unit_size(unit.data(), unit.size(), header, total);
    const unsigned b0 = std::to_integer<unsigned>(unit[0]), b1 = std::to_integer<unsigned>(unit[1]);
    const unsigned opcode = b0 & 0x0Fu;
    if (opcode == 0x8) {
        fail(slot, "the server closed the WebSocket", true, now);
        return false;
    }
    if (opcode == 0x9 || opcode == 0xA) return true;  // the server sends no pings; nothing to do
    if ((b0 & 0xF0u) != 0x80u || (b1 & 0x80u) != 0 || opcode != 0x2) {
        out_counters_.corrupt.add();
        fail(slot, "the server sent a WebSocket message the chat protocol does not use", false, now);
        return false;
    }
    return on_frame(slot, unit.subspan(header), now);
}

bool hold_worker::on_upgrade_answer(std::uint32_t slot, std::span<const std::byte> head) {
    const std::string_view s(reinterpret_cast<const char*>(head.data()), head.size());
    if (s.rfind("HTTP/1.1 101", 0) != 0) {
        shared_.note_error("the WebSocket upgrade was refused: " + std::string(s.substr(0, s.find('\r'))));
        fail(slot, "WebSocket upgrade refused", false, 0);
        return false;
    }
    if (s.find(ws_accept(ws_key(index_of(slot)))) == std::string_view::npos) {
        fail(slot, "the WebSocket upgrade's Sec-WebSocket-Accept does not match the key sent", false, 0);
        return false;
    }
    send_login(slot);
    return conns_[slot].fd >= 0;
}

bool hold_worker::on_frame(std::uint32_t slot, std::span<const std::byte> frame, std::int64_t now) {
    hold_conn& c = conns_[slot];
    if (frame.size() < frame_header_size || parse_header(frame.data()).length != frame.size()) {
        out_counters_.corrupt.add();
        fail(slot, "a WebSocket message that is not exactly one frame", false, now);
        return false;
    }
    switch (type_of(frame)) {
        case proto::msg_type::pong_res: out_counters_.pongs.add(); return true;
        case proto::msg_type::chat_msg: on_chat(c, frame, now); return true;
        case proto::msg_type::login_res: return on_login_res(slot, frame);
        case proto::msg_type::join_room_res: {
            const auto* res = body_as<proto::join_room_res>(frame);
            const bool ours = res != nullptr && res->room() != nullptr && res->room()->id() == shared_.room_id;
            if (ours && static_cast<conn_state>(c.state) == conn_state::joining) {
                if ((c.flags & flag_was_held) != 0) check_rejoin(c, res->last_seq());
                become_held(c, true);
            }
            return true;  // others: rooms the account joined in earlier runs
        }
        case proto::msg_type::error_res: return on_error_res(slot, frame, now);
        case proto::msg_type::member_joined:
        case proto::msg_type::member_left:
        case proto::msg_type::member_presence:
        case proto::msg_type::typing:
        case proto::msg_type::read_marker: out_counters_.notices.add(); return true;
        case proto::msg_type::token_expired:
            out_counters_.errors.add();
            shared_.note_error("token_expired: give --jwt-ttl more than the run");
            return true;
        default: return true;
    }
}

bool hold_worker::on_login_res(std::uint32_t slot, std::span<const std::byte> frame) {
    hold_conn& c = conns_[slot];
    const auto* res = body_as<proto::login_res>(frame);
    if (res == nullptr || res->player() == nullptr || static_cast<conn_state>(c.state) != conn_state::logging_in) {
        out_counters_.corrupt.add();
        fail(slot, "a bad or unexpected login_res", false, 0);
        return false;
    }
    if (shared_.room_id == 0 || index_of(slot) >= shared_.opt.room_members) {
        become_held(c, false);
        return true;
    }
    if (res->rooms() != nullptr) {
        for (const auto* r : *res->rooms()) {
            if (r->id() != shared_.room_id) continue;
            // A member already (an earlier run): the login puts it back, join_room_res follows.
            c.state = static_cast<std::uint8_t>(conn_state::joining);
            return true;
        }
    }
    send_join(slot);
    return c.fd >= 0;
}

bool hold_worker::on_error_res(std::uint32_t slot, std::span<const std::byte> frame, std::int64_t now) {
    hold_conn& c = conns_[slot];
    const auto* e = body_as<proto::error_res>(frame);
    if (e == nullptr) {
        out_counters_.corrupt.add();
        return true;
    }
    const auto st = static_cast<conn_state>(c.state);
    const bool ours = (st == conn_state::logging_in && e->request() == proto::msg_type::login_req) ||
                      (st == conn_state::joining && e->request() == proto::msg_type::join_room_req);
    if (ours && (e->code() == proto::error_code::server_busy || e->code() == proto::error_code::rate_limited)) {
        out_counters_.login_retries.add();
        schedule(slot, now, retry_ns);  // the state says what to send again
        return true;
    }
    if (st == conn_state::joining && e->code() == proto::error_code::already_in_room) {
        become_held(c, true);
        return true;
    }
    out_counters_.errors.add();
    shared_.note_error(std::string("error_res ") + proto::EnumNameerror_code(e->code()) + ": " +
                       std::string(str(e->reason())));
    if (ours) {
        fail(slot, "refused", false, now);
        return false;
    }
    return true;
}

void hold_worker::check_rejoin(const hold_conn& c, std::uint64_t room_last_seq) {
    // Back in the room after a restart: the room's last seq must be the last one this member saw
    // (no broadcast is posted while connections are down). Lower: the server lost an acknowledged
    // message; higher: one was stored that this member never got live (history_req would fetch
    // it, but in this run it means a delivery went missing).
    const std::uint64_t seen = shared_.broadcast_base.load(std::memory_order_acquire) + c.next_k;
    if (room_last_seq == seen) return;
    out_counters_.seq_gaps.add();
    shared_.note_error("after reconnecting, the room's last seq is " + std::to_string(room_last_seq) +
                       " but the member last saw " + std::to_string(seen));
}

void hold_worker::on_chat(hold_conn& c, std::span<const std::byte> frame, std::int64_t now) {
    const auto* m = body_as<proto::chat_msg>(frame);
    if (m == nullptr) {
        out_counters_.corrupt.add();
        return;
    }
    if (m->room_id() != shared_.room_id || (c.flags & flag_in_room) == 0) {
        out_counters_.foreign.add();
        return;
    }
    // Message k of the broadcast: seq base + 1 + k, from the control account, text as sent.
    const std::uint64_t k = m->client_seq();
    const std::uint64_t base = shared_.broadcast_base.load(std::memory_order_acquire);
    const bool ok = k < shared_.texts.size() && m->sender() != nullptr && m->sender()->id() == shared_.control_player &&
                    m->seq() == base + 1 + k && str(m->text()) == shared_.texts[k];
    if (!ok) {
        out_counters_.corrupt.add();
        return;  // its slot stays empty: it counts as lost too
    }
    const std::uint64_t bit = 1ull << k;
    if ((c.got & bit) != 0) {
        out_counters_.duplicated.add();
        return;
    }
    c.got |= bit;
    if (k < c.next_k) {
        out_counters_.out_of_order.add();
    } else {
        c.next_k = static_cast<std::uint8_t>(k + 1);
    }
    // The clock again, not the batch's: a broadcast's last deliveries sit late in a long batch.
    const std::int64_t at = std::max(now, now_ns());
    if (out_counters_.first_ns[k].load(std::memory_order_relaxed) == 0)
        out_counters_.first_ns[k].store(at, std::memory_order_relaxed);
    out_counters_.last_ns[k].store(at, std::memory_order_relaxed);
    out_counters_.delivered[k].add();
}

}  // namespace strix::chat::hold
