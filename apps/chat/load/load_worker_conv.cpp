// load_worker's conversations workload (--rooms-per-client): each client logged in with protocol
// version 2 is in K group rooms and D direct pairs (conversation_layout.hpp). Setup, one request
// per client at a time so every answer is known to belong to it:
//
//   creating  the member in slot 0 of each group room creates it (create_room_req)
//   joining   every other member joins it (join_room_req)
//   directs   round by round, the lower client of each pair sends the first direct_req; both
//             sides wait for the direct room's join_room_res and account for that opening message
//             (live, or before the peer's join: join_room_res.last_seq = 1)
//
// During the run each send goes to a direct partner (a --dm-share of them, round-robin over the
// partners) or to the next group room (round-robin), as chat_req naming the room; every receipt
// is verified in its conversation: seq + 1 each time, each sender's client_seq in order, the
// exact text (made with the conversation's text key), every member once.
#include "load_worker.hpp"

#include "load_clock.hpp"

#include "apps/chat/common/chat_frame.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace strix::chat {
namespace {

std::string_view str(const flatbuffers::String* s) {
    return s == nullptr ? std::string_view{} : std::string_view(s->data(), s->size());
}

}  // namespace

void load_worker::enter_conversations() {
    for (auto& cp : clients_) {
        if (cp->state == client_state::logged_in) next_setup(*cp);
    }
}

// The client's next group room request in this phase (none left in `joining`: it is in all).
void load_worker::next_setup(load_client& c) {
    if (c.setup_busy || (phase_ != load_phase::creating && phase_ != load_phase::joining)) return;
    for (std::uint32_t i = 0; i < c.convs.size(); ++i) {
        const conversation& v = c.convs[i];
        if (v.direct || v.joined) continue;
        const bool creator = layout_->slot_of(v.peer, c.index) == 0;
        if (creator != (phase_ == load_phase::creating)) continue;
        c.setup_conv = i;
        c.setup_attempts = 0;
        send_setup(c);
        return;
    }
    if (phase_ == load_phase::joining) c.state = client_state::in_room;
}

// The request for conversation setup_conv: create_room_req, join_room_req or the opening direct_req.
void load_worker::send_setup(load_client& c) {
    conversation& v = c.convs[c.setup_conv];
    const load_options& o = shared_.opt;
    c.setup_busy = true;
    fbb_.Clear();
    if (v.direct) {
        v.client_seq = 1;
        const std::size_t len = shared_.text.write(layout_->text_key(c.player_id, v.key), 1, text_buf_.data());
        const auto to = fbb_.CreateString(o.name_prefix + std::to_string(v.peer));
        const auto t = fbb_.CreateString(text_buf_.data(), len);
        fbb_.Finish(proto::Createdirect_req(fbb_, to, t, static_cast<std::uint64_t>(now_ns()), 1));
        append_frame(c, proto::msg_type::direct_req);
    } else if (phase_ == load_phase::creating) {
        fbb_.Finish(
            proto::Createcreate_room_req(fbb_, fbb_.CreateString(o.name_prefix + "-room-" + std::to_string(v.key))));
        append_frame(c, proto::msg_type::create_room_req);
    } else {
        fbb_.Finish(proto::Createjoin_room_req(fbb_, shared_.room_ids[v.key].load(std::memory_order_acquire)));
        append_frame(c, proto::msg_type::join_room_req);
    }
}

// Round `round`: each pair of it is opened by its lower client (at most one pair per client).
void load_worker::open_directs(std::uint32_t round) {
    for (auto& cp : clients_) {
        load_client& c = *cp;
        for (std::uint32_t i = layout_->rooms_per_client(); i < c.convs.size(); ++i) {
            const conversation& v = c.convs[i];
            const std::uint32_t pair = v.key - layout_->rooms();
            if (layout_->round_of(pair) != round || layout_->pair(pair).first != c.index || v.joined) continue;
            if (c.setup_busy) {
                setup_failure(c, "asked to open two direct rooms at once");
                return;
            }
            c.setup_conv = i;
            c.setup_attempts = 0;
            send_setup(c);
        }
    }
}

std::int64_t load_worker::retry_setups(std::int64_t now) {
    std::int64_t next = std::numeric_limits<std::int64_t>::max();
    std::size_t kept = 0;
    for (load_client* c : setup_waiting_) {
        if (c->state == client_state::closed) continue;
        if (c->setup_retry_at <= now) {
            ++setup_retries_;
            send_setup(*c);
            continue;
        }
        next = std::min(next, c->setup_retry_at);
        setup_waiting_[kept++] = c;
    }
    setup_waiting_.resize(kept);
    return next;
}

// "Retry later" for the client's room request (a room-change token, the database queue): sent
// again after a doubling pause (50 ms .. 1 s). False for anything else (the caller fails setup).
bool load_worker::on_conv_setup_error(load_client& c, const proto::error_res& res) {
    const proto::msg_type r = res.request();
    const bool room_request = r == proto::msg_type::create_room_req || r == proto::msg_type::join_room_req ||
                              r == proto::msg_type::direct_req;
    const bool later = res.code() == proto::error_code::rate_limited || res.code() == proto::error_code::server_busy;
    if (!room_request || !later || !c.setup_busy) return false;
    const std::uint32_t doublings = std::min<std::uint32_t>(c.setup_attempts++, 5);
    const std::int64_t pause_ms = (std::int64_t{50} << doublings) + (c.index * 7919u) % 20;
    c.setup_retry_at = now_ns() + std::min<std::int64_t>(pause_ms, 1000) * 1'000'000;
    setup_waiting_.push_back(&c);
    return true;
}

void load_worker::on_conv_created(load_client& c, std::span<const std::byte> frame) {
    const auto* res = body_as<proto::create_room_res>(frame);
    if (res == nullptr || res->room() == nullptr || !c.setup_busy || phase_ != load_phase::creating) {
        setup_failure(c, "bad or unexpected create_room_res");
        return;
    }
    conversation& v = c.convs[c.setup_conv];
    v.room_id = res->room()->id();
    v.joined = v.ready = true;
    shared_.room_ids[v.key].store(v.room_id, std::memory_order_release);
    ++created_;
    c.setup_busy = false;
    next_setup(c);
}

void load_worker::on_conv_joined(load_client& c, std::span<const std::byte> frame) {
    const auto* res = body_as<proto::join_room_res>(frame);
    if (res == nullptr || res->room() == nullptr) {
        setup_failure(c, "join_room_res does not verify");
        return;
    }
    if (res->room()->kind() == proto::room_kind::direct) {
        on_direct_joined(c, *res);
        return;
    }
    const bool asked = c.setup_busy && phase_ == load_phase::joining && !c.convs[c.setup_conv].direct;
    if (!asked) {
        setup_failure(c, "join_room_res of room " + std::to_string(res->room()->id()) + " nobody asked for");
        return;
    }
    conversation& v = c.convs[c.setup_conv];
    const std::uint64_t want = shared_.room_ids[v.key].load(std::memory_order_acquire);
    if (res->room()->id() != want || res->last_seq() != 0) {
        setup_failure(c, "join_room_res names room " + std::to_string(res->room()->id()) + " with last_seq " +
                             std::to_string(res->last_seq()) + ", asked for room " + std::to_string(want) +
                             " where nobody has spoken yet");
        return;
    }
    v.room_id = want;
    v.joined = v.ready = true;
    ++joined_;
    c.setup_busy = false;
    next_setup(c);
}

// A direct room's join_room_res: the opener's own (before its first message) or the peer's,
// which says by last_seq whether that message came before it (1) or follows live (0).
void load_worker::on_direct_joined(load_client& c, const proto::join_room_res& res) {
    std::uint32_t peer = std::numeric_limits<std::uint32_t>::max();
    bool me = false;
    const auto* members = res.members();
    for (std::uint32_t k = 0; members != nullptr && k < members->size(); ++k) {
        const std::uint64_t id = members->Get(k) == nullptr ? 0 : members->Get(k)->id();
        if (id == c.player_id) {
            me = true;
            continue;
        }
        const auto it = shared_.index_of_player.find(id);
        if (it != shared_.index_of_player.end()) peer = it->second;
    }
    std::uint32_t vi = layout_->rooms_per_client();
    while (vi < c.convs.size() && c.convs[vi].peer != peer) ++vi;
    if (!me || members->size() != 2 || vi == c.convs.size() || c.convs[vi].joined || res.last_seq() > 1) {
        setup_failure(c, "join_room_res of direct room " + std::to_string(res.room()->id()) +
                             " is not a fresh room of this client and one of its partners");
        return;
    }
    conversation& v = c.convs[vi];
    v.room_id = res.room()->id();
    v.joined = true;
    // The opener (the lower client) is slot 0; its opening message is client_seq 1.
    if (res.last_seq() == 1) {
        v.checker.begin_after(1, 0, 1);
        direct_ready(c, vi);
    }
}

void load_worker::direct_ready(load_client& c, std::uint32_t vi) {
    c.convs[vi].ready = true;
    ++directs_ready_;
    if (c.setup_busy && c.setup_conv == vi) c.setup_busy = false;
}

// The first message of a direct room, during setup: from the opener, seq 1, client_seq 1.
void load_worker::on_opening_message(load_client& c, std::uint32_t vi, const proto::chat_msg& m, std::uint32_t slot) {
    conversation& v = c.convs[vi];
    const std::uint64_t sender = m.sender()->id();
    const bool opening = v.direct && v.joined && slot == 0 && m.seq() == 1 && m.client_seq() == 1 &&
                         shared_.text.matches(layout_->text_key(sender, v.key), 1, str(m.text()));
    if (!opening || v.checker.on_message(1, 0, 1) != delivery_verdict::in_order) {
        setup_failure(c, "chat_msg seq " + std::to_string(m.seq()) + " in room " + std::to_string(m.room_id()) +
                             " is not the direct room's opening message");
        return;
    }
    direct_ready(c, vi);
}

// --- the run ------------------------------------------------------------------------------------

void load_worker::send_conv_chat(load_client& c, std::int64_t now) {
    const std::uint32_t k = layout_->rooms_per_client();
    const bool dm = layout_->partners() != 0 && conversation_layout::is_direct(c.index, c.sends, shared_.opt.dm_share);
    ++c.sends;
    const std::uint32_t vi = dm ? k + c.next_partner++ % layout_->partners() : c.next_room++ % k;
    conversation& v = c.convs[vi];
    ++v.client_seq;
    const std::size_t len = shared_.text.write(layout_->text_key(c.player_id, v.key), v.client_seq, text_buf_.data());
    fbb_.Clear();
    const auto t = fbb_.CreateString(text_buf_.data(), len);
    fbb_.Finish(proto::Createchat_req(fbb_, t, static_cast<std::uint64_t>(now), v.client_seq, v.room_id));
    append_frame(c, proto::msg_type::chat_req);
    load_stats& s = sink_for_sent(now);
    const std::uint32_t owed = dm ? 2 : layout_->room_size();
    ++s.sent;
    s.expected += owed;
    expected_all_ += owed;
    if (dm) {
        ++s.direct_sent;
        s.direct_expected += owed;
    }
    c.unacked.push_back({vi, v.client_seq, owed, false});
}

void load_worker::on_conv_chat(load_client& c, std::span<const std::byte> frame, std::int64_t now) {
    const auto* msg = body_as<proto::chat_msg>(frame);
    std::uint32_t vi = 0;
    conversation* v = msg == nullptr ? nullptr : conversation_of(c, msg->room_id(), &vi);
    const std::uint64_t sender = msg == nullptr || msg->sender() == nullptr ? 0 : msg->sender()->id();
    const auto it = shared_.index_of_player.find(sender);
    const std::uint32_t from = it == shared_.index_of_player.end() ? c.index : it->second;
    const bool member = v != nullptr && it != shared_.index_of_player.end() &&
                        (v->direct ? from == c.index || from == v->peer : layout_->member(v->key, from));
    const auto ts = msg == nullptr ? 0 : static_cast<std::int64_t>(msg->client_ts());
    if (!member || ts > now || msg->client_seq() == 0) {
        ++sink_for_sent(ts).corrupt;
        shared_.warn(shared_.warned_corrupt, 20,
                     "client {}: chat_msg {} is not from a member of one of its conversations, or carries an "
                     "impossible client_ts/client_seq",
                     c.index,
                     msg == nullptr ? std::string("that does not verify")
                                    : "in room " + std::to_string(msg->room_id()));
        return;
    }
    // Direct: slot 0 is the lower client; group: the sender's slot in the room's layer.
    const std::uint32_t slot =
        v->direct ? (from == std::min(c.index, v->peer) ? 0u : 1u) : layout_->slot_of(v->peer, from);
    if (!v->ready) {
        on_opening_message(c, vi, *msg, slot);
        return;
    }
    v->heard_chat = true;
    load_stats& s = sink_for_sent(ts);
    const delivery_verdict verdict = v->checker.on_message(msg->seq(), slot, msg->client_seq());
    count_verdict(c, verdict, *msg, msg->client_seq(), s, &v->checker);
    if (verdict == delivery_verdict::duplicate) return;
    if (!shared_.text.matches(layout_->text_key(sender, v->key), msg->client_seq(), str(msg->text()))) {
        ++s.corrupt;
        shared_.warn(shared_.warned_corrupt, 20,
                     "client {}: text of seq {} in room {} (client_seq {} of player {}) differs from what was sent",
                     c.index, msg->seq(), msg->room_id(), msg->client_seq(), sender);
        return;
    }
    ++s.delivered;
    ++delivered_all_;
    if (from == c.index) {
        ++s.acked;
        on_conv_acked(c, vi, msg->client_seq());
    }
    const auto latency = static_cast<std::uint64_t>(now - ts);
    if (v->direct) {
        ++s.direct_delivered;
        s.direct_latency.record(latency);
    } else {
        s.room_latency.record(latency);
    }
    record_receipt(c, s, *msg, from, ts, now);
}

// A chat_req answered with error_res owes nothing. The error does not say which one it was: it is
// put on the oldest unacknowledged send, and moved on if that one is acknowledged after all
// (on_conv_acked), so once the run drained the refusals sit on sends that never came back.
void load_worker::on_conv_refused(load_client& c) {
    for (pending_send& p : c.unacked) {
        if (p.refused) continue;
        p.refused = true;
        now_sink_->refused += p.owed;
        expected_all_ -= p.owed;
        return;
    }
}

void load_worker::on_conv_acked(load_client& c, std::uint32_t vi, std::uint64_t client_seq) {
    auto it = std::find_if(c.unacked.begin(), c.unacked.end(),
                           [&](const pending_send& p) { return p.conv == vi && p.client_seq == client_seq; });
    if (it == c.unacked.end()) return;
    const pending_send done = *it;
    c.unacked.erase(it);
    if (!done.refused) return;
    // The refusal was another send's: take it back here and put it on the next one.
    now_sink_->refused -= done.owed;
    expected_all_ += done.owed;
    on_conv_refused(c);
}

// member_joined / member_left / member_presence: expected while rooms fill and direct peers come
// online; during the run the server sends a room's notices before its next chat_msg, so one after
// a chat_msg of the run in that room is a change nobody made (as is any member_left).
void load_worker::on_conv_notice(load_client& c, proto::msg_type type, std::span<const std::byte> frame) {
    if (shared_.stop.load(std::memory_order_relaxed)) return;  // other workers' clients are closing
    std::uint64_t room = 0;
    if (type == proto::msg_type::member_joined) {
        const auto* n = body_as<proto::member_joined>(frame);
        room = n == nullptr ? 0 : n->room_id();
    } else if (type == proto::msg_type::member_left) {
        const auto* n = body_as<proto::member_left>(frame);
        room = n == nullptr ? 0 : n->room_id();
    } else {
        const auto* n = body_as<proto::member_presence>(frame);
        room = n == nullptr ? 0 : n->room_id();
    }
    const conversation* v = conversation_of(c, room);
    const bool late = phase_ == load_phase::running && v != nullptr && v->heard_chat;
    if (type != proto::msg_type::member_left && v != nullptr && !late) return;
    ++now_sink_->unexpected;
    shared_.warn(shared_.warned_other, 10, "client {}: {} for room {} during the run", c.index,
                 proto::EnumNamemsg_type(type), room);
}

conversation* load_worker::conversation_of(load_client& c, std::uint64_t room_id, std::uint32_t* index) {
    for (std::uint32_t i = 0; i < c.convs.size(); ++i) {
        if (c.convs[i].room_id != room_id || room_id == 0) continue;
        if (index != nullptr) *index = i;
        return &c.convs[i];
    }
    return nullptr;
}

}  // namespace strix::chat
