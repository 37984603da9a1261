// load_worker's frame handling: replies during setup, error replies, and the verification of every
// chat_msg (sender, room, seq order, text, latency split at the server's stamp).
#include "load_worker.hpp"

#include "load_clock.hpp"

#include "apps/chat/common/chat_frame.hpp"

#include <algorithm>
#include <string>

namespace strix::chat {
namespace {

std::string_view str(const flatbuffers::String* s) {
    return s == nullptr ? std::string_view{} : std::string_view(s->data(), s->size());
}

const char* error_name(proto::error_code e) {
    const auto v = static_cast<unsigned>(e);
    return v <= static_cast<unsigned>(proto::error_code::MAX) ? proto::EnumNameerror_code(e) : "unknown";
}

}  // namespace

void load_worker::on_frame(load_client& c, std::span<const std::byte> frame, std::int64_t now) {
    const proto::msg_type type = type_of(frame);
    switch (type) {
        case proto::msg_type::chat_msg:
            if (layout_ != nullptr) {
                on_conv_chat(c, frame, now);
                return;
            }
            if (c.state == client_state::resuming) {
                // Live messages above the re-join's last_seq: shown after the refill below them.
                c.held.emplace_back(now, std::vector<std::byte>(frame.begin(), frame.end()));
                return;
            }
            on_chat(c, frame, now);
            return;
        case proto::msg_type::resume_res: on_resume_res(c, frame); return;
        case proto::msg_type::history_res: on_history_res(c, frame); return;
        case proto::msg_type::login_res: {
            const auto* res = body_as<proto::login_res>(frame);
            if (res == nullptr || res->player() == nullptr || c.state != client_state::logging_in) {
                setup_failure(c, "bad or unexpected login_res");
                return;
            }
            if (const auto* t = res->resume_token(); t != nullptr && t->size() == 32) {
                c.resume_token.assign(t->begin(), t->end());
            }
            if (c.reconnecting) {
                if (res->player()->id() != c.player_id) {
                    ++now_sink_->corrupt;
                    close_client(c, "the resume login named another player");
                    return;
                }
                ++now_sink_->reconnects;
                c.state = client_state::rejoining;
                return;
            }
            if (layout_ != nullptr && res->rooms() != nullptr && res->rooms()->size() != 0) {
                // Their join_room_res would follow and the rooms would not be the layout's.
                setup_failure(c, "the account belongs to " + std::to_string(res->rooms()->size()) +
                                     " rooms already; give this run a fresh --name-prefix");
                return;
            }
            c.player_id = res->player()->id();
            c.state = client_state::logged_in;
            login_window_ = std::min(login_window_ + 1, max_logins_in_flight);
            shared_.player_ids[c.index].store(c.player_id, std::memory_order_release);
            --in_flight_;
            ++logged_in_;
            return;
        }
        case proto::msg_type::create_room_res: {
            if (layout_ != nullptr) {
                on_conv_created(c, frame);
                return;
            }
            const auto* res = body_as<proto::create_room_res>(frame);
            if (res == nullptr || res->room() == nullptr || c.state != client_state::entering) {
                setup_failure(c, "bad or unexpected create_room_res");
                return;
            }
            shared_.room_ids[c.room].store(res->room()->id(), std::memory_order_release);
            c.state = client_state::in_room;
            ++created_;
            return;
        }
        case proto::msg_type::join_room_res: {
            if (layout_ != nullptr) {
                on_conv_joined(c, frame);
                return;
            }
            const auto* res = body_as<proto::join_room_res>(frame);
            const std::uint64_t want = shared_.room_ids[c.room].load(std::memory_order_acquire);
            if (res != nullptr && res->room() != nullptr && c.state == client_state::rejoining) {
                on_rejoined(c, *res);
                return;
            }
            if (res == nullptr || res->room() == nullptr || c.state != client_state::entering) {
                setup_failure(c, "bad or unexpected join_room_res");
                return;
            }
            if (res->room()->id() != want) {
                setup_failure(c, "join_room_res names room " + std::to_string(res->room()->id()) + ", asked for " +
                                     std::to_string(want));
                return;
            }
            c.state = client_state::in_room;
            ++joined_;
            return;
        }
        case proto::msg_type::list_rooms_res: on_room_list(frame); return;
        case proto::msg_type::error_res: on_error_res(c, frame); return;
        case proto::msg_type::member_joined:
        case proto::msg_type::member_left:
        case proto::msg_type::member_presence:
            if (layout_ != nullptr) {
                on_conv_notice(c, type, frame);
                return;
            }
            break;
        default: break;
    }
    on_notice(c, type, frame);
}

// The single-room workload's membership notices and what else may arrive.
void load_worker::on_notice(load_client& c, proto::msg_type type, std::span<const std::byte> frame) {
    switch (type) {
        case proto::msg_type::member_joined:
            // Expected while the rooms fill up; nobody joins once the steps run. The server may hold
            // a notice back briefly (--notice-delay-ms) but sends it before the room's next chat_msg,
            // so one after a chat_msg is a join nobody made.
            if (phase_ == load_phase::running && c.heard_chat) {
                const auto* n = body_as<proto::member_joined>(frame);
                const std::uint64_t who = n == nullptr || n->player() == nullptr ? 0 : n->player()->id();
                const auto it = shared_.index_of_player.find(who);
                if (shared_.opt.reconnect && it != shared_.index_of_player.end() &&
                    it->second % shared_.opt.rooms == c.room) {
                    // A member of this room coming back. docs/protocol.md says member_presence{online};
                    // counted apart, so a server that sends member_joined instead shows in the report.
                    ++now_sink_->rejoin_as_joined;
                    return;
                }
                ++now_sink_->unexpected;
                shared_.warn(shared_.warned_other, 10, "client {}: member_joined of player {} during the run", c.index,
                             who);
            }
            return;
        case proto::msg_type::member_left:
            // Once the run is over, other workers' clients are closing: their departures are expected.
            if (shared_.stop.load(std::memory_order_relaxed)) return;
            ++now_sink_->unexpected;
            shared_.warn(shared_.warned_other, 10, "client {}: member_left received; nobody was meant to leave",
                         c.index);
            return;
        case proto::msg_type::member_presence:
            if (shared_.opt.reconnect) {
                ++now_sink_->presence;  // members dropping and coming back
                return;
            }
            // A member going offline (its connection closed) or coming back: only expected once
            // the run is over and other workers' clients close.
            if (shared_.stop.load(std::memory_order_relaxed)) return;
            ++now_sink_->unexpected;
            shared_.warn(shared_.warned_other, 10, "client {}: member_presence received; nobody was meant to go",
                         c.index);
            return;
        case proto::msg_type::pong_res: return;
        default:
            ++now_sink_->unexpected;
            shared_.warn(shared_.warned_other, 10, "client {}: unexpected frame type {}", c.index,
                         static_cast<unsigned>(type));
            return;
    }
}

void load_worker::on_error_res(load_client& c, std::span<const std::byte> frame) {
    const auto* res = body_as<proto::error_res>(frame);
    const proto::error_code code = res == nullptr ? proto::error_code::bad_request : res->code();
    const std::string reason(res == nullptr ? std::string_view("(undecodable error_res)") : str(res->reason()));
    const char* request = res == nullptr ? "?" : proto::EnumNamemsg_type(res->request());
    if (c.reconnecting && res != nullptr && on_reconnect_error(c, *res)) return;
    if (layout_ != nullptr && phase_ != load_phase::running && res != nullptr && on_conv_setup_error(c, *res)) return;
    if (phase_ != load_phase::running) {
        if (res != nullptr && res->request() == proto::msg_type::login_req && c.state == client_state::logging_in &&
            (code == proto::error_code::server_busy || code == proto::error_code::rate_limited)) {
            // "Retry later" (the server's login queue or its login throttle): what a real client
            // does, with a doubling pause (20 ms .. 1 s) spread by client so retries do not
            // arrive together. --setup-timeout bounds the whole.
            const std::uint32_t doublings = std::min<std::uint32_t>(c.login_attempts, 6);
            const std::int64_t pause_ms =
                std::min<std::int64_t>(std::int64_t{20} << doublings, 1000) + (c.index * 7919u) % 20;
            const std::int64_t now = now_ns();
            c.login_retry_at = now + pause_ms * 1'000'000;
            login_waiting_.push_back(&c);
            // Fewer logins in flight: the server admits so many at a time, and a client that
            // keeps losing the race for a place would run into the server's login timeout.
            if (now - window_cut_at_ > 50'000'000) {
                login_window_ = std::max<std::uint32_t>(login_window_ / 2, 4);
                window_cut_at_ = now;
            }
            return;
        }
        setup_failure(c, std::string(request) + " failed: " + error_name(code) + ": " + reason);
        return;
    }
    const auto slot = std::min<std::size_t>(static_cast<std::size_t>(code), error_slots - 1);
    ++now_sink_->errors[slot];
    if (res != nullptr && res->request() == proto::msg_type::chat_req && layout_ != nullptr) {
        on_conv_refused(c);
    } else if (res != nullptr && res->request() == proto::msg_type::chat_req) {
        // A refused message owes no deliveries: it is an error, not a loss.
        const std::uint32_t owed = shared_.room_members[c.room];
        now_sink_->refused += owed;
        expected_all_ -= owed;
    }
    shared_.warn(shared_.warned_errors, 20, "client {}: {} failed: {}: {}", c.index, request, error_name(code), reason);
}

void load_worker::on_chat(load_client& c, std::span<const std::byte> frame, std::int64_t now) {
    const auto* msg = body_as<proto::chat_msg>(frame);
    if (msg == nullptr || msg->sender() == nullptr || c.state != client_state::in_room) {
        ++now_sink_->corrupt;
        shared_.warn(shared_.warned_corrupt, 20, "client {}: chat_msg {}", c.index,
                     msg == nullptr ? "does not verify" : "without sender or outside a room");
        return;
    }
    const std::uint64_t sender = msg->sender()->id();
    const auto ts = static_cast<std::int64_t>(msg->client_ts());
    const auto it = shared_.index_of_player.find(sender);
    const std::uint64_t room = shared_.room_ids[c.room].load(std::memory_order_relaxed);
    if (it == shared_.index_of_player.end() || it->second % shared_.opt.rooms != c.room || msg->room_id() != room ||
        ts > now || msg->client_seq() == 0) {
        ++sink_for_sent(ts).corrupt;
        shared_.warn(shared_.warned_corrupt, 20,
                     "client {}: chat_msg from player {} in room {} (seq {}) is not from a member of "
                     "room {}, or carries an impossible client_ts/client_seq",
                     c.index, sender, msg->room_id(), msg->seq(), room);
        return;
    }
    c.heard_chat = true;
    load_stats& s = sink_for_sent(ts);
    const std::uint32_t slot = it->second / shared_.opt.rooms;
    const delivery_verdict v = c.checker.on_message(msg->seq(), slot, msg->client_seq());
    if (v == delivery_verdict::duplicate && msg->seq() <= c.resume.upto()) {
        // docs/protocol.md: after a re-join every live message is above its last_seq (the ones at or
        // below it come by resume only).
        shared_.warn(shared_.warned_resume, 20,
                     "client {}: live chat_msg seq {} again, at or below the last re-join's last_seq {}", c.index,
                     msg->seq(), c.resume.upto());
    }
    count_verdict(c, v, *msg, msg->client_seq(), s);
    if (v == delivery_verdict::duplicate) return;
    const auto* text = msg->text();
    if (!shared_.text.matches(sender, msg->client_seq(), str(text))) {
        ++s.corrupt;
        shared_.warn(shared_.warned_corrupt, 20,
                     "client {}: text of room seq {} (client_seq {} of player {}) "
                     "differs from what was sent ({} bytes received)",
                     c.index, msg->seq(), msg->client_seq(), sender, text == nullptr ? 0u : text->size());
        return;
    }
    ++s.delivered;
    ++delivered_all_;
    if (sender == c.player_id) {
        ++s.acked;
        c.acked_seq = std::max(c.acked_seq, msg->client_seq());
        if (!c.unconfirmed.empty()) confirm_own(c, msg->client_seq(), s);
    }
    record_receipt(c, s, *msg, it->second, ts, now);
}

// The latency of one verified delivery (sent at `ts`, received `now`), into `s`: the row of the
// receipt (the sink of a warmup message is the warmup).
void load_worker::record_receipt(const load_client& c, load_stats& s, const proto::chat_msg& m,
                                 std::uint32_t sender_index, std::int64_t ts, std::int64_t now) {
    s.latency.record(static_cast<std::uint64_t>(now - ts));
    if (addrs_.size() > 1) {
        const bool same = shared_.node_of[sender_index].load(std::memory_order_relaxed) == c.target;
        (same ? s.same_node : s.cross_node).record(static_cast<std::uint64_t>(now - ts));
    }
    // Split at the server's stamp. Both clocks are this machine's; a stamp that maps outside
    // [send, receipt] (a wall-clock step) is left out of the split rather than clamped.
    const std::int64_t at_server = static_cast<std::int64_t>(m.server_ts_us()) * 1000 - shared_.wall_minus_steady_ns;
    if (at_server >= ts && at_server <= now) {
        if (sender_index == c.index) s.to_server.record(static_cast<std::uint64_t>(at_server - ts));
        s.from_server.record(static_cast<std::uint64_t>(now - at_server));
    }
}

// The verdict of one delivery into the counters (with a diagnostic for what is wrong).
void load_worker::count_verdict(load_client& c, delivery_verdict v, const proto::chat_msg& m, std::uint64_t client_seq,
                                load_stats& s, const delivery_checker* checker) {
    if (checker == nullptr) checker = &c.checker;
    const std::uint64_t sender = m.sender() == nullptr ? 0 : m.sender()->id();
    switch (v) {
        case delivery_verdict::duplicate:
            ++s.duplicates;
            shared_.warn(shared_.warned_order, 20, "client {}: duplicate chat_msg room seq {} (client_seq {} of {})",
                         c.index, m.seq(), client_seq, sender);
            return;
        case delivery_verdict::out_of_order:
            ++s.out_of_order;
            shared_.warn(shared_.warned_order, 20, "client {}: chat_msg room seq {} arrived after seq {}", c.index,
                         m.seq(), checker->last_seq());
            return;
        case delivery_verdict::gap:
            ++s.gaps;
            shared_.warn(shared_.warned_order, 20, "client {}: room seq jumped to {} (messages missing)", c.index,
                         m.seq());
            return;
        case delivery_verdict::in_order: return;
    }
}

}  // namespace strix::chat
