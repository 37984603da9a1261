// direct_req, block_req and moderate_req (docs/protocol.md, "Direct messages" and "Roles and
// moderation"). A direct_req the session has no room for yet asks the database, which finds or
// creates the pair's direct room (and refuses a blocked sender); the session then joins it like
// a login's rejoin, and the message waits behind that join as a chat_req to the room. A block is
// stored, then set on the direct room's owner shard before the answer. A moderate_req goes to
// the room's owner shard, which decides.
#include "chat_service.hpp"

#include "apps/chat/server/hooks/chat_hooks.hpp"
#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/server/net/names.hpp"
#include "apps/chat/server/rooms/room_sequencer.hpp"

#include <strix/core/log.hpp>
#include "apps/chat/storage/db_pool.hpp"

#include <algorithm>

namespace strix::chat {

using proto::error_code;
using proto::msg_type;

namespace {

constexpr std::size_t max_text = 60000;

// A chat_req frame, as the client would have sent it, for the message of a direct_req that
// waits behind the join of its room.
std::vector<std::byte> chat_req_frame(room_id room, std::string_view text, std::uint64_t client_ts,
                                      std::uint64_t client_seq) {
    flatbuffers::FlatBufferBuilder fbb(64 + text.size());
    auto t = fbb.CreateString(text.data(), text.size());
    fbb.Finish(proto::Createchat_req(fbb, t, client_ts, client_seq, room.value()));
    shared_buffer_ptr f = finish_frame(fbb, msg_type::chat_req);
    return {f->data(), f->data() + f->size()};
}

}  // namespace

void chat_service::handle_direct(player& p, std::span<const std::byte> frame) {
    auto* req = decode<proto::direct_req>(p, frame, msg_type::direct_req, "malformed direct_req");
    if (!req) return;
    session& s = *p.sess;
    if (p.version < 2) {
        send_error(s, msg_type::direct_req, error_code::bad_request,
                   "direct messages need protocol version 2 (login_req.version)");
        return;
    }
    std::string_view to = req->to() ? req->to()->string_view() : std::string_view{};
    std::string_view text = req->text() ? req->text()->string_view() : std::string_view{};
    if (!valid_account_name(to) || to == p.name) {
        send_error(s, msg_type::direct_req, error_code::invalid_name,
                   to == p.name ? "that is your own name" : "account names are 1-64 bytes of A-Z a-z 0-9 _ . - @ : |");
        return;
    }
    if (text.empty() || text.size() > max_text) {
        bump(counters_.bad_requests);
        send_error(s, msg_type::direct_req, error_code::bad_request, "chat text is 1-60000 bytes");
        return;
    }
    // A room this session opened before: a message like chat_req's.
    if (room_id known = p.direct_to(to); known && p.slot(known)) {
        if (!p.take_chat()) {
            bump(counters_.rate_limited);
            send_error(s, msg_type::direct_req, error_code::rate_limited, "too many messages; slow down");
            return;
        }
        // Through the publish hook when there is one, like chat_req (its answers name chat_req,
        // as those of a direct room's first message do).
        if (ctx_.hooks != nullptr && ctx_.hooks->publish() != nullptr)
            ask_publish_hook(p, known, text, req->client_ts(), req->client_seq());
        else
            send_chat(p, known, text, req->client_ts(), req->client_seq());
        return;
    }
    // Otherwise a database read (and maybe a new room): it spends a room-change token.
    if (!p.take_room()) {
        bump(counters_.room_rate_limited);
        send_error(s, msg_type::direct_req, error_code::rate_limited, "too many new conversations; slow down");
        return;
    }
    // A new room would be this shard's (its id names it), like a created one.
    const room_id fresh = host_.allocate_id();
    sharded<chat_service>* services = &container();
    const unsigned self = self_;
    const std::uint64_t sid = s.id(), from = p.player_id;
    const std::size_t limit = ctx_.options.max_rooms_per_account;
    p.pending = player::pending_op::direct;
    const bool queued =
        ctx_.pool.try_submit([services, self, sid, from, limit, fresh, to = std::string(to), text = std::string(text),
                              ts = req->client_ts(), cs = req->client_seq()](chat_store& store) mutable {
            direct_result r;
            bool ok = true;
            try {
                r = store.open_direct(from, to, fresh.value(), wall_clock_us(), limit);
            } catch (const std::exception& e) {
                log_limited(log_level::warn, "direct_req failed: {}", e.what());
                ok = false;
            }
            services->invoke_on(self, [=, to = std::move(to), text = std::move(text)](chat_service& svc) mutable {
                if (!ok) {
                    if (player* q = svc.find(sid)) {
                        svc.send_error(*q->sess, msg_type::direct_req, error_code::internal_error,
                                       "the database is unavailable; retry later");
                        svc.complete(*q, player::pending_op::direct);
                    }
                    return;
                }
                svc.direct_opened(sid, std::move(to), std::move(r), std::move(text), ts, cs);
            });
        });
    if (!queued) {
        p.pending = player::pending_op::none;
        bump(counters_.server_busy);
        send_error(s, msg_type::direct_req, error_code::server_busy, "the database queue is full; retry later");
    }
}

void chat_service::direct_opened(std::uint64_t sid, std::string to, direct_result r, std::string text,
                                 std::uint64_t client_ts, std::uint64_t client_seq) {
    player* p = find(sid);
    if (!p) return;
    session& s = *p->sess;
    using status = direct_result::status;
    switch (r.outcome) {
        case status::ok: break;
        case status::unknown_account:
            send_error(s, msg_type::direct_req, error_code::unknown_account, "no account is called that");
            break;
        case status::self:
            send_error(s, msg_type::direct_req, error_code::invalid_name, "that is your own name");
            break;
        case status::blocked:
            bump(counters_.sends_refused);
            send_error(s, msg_type::direct_req, error_code::blocked, "that account does not take your direct messages");
            break;
        case status::room_limit:
            bump(counters_.room_limited);
            send_error(s, msg_type::direct_req, error_code::room_limit,
                       r.peer_at_limit ? "that account belongs to as many rooms as it may"
                                       : "you belong to as many rooms as you may; leave one first");
            break;
    }
    if (r.outcome != status::ok) {
        complete(*p, player::pending_op::direct);
        return;
    }
    if (r.created) bump(counters_.directs_opened);
    const room_id room(r.room_id);
    auto& opened = p->directs_made().opened;
    if (opened.size() >= ctx_.options.max_rooms_per_account) opened.erase(opened.begin());
    opened.emplace_back(std::move(to), room);
    // The message goes first in line: it waits for the join (if any) like a chat_req sent next.
    std::vector<std::byte> f = chat_req_frame(room, text, client_ts, client_seq);
    p->queued_bytes += f.size();
    p->queued.push_front(std::move(f));
    if (p->slot(room)) {
        complete(*p, player::pending_op::direct);
        return;
    }
    if (p->rooms.size() >= ctx_.options.max_rooms_per_account && p->version >= 2) {
        // Another session of the account filled it meanwhile: the message gets not_in_room.
        complete(*p, player::pending_op::direct);
        return;
    }
    p->rooms.push_back({room});
    p->pending = player::pending_op::join;
    p->joins_in_flight = 1;
    stored_room info = room_host::direct_room_info(r.room_id, account{p->player_id, p->name}, r.peer);
    // Both accounts' other sessions go in too when the room (or a membership) is new.
    std::vector<std::uint64_t> announce;
    if (r.created || r.joined_peer) announce = {p->player_id, r.peer.id};
    p->direct_join = room;
    on_owner(room, [info = std::move(info), m = as_member(*p), announce = std::move(announce),
                    created = r.created](chat_service& owner) mutable {
        owner.host().open_direct(std::move(info), std::move(m), announce, created);
    });
}

void chat_service::enter_direct(std::uint64_t account, room_id room) {
    auto it = accounts_.find(account);
    player* next = nullptr;
    for (player* p = it == accounts_.end() ? nullptr : it->second; p; p = next) {
        next = p->next_of_account;
        if (p->version < 2) continue;
        if (p->slot(room) || p->rooms.size() >= ctx_.options.max_rooms_per_account) continue;
        if (p->pending != player::pending_op::none && p->pending != player::pending_op::join) {
            // Busy: it goes in once that request completes, in its turn.
            // Bounded like its rooms: past the limit it finds the room at its next login.
            auto& entering = p->directs_made().entering;
            if (entering.size() < ctx_.options.max_rooms_per_account &&
                std::find(entering.begin(), entering.end(), room) == entering.end())
                entering.push_back(room);
            continue;
        }
        rejoin(*p, room);
    }
}

void chat_service::handle_block(player& p, std::span<const std::byte> frame) {
    auto* req = decode<proto::block_req>(p, frame, msg_type::block_req, "malformed block_req");
    if (!req) return;
    session& s = *p.sess;
    std::string_view name = req->name() ? req->name()->string_view() : std::string_view{};
    if (!valid_account_name(name) || name == p.name) {
        send_error(s, msg_type::block_req, error_code::invalid_name,
                   name == p.name ? "that is your own name"
                                  : "account names are 1-64 bytes of A-Z a-z 0-9 _ . - @ : |");
        return;
    }
    if (!p.take_room()) {
        bump(counters_.room_rate_limited);
        send_error(s, msg_type::block_req, error_code::rate_limited, "too many changes; slow down");
        return;
    }
    sharded<chat_service>* services = &container();
    const unsigned self = self_;
    const std::uint64_t sid = s.id(), account = p.player_id;
    const bool blocked = req->blocked();
    p.pending = player::pending_op::block;
    const bool queued =
        ctx_.pool.try_submit([services, self, sid, account, blocked, name = std::string(name)](chat_store& store) {
            std::optional<block_result> r;
            try {
                r = store.set_block(account, name, blocked, wall_clock_us());
            } catch (const std::exception& e) {
                log_limited(log_level::warn, "block_req failed: {}", e.what());
            }
            services->invoke_on(self, [sid, r = std::move(r), blocked](chat_service& svc) mutable {
                if (r) {
                    svc.block_stored(sid, std::move(*r), blocked);
                } else if (player* q = svc.find(sid)) {
                    svc.send_error(*q->sess, msg_type::block_req, error_code::internal_error,
                                   "the database is unavailable; retry later");
                    svc.complete(*q, player::pending_op::block);
                }
            });
        });
    if (!queued) {
        p.pending = player::pending_op::none;
        bump(counters_.server_busy);
        send_error(s, msg_type::block_req, error_code::server_busy, "the database queue is full; retry later");
    }
}

void chat_service::block_stored(std::uint64_t sid, block_result r, bool blocked) {
    player* p = find(sid);
    if (!p) return;
    if (!r.found) {
        send_error(*p->sess, msg_type::block_req, error_code::unknown_account, "no account is called that");
        complete(*p, player::pending_op::block);
        return;
    }
    auto answer = [sid, peer = r.peer, blocked](chat_service& svc) {
        player* q = svc.find(sid);
        if (!q) return;
        svc.send(*q->sess, frames::block_res(peer.id, peer.name, blocked));
        svc.complete(*q, player::pending_op::block);
    };
    if (r.direct_room == 0) {
        answer(*this);
        return;
    }
    // Set on the room's owner shard first, so that no message of the blocked account passes
    // after the answer.
    const room_id room(r.direct_room);
    const unsigned self = self_;
    on_owner(room, [room, blocker = p->player_id, peer = r.peer.id, blocked, self, answer](chat_service& owner) {
        owner.host().set_block(room, blocker, peer, blocked);
        owner.host().sequencer().block_changed(room, blocker, peer, blocked);
        owner.container().invoke_on(self, answer);
    });
}

void chat_service::handle_moderate(player& p, std::span<const std::byte> frame) {
    auto* req = decode<proto::moderate_req>(p, frame, msg_type::moderate_req, "malformed moderate_req");
    if (!req) return;
    const player::room_slot* slot = req->room_id() != 0 ? p.slot(room_id(req->room_id())) : nullptr;
    if (!slot || slot->state != player::room_state::member) {
        send_error(*p.sess, msg_type::moderate_req, error_code::not_in_room, "moderation is for a room you are in");
        return;
    }
    // A notice is a message: it spends a chat token.
    if (!p.take_chat()) {
        bump(counters_.rate_limited);
        send_error(*p.sess, msg_type::moderate_req, error_code::rate_limited, "too many requests; slow down");
        return;
    }
    room_host::moderation m;
    m.room = slot->id;
    m.actor = as_member(p);
    m.action = req->action();
    m.target = req->target();
    m.seq = req->seq();
    m.seconds = req->seconds();
    on_owner(m.room, [m = std::move(m)](chat_service& owner) mutable { owner.host().moderate(std::move(m)); });
}

}  // namespace strix::chat
