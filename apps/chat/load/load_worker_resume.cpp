// load_worker's --reconnect and --reconnect-share: clients that reset their connection on purpose
// (or lose it to a dead node) reconnect to the next target, log in with their resume token, are put
// back in their room by the login, and get what they missed before their live messages:
//
//   in_room --drop/loss--> closed (reconnect_at) --> connecting --> logging_in (resume token)
//     --> rejoining (join_room_res: last_seq L) --> resuming: resume_req{room, K}
//           complete: resume_res K+1 .. L, then the held live messages
//           gap:      history_req after K, page by page up to L, then the held live messages
//     --> in_room
//
// Every refilled message goes through the same delivery checker as live ones (room seq exactly
// once and in order, the sender's client_seq order, the exact text), its client_seq read from the
// text's tag since stored copies carry none.
#include "load_worker.hpp"

#include "load_clock.hpp"

#include "apps/chat/common/chat_frame.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>

namespace strix::chat {
namespace {

// A client gives up after this many failed attempts in a row (about 20 s of pauses).
constexpr std::uint32_t max_reconnect_attempts = 40;
// Answers above this many seqs are gap answers by the server's default --resume-max.
constexpr std::uint64_t default_resume_max = 1000;
constexpr std::uint32_t history_page = 200;
// History asked again this often, this many times, when it lacks part of the range (about 2 s).
constexpr std::uint32_t max_refill_retries = 20;
constexpr std::int64_t refill_retry_ns = 100'000'000;

std::string_view str(const flatbuffers::String* s) {
    return s == nullptr ? std::string_view{} : std::string_view(s->data(), s->size());
}

}  // namespace

void load_worker::plan_drops() {
    // Inside the sending window, clear of its first and last tenth, so each dropped client has
    // messages to miss and time to come back before sending stops.
    const std::int64_t span = plan_.t_end - plan_.t_send_start;
    for (auto& c : clients_) {
        if (!drops_client(c->index, shared_.opt.reconnect_share)) continue;
        c->drop_at = drop_time(c->index, plan_.t_send_start + span / 10, plan_.t_end - span / 10);
        next_reconnect_check_ = std::min(next_reconnect_check_, c->drop_at);
    }
}

std::int64_t load_worker::tick_reconnects(std::int64_t now) {
    if (now < next_reconnect_check_) return next_reconnect_check_;
    std::int64_t next = std::numeric_limits<std::int64_t>::max();
    for (auto& cp : clients_) {
        load_client& c = *cp;
        if (c.drop_at != 0 && c.drop_at <= now) {
            if (c.state == client_state::in_room) {
                c.drop_at = 0;
                drop(c, now);
            } else {
                c.drop_at = now + 50'000'000;  // on its way back from a loss: drop it once it is in
            }
        }
        if (c.drop_at != 0) next = std::min(next, c.drop_at);
        if (c.reconnecting && c.state == client_state::closed && c.reconnect_at != 0 && c.reconnect_at <= now) {
            c.reconnect_at = 0;
            connect_one(c);
        }
        if (c.reconnecting && c.state == client_state::closed && c.reconnect_at != 0)
            next = std::min(next, c.reconnect_at);
        if (c.state == client_state::resuming && c.refill_retry_at != 0) {
            if (c.refill_retry_at <= now) {
                c.refill_retry_at = 0;
                send_history(c);
            } else {
                next = std::min(next, c.refill_retry_at);
            }
        }
    }
    next_reconnect_check_ = next;
    return next;
}

void load_worker::drop(load_client& c, std::int64_t now) {
    // Abruptly: RST, no FIN, whatever is unsent or unread is gone (a pulled cable, a killed app).
    linger l{};
    l.l_onoff = 1;
    l.l_linger = 0;
    ::setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    c.tls.reset();
    release_socket(c);
    lose(c, now, "dropped on purpose (--reconnect-share)", true);
}

// The connection is gone (the socket already released): first loss of this connection, or a
// failed attempt to come back. Either way the next try goes to the next target after a pause.
void load_worker::lose(load_client& c, std::int64_t now, const std::string& why, bool on_purpose) {
    if (!c.reconnecting) {
        c.reconnecting = true;
        c.lost_at = now;
        c.reconnect_attempts = 0;
        ++away_;
        ++(on_purpose ? now_sink_->drops : now_sink_->lost_connections);
        // chat_req not acked yet may or may not have reached the server: they owe nothing until
        // the sender sees them after all (confirm_own).
        const std::uint32_t owed = shared_.room_members[c.room];
        for (std::uint64_t q = c.acked_seq + 1; q <= c.client_seq; ++q) {
            c.unconfirmed.push_back(q);
            now_sink_->dropped_owed += owed;
            expected_all_ -= owed;
        }
        c.acked_seq = c.client_seq;
        if (!on_purpose) shared_.warn(shared_.warned_other, 10, "client {}: {}; reconnecting", c.index, why);
    } else {
        ++now_sink_->reconnect_retries;
        if (++c.reconnect_attempts > max_reconnect_attempts) {
            c.reconnecting = false;
            c.reconnect_at = 0;
            --away_;
            ++now_sink_->reconnect_failures;
            shared_.warn(shared_.warned_other, 20, "client {}: gave up reconnecting after {} attempts: {}", c.index,
                         max_reconnect_attempts, why);
            return;
        }
    }
    c.held.clear();
    c.refill_retry_at = 0;
    c.target = static_cast<std::uint32_t>((c.target + 1) % addrs_.size());
    // 50 ms spread over clients, doubling per failed attempt up to half a second: a dead node's
    // clients do not all arrive at the other node in the same millisecond.
    const std::uint32_t doublings = std::min<std::uint32_t>(c.reconnect_attempts, 4);
    const std::int64_t pause_ms = (std::int64_t{25} << doublings) + (c.index * 7919u) % 25;
    c.reconnect_at = now + pause_ms * 1'000'000;
    next_reconnect_check_ = std::min(next_reconnect_check_, c.reconnect_at);
}

void load_worker::on_rejoined(load_client& c, const proto::join_room_res& res) {
    const std::uint64_t room = shared_.room_ids[c.room].load(std::memory_order_relaxed);
    if (res.room()->id() != room) {
        ++now_sink_->corrupt;
        close_client(c, "the resume login put it in room " + std::to_string(res.room()->id()) + ", not " +
                            std::to_string(room));
        return;
    }
    c.resume.start(c.checker.last_seq(), res.last_seq());
    c.refill_retries = 0;
    c.refill_retry_at = 0;
    c.state = client_state::resuming;
    fbb_.Clear();
    fbb_.Finish(proto::Createresume_req(fbb_, room, c.checker.last_seq()));
    append_frame(c, proto::msg_type::resume_req);
}

void load_worker::on_resume_res(load_client& c, std::span<const std::byte> frame) {
    const auto* res = body_as<proto::resume_res>(frame);
    if (res == nullptr || c.state != client_state::resuming ||
        res->room_id() != shared_.room_ids[c.room].load(std::memory_order_relaxed)) {
        ++now_sink_->unexpected;
        shared_.warn(shared_.warned_other, 10, "client {}: unexpected or undecodable resume_res", c.index);
        return;
    }
    if (res->to_seq() != c.resume.upto()) {
        ++now_sink_->unexpected;
        shared_.warn(shared_.warned_other, 10, "client {}: resume_res to_seq {} but the re-join named last_seq {}",
                     c.index, res->to_seq(), c.resume.upto());
    }
    if (res->status() == proto::resume_status::gap) {
        ++now_sink_->resume_gaps;
        now_sink_->gap_seqs += c.resume.remaining();
        const bool over_max = c.resume.remaining() > default_resume_max;
        if (over_max) ++now_sink_->gaps_over_max;
        shared_.warn(shared_.warned_resume, 20,
                     "client {}: resume of seqs {}..{} answered gap ({}); filling it with history_req", c.index,
                     c.resume.next(), c.resume.upto(),
                     over_max ? "more than --resume-max" : "bytes over the bound, retention, or not stored");
        send_history(c);
        return;
    }
    if (res->messages() != nullptr) {
        for (const proto::chat_msg* m : *res->messages()) {
            if (m != nullptr) refill(c, *m, false);
        }
    }
    if (res->more()) return;
    if (!c.resume.done()) {
        shared_.warn(shared_.warned_resume, 20, "client {}: resume_res complete but it ended before seq {} of {}",
                     c.index, c.resume.next(), c.resume.upto());
        c.resume.give_up();
    }
    finish_resume(c);
}

void load_worker::send_history(load_client& c) {
    fbb_.Clear();
    const std::uint64_t room = shared_.room_ids[c.room].load(std::memory_order_relaxed);
    fbb_.Finish(proto::Createhistory_req(fbb_, room, 0, c.resume.next() - 1, history_page));
    append_frame(c, proto::msg_type::history_req);
}

void load_worker::on_history_res(load_client& c, std::span<const std::byte> frame) {
    const auto* res = body_as<proto::history_res>(frame);
    if (res == nullptr || c.state != client_state::resuming ||
        res->room_id() != shared_.room_ids[c.room].load(std::memory_order_relaxed)) {
        ++now_sink_->unexpected;
        shared_.warn(shared_.warned_other, 10, "client {}: unexpected or undecodable history_res", c.index);
        return;
    }
    const std::uint64_t before = c.resume.next();
    // Patient while history may still be catching up; once the retries are spent, a hole is taken
    // as missing and what lies beyond it is refilled all the same.
    const bool take_holes = c.refill_retries >= max_refill_retries;
    bool hole = false;
    if (res->messages() != nullptr) {
        for (const proto::chat_msg* m : *res->messages()) {
            if (m == nullptr) continue;
            if (m->seq() > c.resume.next() && !take_holes) {
                hole = true;  // beyond a hole nothing is taken while waiting for it
                break;
            }
            refill(c, *m, true);
        }
    }
    if (c.resume.done()) {
        finish_resume(c);
        return;
    }
    const bool progressed = c.resume.next() != before;
    if (progressed && !take_holes) c.refill_retries = 0;  // each hole gets the whole patience
    if (!hole && res->more() && progressed) {
        send_history(c);
        return;
    }
    // A hole, or the stored range ends short of the re-join's last_seq. docs/protocol.md says stored
    // history is contiguous; a message may still be on its way to the database, so ask again a few
    // times (the answer to the last try is read taking holes as missing) before calling the rest
    // missing.
    if (c.refill_retries < max_refill_retries) {
        ++c.refill_retries;
        ++now_sink_->history_retries;
        c.refill_retry_at = now_ns() + refill_retry_ns;
        next_reconnect_check_ = std::min(next_reconnect_check_, c.refill_retry_at);
        return;
    }
    shared_.warn(shared_.warned_resume, 20, "client {}: history lacks seqs {}..{} after {} tries (oldest stored {})",
                 c.index, c.resume.next(), c.resume.upto(), c.refill_retries, res->oldest_seq());
    c.resume.give_up();
    finish_resume(c);
}

bool load_worker::on_reconnect_error(load_client& c, const proto::error_res& res) {
    if (res.request() == proto::msg_type::login_req && c.state == client_state::logging_in) {
        if (res.code() == proto::error_code::invalid_token) {
            ++now_sink_->tokens_refused;
            c.resume_token.clear();  // the password then
            send_login(c);
            return true;
        }
        // Retry later (busy, throttled, the database away): a new connection after a pause.
        close_client(c, std::string("resume login refused: ") + std::string(str(res.reason())));
        return true;
    }
    if ((res.request() == proto::msg_type::resume_req || res.request() == proto::msg_type::history_req) &&
        c.state == client_state::resuming) {
        // Counted as an error reply by the caller; what was not refilled is missing.
        c.resume.give_up();
        finish_resume(c);
    }
    return false;
}

void load_worker::refill(load_client& c, const proto::chat_msg& m, bool from_history) {
    const refill_verdict rv = c.resume.take(m.seq());
    if (rv == refill_verdict::beyond) return;  // it comes live
    load_stats& s = *now_sink_;
    if (rv == refill_verdict::skipped) {
        shared_.warn(shared_.warned_resume, 20, "client {}: {} has no seqs before {} (down to the next one owed)",
                     c.index, from_history ? "history" : "resume_res", m.seq());
    }
    if (rv == refill_verdict::duplicate) {
        ++s.duplicates;
        shared_.warn(shared_.warned_resume, 20, "client {}: refilled seq {} again", c.index, m.seq());
        return;
    }
    const std::uint64_t sender = m.sender() == nullptr ? 0 : m.sender()->id();
    const auto it = shared_.index_of_player.find(sender);
    const std::string_view text = str(m.text());
    std::uint64_t client_seq = 0;
    std::uint64_t tag_sender = 0;
    if (it == shared_.index_of_player.end() || it->second % shared_.opt.rooms != c.room ||
        m.room_id() != shared_.room_ids[c.room].load(std::memory_order_relaxed) ||
        !message_text::parse_tag(text, client_seq, tag_sender) || tag_sender != sender || client_seq == 0 ||
        !shared_.text.matches(sender, client_seq, text)) {
        ++s.corrupt;
        shared_.warn(shared_.warned_corrupt, 20,
                     "client {}: refilled seq {} (from player {}) is not a message a member of its room sent", c.index,
                     m.seq(), sender);
        return;
    }
    const delivery_verdict v = c.checker.on_message(m.seq(), it->second / shared_.opt.rooms, client_seq);
    count_verdict(c, v, m, client_seq, s);
    if (v == delivery_verdict::duplicate) return;
    ++s.delivered;
    ++delivered_all_;
    ++(from_history ? s.history_refilled : s.refilled);
    if (sender == c.player_id) confirm_own(c, client_seq, s);
}

void load_worker::finish_resume(load_client& c) {
    load_stats& s = *now_sink_;
    s.refill_missing += c.resume.missing();
    if (c.resume.missing() == 0) ++s.resumes;
    s.resume_time.record(static_cast<std::uint64_t>(now_ns() - c.lost_at));
    c.state = client_state::in_room;
    c.reconnecting = false;
    c.reconnect_attempts = 0;
    --away_;
    std::vector<std::pair<std::int64_t, std::vector<std::byte>>> held = std::move(c.held);
    c.held.clear();
    // A held message at or below the re-join's last_seq is named by on_chat (docs/protocol.md: every
    // live message after the join is above it).
    for (const auto& [at, f] : held) on_chat(c, f, at);
}

// One of the sender's own chat_req that went with a lost connection is in the room after all:
// it owes its deliveries again.
void load_worker::confirm_own(load_client& c, std::uint64_t client_seq, load_stats& s) {
    const auto it = std::find(c.unconfirmed.begin(), c.unconfirmed.end(), client_seq);
    if (it == c.unconfirmed.end()) return;
    c.unconfirmed.erase(it);
    const std::uint32_t owed = shared_.room_members[c.room];
    s.reclaimed_owed += owed;
    expected_all_ += owed;
}

}  // namespace strix::chat
