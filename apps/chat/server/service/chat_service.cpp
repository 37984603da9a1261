#include "chat_service.hpp"

#include "hook_events.hpp"
#include "request_table.hpp"
#include "apps/chat/server/hooks/chat_hooks.hpp"
#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/server/net/names.hpp"

#include <strix/core/log.hpp>
#include <strix/net/net_errc.hpp>
#include <strix/net/websocket.hpp>

#include <algorithm>
#include <string>

namespace strix::chat {
namespace {

using proto::error_code;
using proto::msg_type;

constexpr std::size_t max_text = 60000;
constexpr std::chrono::milliseconds sample_period{1000};

}  // namespace

chat_service::chat_service(shard& sh, chat_context& ctx)
    : shard_(sh),
      ctx_(ctx),
      self_(sh.id()),
      host_(*this, ctx, sh.id(), counters_),
      limits_{.chat = {ctx.options.chat_rate, ctx.options.chat_burst},
              .room = {ctx.options.room_rate, ctx.options.room_burst}},
      sample_timer_([this] {
          sample();
          shard_.timers().schedule(sample_timer_, shard_.ticks_for(sample_period));
      }) {}

chat_service::~chat_service() {
    // The exit hook cancelled the timer; a service whose engine never started never armed it.
}

void chat_service::start() {
    if (started_) return;
    started_ = true;
    shard_.timers().schedule(sample_timer_, shard_.ticks_for(sample_period));
    shard_.on_exit([this] {
        shard_.timers().cancel(sample_timer_);
        host_.stop();
        // Sessions are gone by now (the server's exit hook aborted them); drop the references.
        local_.clear();
    });
}

// --- session events --------------------------------------------------------------------------

void chat_service::on_open(session& s) {
    player& p = s.emplace_state<player>(session_ptr(&s), limits_);
    players_.emplace(s.id(), &p);
    set_gauge(counters_.sessions, players_.size());
}

void chat_service::on_frame(session& s, std::span<const std::byte> frame) {
    auto* p = s.state<player>();
    if (!p) return;
    bump(counters_.app_in);
    if (p->pending != player::pending_op::none || !p->queued.empty()) {
        hold(*p, frame);
        return;
    }
    dispatch(*p, frame);
}

// Keeps a copy of a request that must wait for an earlier one (see player::pending). Past the
// per-session bound the session stops reading until the queue drains.
void chat_service::hold(player& p, std::span<const std::byte> frame) {
    if (p.queued.size() >= 4 * max_waiting_requests || p.queued_bytes + frame.size() > 4 * max_waiting_bytes) {
        bump(counters_.server_busy);
        send_error(*p.sess, type_of(frame), error_code::server_busy, "too many requests waiting for an earlier one");
        return;
    }
    p.queued.emplace_back(frame.begin(), frame.end());
    p.queued_bytes += frame.size();
    if (!p.reading_held && (p.queued.size() >= max_waiting_requests || p.queued_bytes >= max_waiting_bytes)) {
        p.reading_held = true;
        p.sess->suspend_reading(true);
    }
}

// The pending operation finished: run what waited for it, in order, until one of those waits too.
void chat_service::complete(player& p, player::pending_op op) {
    if (p.pending != op) return;
    p.pending = player::pending_op::none;
    // Direct rooms opened for the account while it was busy: in now (a join, waited for).
    if (p.directs && !p.directs->entering.empty()) {
        std::vector<room_id> rooms = std::move(p.directs->entering);
        p.directs->entering.clear();
        for (room_id r : rooms)
            if (p.rooms.size() < ctx_.options.max_rooms_per_account) rejoin(p, r);
    }
    if (p.draining) return;  // an outer loop (below) goes on
    p.draining = true;
    while (p.pending == player::pending_op::none && !p.queued.empty() && p.sess->is_open()) {
        std::vector<std::byte> f = std::move(p.queued.front());
        p.queued.pop_front();
        p.queued_bytes -= f.size();
        dispatch(p, f);
    }
    p.draining = false;
    if (p.reading_held && p.queued.size() < max_waiting_requests / 2 && p.queued_bytes < max_waiting_bytes / 2) {
        // Resumed from the task queue, not from here: this may run inside another session's
        // frame handler (a completion on this shard), and the resumed reads call back into us.
        p.reading_held = false;
        shard_.post_local([s = p.sess] { s->suspend_reading(false); });
    }
}

// The request table decides (request_table.hpp): unknown types and requests that need a login
// are answered here, the rest go to their row's handler.
void chat_service::dispatch(player& p, std::span<const std::byte> frame) {
    STRIX_ASSERT_OWNER(shard_, "chat_service::dispatch");
    session& s = *p.sess;
    const msg_type type = type_of(frame);
    const request_row* row = request_table::find(type);
    if (!row) {
        bump(counters_.bad_requests);
        send_error(s, type, error_code::bad_request, "unknown message type");
        return;
    }
    bump(counters_.requests[request_table::index_of(*row)]);
    if (row->who == access::logged_in && p.login != player::login_state::logged_in) {
        send_error(s, type, error_code::not_logged_in, "log in first");
        return;
    }
    (this->*row->handle)(p, frame);
}

void chat_service::on_protocol_error(session& s, std::error_code ec) {
    // The session closes after flushing this; the client learns why.
    if (ec == net_errc::handshake_timeout) {
        send_error(s, msg_type::none, error_code::not_logged_in,
                   "no login within " + std::to_string(ctx_.options.server.limits.handshake_timeout.count()) +
                       " ms; closing");
        return;
    }
    if (ec == net_errc::frame_timeout) {
        send_error(s, msg_type::none, error_code::bad_request,
                   "frame not completed within " + std::to_string(ctx_.options.server.limits.frame_timeout.count()) +
                       " ms; closing");
        return;
    }
    bump(counters_.bad_requests);
    send_error(s, msg_type::none, error_code::bad_request, ec.message());
}

void chat_service::on_close(session& s, std::error_code) {
    auto it = players_.find(s.id());
    if (it == players_.end()) return;
    player& p = *it->second;
    // Leave every room (and those being joined: the owner handles our join first, FIFO).
    for (const auto& slot : p.rooms) {
        const room_id room = slot.id;
        const std::uint64_t sid = s.id();
        const unsigned self = self_;
        on_owner(room, [room, sid, self](chat_service& owner) { owner.host().leave(room, sid, self, false); });
    }
    if (p.login == player::login_state::logged_in) {
        auto at = accounts_.find(p.player_id);
        if (at != accounts_.end()) {
            if (at->second == &p) {
                if (p.next_of_account)
                    at->second = p.next_of_account;
                else
                    accounts_.erase(at);
            } else {
                player* q = at->second;
                while (q->next_of_account && q->next_of_account != &p) q = q->next_of_account;
                if (q->next_of_account == &p) q->next_of_account = p.next_of_account;
            }
        }
        counters_.players.sub();
        hook_events::session_down(*this, ctx_, p.player_id);
    }
    players_.erase(it);
    set_gauge(counters_.sessions, players_.size());
}

// --- requests --------------------------------------------------------------------------------

// The account belongs to a room (it disconnected without leaving, or the server restarted): the
// session goes back in as if it had sent join_room_req, without spending a room-change token;
// later requests wait for the join_room_res (for every room the login puts it back in). A room
// that is gone meanwhile is skipped silently.
void chat_service::rejoin(player& p, room_id room, std::uint64_t last_read) {
    if (!room || p.slot(room)) return;
    p.rooms.push_back({room});
    p.pending = player::pending_op::join;
    ++p.joins_in_flight;
    member m = as_member(p);
    m.last_read = last_read;
    on_owner(room, [room, m = std::move(m)](chat_service& svc) mutable { svc.host().join(room, std::move(m), true); });
}

// A join or create may add a room to the session: one at a time with protocol version 1, up to
// the rooms-per-account limit with version 2 (checked here, before anything is allocated).
bool chat_service::may_add_room(player& p, msg_type request) {
    if (p.version < 2) {
        if (p.rooms.empty()) return true;
        send_error(*p.sess, request, error_code::already_in_room, "leave your room first");
        return false;
    }
    if (p.rooms.size() < ctx_.options.max_rooms_per_account) return true;
    bump(counters_.room_limited);
    send_error(*p.sess, request, error_code::room_limit,
               "an account belongs to at most " + std::to_string(ctx_.options.max_rooms_per_account) +
                   " rooms; leave one first");
    return false;
}

// Answers the join that finished for room `room`: the pending join ends with the last of them.
void chat_service::join_answered(player& p) {
    if (p.joins_in_flight > 0) --p.joins_in_flight;
    if (p.joins_in_flight == 0) complete(p, player::pending_op::join);
}

void chat_service::handle_create(player& p, std::span<const std::byte> frame) {
    auto* req = decode<proto::create_room_req>(p, frame, msg_type::create_room_req, "malformed create_room_req");
    if (!req) return;
    session& s = *p.sess;
    std::string_view name = req->name() ? req->name()->string_view() : std::string_view{};
    if (!valid_room_name(name)) {
        send_error(s, msg_type::create_room_req, error_code::invalid_name,
                   "room names are 1-64 bytes of UTF-8 without control characters");
        return;
    }
    if (!jwt_.may_create(p, name)) return;
    if (!may_add_room(p, msg_type::create_room_req)) return;
    if (!p.take_room()) {
        bump(counters_.room_rate_limited);
        send_error(s, msg_type::create_room_req, error_code::rate_limited, "too many room changes; slow down");
        return;
    }
    // Rooms live on their creator's shard, so creating one never crosses shards.
    const room_id room = host_.allocate_id();
    p.rooms.push_back({room});
    host_.create(room, std::string(name), as_member(p));
}

void chat_service::handle_join(player& p, std::span<const std::byte> frame) {
    auto* req = decode<proto::join_room_req>(p, frame, msg_type::join_room_req, "malformed join_room_req");
    if (!req) return;
    session& s = *p.sess;
    const room_id room(req->room_id());
    if (p.slot(room)) {
        send_error(s, msg_type::join_room_req, error_code::already_in_room,
                   p.version < 2 ? "leave your room first" : "already in this room");
        return;
    }
    if (!jwt_.may_join(p, req->room_id())) return;
    if (!may_add_room(p, msg_type::join_room_req)) return;
    if (!room) {
        send_error(s, msg_type::join_room_req, error_code::unknown_room, "no such room");
        return;
    }
    if (!p.take_room()) {
        bump(counters_.room_rate_limited);
        send_error(s, msg_type::join_room_req, error_code::rate_limited, "too many room changes; slow down");
        return;
    }
    p.rooms.push_back({room});
    p.pending = player::pending_op::join;
    p.joins_in_flight = 1;
    on_owner(room, [room, m = as_member(p)](chat_service& svc) mutable { svc.host().join(room, std::move(m)); });
}

void chat_service::handle_leave(player& p, std::span<const std::byte> frame) {
    auto* req = decode<proto::leave_room_req>(p, frame, msg_type::leave_room_req, "malformed leave_room_req");
    if (!req) return;
    session& s = *p.sess;
    const player::room_slot* slot = p.named(req->room_id());
    if (!slot) {
        send_error(s, msg_type::leave_room_req, error_code::not_in_room,
                   req->room_id() == 0 && p.rooms.size() > 1 ? "name the room to leave (room_id)" : "not in that room");
        return;
    }
    // Sent even while a join is in flight: the owner sees the join first (FIFO per shard pair).
    const room_id room = slot->id;
    const std::uint64_t sid = s.id();
    const unsigned self = self_;
    p.pending = player::pending_op::leave;
    on_owner(room, [room, sid, self](chat_service& owner) { owner.host().leave(room, sid, self, true); });
}

void chat_service::handle_chat(player& p, std::span<const std::byte> frame) {
    auto* req = decode<proto::chat_req>(p, frame, msg_type::chat_req, "malformed chat_req");
    if (!req) return;
    session& s = *p.sess;
    std::string_view text = req->text() ? req->text()->string_view() : std::string_view{};
    if (text.empty() || text.size() > max_text) {
        bump(counters_.bad_requests);
        send_error(s, msg_type::chat_req, error_code::bad_request, "chat text is 1-60000 bytes");
        return;
    }
    const player::room_slot* slot = p.named(req->room_id());
    if (!slot) {
        send_error(s, msg_type::chat_req, error_code::not_in_room,
                   req->room_id() == 0 && p.rooms.size() > 1 ? "name the room to send to (room_id)"
                                                             : "not in that room");
        return;
    }
    if (!p.take_chat()) {
        bump(counters_.rate_limited);
        send_error(s, msg_type::chat_req, error_code::rate_limited, "too many messages; slow down");
        return;
    }
    if (ctx_.hooks != nullptr && ctx_.hooks->publish() != nullptr) {
        ask_publish_hook(p, slot->id, text, req->client_ts(), req->client_seq());
        return;
    }
    send_chat(p, slot->id, text, req->client_ts(), req->client_seq());
}

void chat_service::send_chat(player& p, room_id room, std::string_view text, std::uint64_t client_ts,
                             std::uint64_t client_seq) {
    chat_request cr;
    cr.room = room;
    cr.sender = as_member(p);
    cr.text.assign(text);
    cr.client_ts = client_ts;
    cr.client_seq = client_seq;
    on_owner(cr.room, [cr = std::move(cr)](chat_service& owner) mutable { owner.host().chat(cr); });
}

void chat_service::handle_list(player& p, std::span<const std::byte>) {
    // The rooms the sequencer knows (this server's shards' on one node, the shared database's in
    // a cluster). Each list copies every room until then, so a session has one in progress at a
    // time (the next waits behind it like any request).
    p.pending = player::pending_op::list;
    const bool queued =
        host_.sequencer().list_rooms(max_listed_rooms,
                                     [this, sid = p.sess->id()](std::optional<std::vector<room_summary>> rooms) {
                                         player* q = find(sid);
                                         if (!q) return;
                                         if (rooms) {
                                             send(*q->sess, frames::list_rooms_res(*rooms));
                                         } else {
                                             send_error(*q->sess, msg_type::list_rooms_req, error_code::internal_error,
                                                        "the database is unavailable; retry later");
                                         }
                                         complete(*q, player::pending_op::list);
                                     });
    if (!queued) {
        p.pending = player::pending_op::none;
        bump(counters_.server_busy);
        send_error(*p.sess, msg_type::list_rooms_req, error_code::server_busy,
                   "the database queue is full; retry later");
    }
}

void chat_service::handle_ping(player& p, std::span<const std::byte> frame) {
    auto* req = decode<proto::ping_req>(p, frame, msg_type::ping_req, "malformed ping_req");
    if (!req) return;
    send(*p.sess, frames::pong(req->ts()));
}

// --- posted by room owners -------------------------------------------------------------------

void chat_service::apply(room_event& ev) {
    std::uint64_t delivered = 0, sent = 0;
    if (ev.what == room_event::kind::joined) {
        if (player* p = find(ev.subject)) {
            if (player::room_slot* slot = p->slot(ev.room)) {
                if (p->direct_join == ev.room) p->direct_join = room_id();
                slot->state = player::room_state::member;
                slot->joined_seq = ev.seq;
                local_.add(ev.room, p->sess);
                if (ev.to_subject) {
                    p->sess->send(p->ws ? frames::ws_message(ev.to_subject) : ev.to_subject);
                    ++sent;
                }
                join_answered(*p);
            }
        }
        // A subject that closed meanwhile already asked the owner to remove it (on_close).
    } else if (ev.what == room_event::kind::left || ev.what == room_event::kind::removed) {
        local_.remove(ev.room, ev.subject);
        if (player* p = find(ev.subject); p && p->slot(ev.room)) {
            p->drop(ev.room);
            if (ev.to_subject) {
                p->sess->send(p->ws ? frames::ws_message(ev.to_subject) : ev.to_subject);
                ++sent;
            }
            if (ev.what == room_event::kind::left) complete(*p, player::pending_op::leave);
        }
    } else if (ev.what == room_event::kind::read && ev.to_subject) {
        if (player* p = find(ev.subject)) {
            p->sess->send(p->ws ? frames::ws_message(ev.to_subject) : ev.to_subject);
            ++sent;
        }
    }
    if (ev.to_members) {
        const bool message = ev.what == room_event::kind::message || ev.what == room_event::kind::moderation;
        const std::uint64_t skip = message ? 0 : ev.subject;
        local_.for_each(ev.room, [&](session& s) {
            if (s.id() == skip) return;
            const player* q = s.state<player>();
            // Moderation is a protocol version 2 feature: a version 1 client would show an empty
            // message.
            if (ev.what == room_event::kind::moderation && (!q || q->version < 2)) return;
            // A read marker goes to the account's own sessions only.
            if (ev.what == room_event::kind::read && (!q || q->player_id != ev.account)) return;
            ++delivered;
            if (!q || !q->ws) {
                s.send(ev.to_members);
                return;
            }
            // The owner built the WebSocket message when it knew of WebSocket members; if it did
            // not, the first one here builds it for the rest.
            if (!ev.to_members_ws) ev.to_members_ws = frames::ws_message(ev.to_members);
            s.send(ev.to_members_ws);
        });
    }
    bump(counters_.deliveries, delivered);
    bump(counters_.app_out, delivered + sent);
}

void chat_service::request_failed(std::uint64_t session_id, room_id room, msg_type request, error_code code,
                                  const char* reason) {
    player* p = find(session_id);
    if (!p) return;
    if (request == msg_type::join_room_req && p->direct_join == room) {
        // A direct_req's join: the direct_req fails, and its message (first in line) is dropped.
        p->direct_join = room_id();
        if (!p->queued.empty()) {
            p->queued_bytes -= p->queued.front().size();
            p->queued.pop_front();
        }
        if (const player::room_slot* slot = p->slot(room); slot && slot->state == player::room_state::joining)
            p->drop(room);
        send_error(*p->sess, msg_type::direct_req, code, reason ? reason : "the direct room could not be opened");
        join_answered(*p);
        return;
    }
    if (request == msg_type::join_room_req || request == msg_type::create_room_req) {
        if (const player::room_slot* slot = p->slot(room); slot && slot->state == player::room_state::joining)
            p->drop(room);
    }
    if (reason) send_error(*p->sess, request, code, reason);  // none: a rejoin that failed says nothing
    if (request == msg_type::join_room_req) join_answered(*p);
    if (request == msg_type::leave_room_req) complete(*p, player::pending_op::leave);
}

// --- helpers ---------------------------------------------------------------------------------

template <class T>
const T* chat_service::decode(player& p, std::span<const std::byte> frame, msg_type request, const char* what) {
    auto* req = body_as<T>(frame);
    if (!req) {
        bump(counters_.bad_requests);
        send_error(*p.sess, request, error_code::bad_request, what);
    }
    return req;
}

// The request units decode with it too.
template const proto::login_req* chat_service::decode<proto::login_req>(player&, std::span<const std::byte>, msg_type,
                                                                        const char*);
template const proto::history_req* chat_service::decode<proto::history_req>(player&, std::span<const std::byte>,
                                                                            msg_type, const char*);
template const proto::resume_req* chat_service::decode<proto::resume_req>(player&, std::span<const std::byte>, msg_type,
                                                                          const char*);
template const proto::read_req* chat_service::decode<proto::read_req>(player&, std::span<const std::byte>, msg_type,
                                                                      const char*);
template const proto::typing_req* chat_service::decode<proto::typing_req>(player&, std::span<const std::byte>, msg_type,
                                                                          const char*);
template const proto::direct_req* chat_service::decode<proto::direct_req>(player&, std::span<const std::byte>, msg_type,
                                                                          const char*);
template const proto::block_req* chat_service::decode<proto::block_req>(player&, std::span<const std::byte>, msg_type,
                                                                        const char*);
template const proto::moderate_req* chat_service::decode<proto::moderate_req>(player&, std::span<const std::byte>,
                                                                              msg_type, const char*);
template const proto::refresh_req* chat_service::decode<proto::refresh_req>(player&, std::span<const std::byte>,
                                                                            msg_type, const char*);

void chat_service::send(session& s, shared_buffer_ptr frame) {
    bump(counters_.app_out);
    if (const player* p = s.state<player>(); p && p->ws) frame = frames::ws_message(frame);
    s.send(std::move(frame));
}

void chat_service::send_error(session& s, msg_type request, error_code code, std::string_view reason) {
    bump(counters_.errors);
    send(s, frames::error(request, code, reason));
}

player* chat_service::find(std::uint64_t session_id) noexcept {
    auto it = players_.find(session_id);
    return it == players_.end() ? nullptr : it->second;
}

void chat_service::logged_in(player& p) {
    auto [it, fresh] = accounts_.try_emplace(p.player_id, &p);
    if (!fresh) {
        p.next_of_account = it->second;
        it->second = &p;
    }
}

std::size_t chat_service::sessions_of(std::uint64_t account) const {
    std::size_t n = 0;
    auto it = accounts_.find(account);
    for (const player* p = it == accounts_.end() ? nullptr : it->second; p; p = p->next_of_account) ++n;
    return n;
}

std::size_t chat_service::disconnect(std::uint64_t account) {
    // Collected first: a close may run on_close, which unlinks the session.
    std::vector<player*> gone;
    auto it = accounts_.find(account);
    for (player* p = it == accounts_.end() ? nullptr : it->second; p; p = p->next_of_account) gone.push_back(p);
    for (player* p : gone) {
        session& s = *p->sess;
        send_error(s, msg_type::none, error_code::forbidden, "the application closed this account's sessions");
        if (p->ws)
            ws_close(s, 1008, "disconnected by the application");
        else
            s.close();
    }
    return gone.size();
}

member chat_service::as_member(const player& p) const { return member{p.sess->id(), self_, p.player_id, p.name, p.ws}; }

// Once a second: tokens past their expiry (a deadline map: only the due ones are touched). The
// output queued on sessions is sampled by the engine's idle sweep (strix_send_queued_bytes),
// which looks only at sessions that were active.
void chat_service::sample() { jwt_.tick(wall_clock_us() / 1'000'000); }

}  // namespace strix::chat
