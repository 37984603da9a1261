// cluster_sequencer: publishing through Redis and delivering what the feed brings (see the
// header for the whole design).

#include "cluster_sequencer.hpp"

#include "room_host.hpp"
#include "wire_chat.hpp"
#include "apps/chat/server/service/hook_events.hpp"
#include "apps/chat/cluster/resp.hpp"
#include "apps/chat/cluster/room_backplane.hpp"
#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"

#include <strix/core/log.hpp>

#include <charconv>
#include <chrono>

namespace strix::chat {
namespace {

std::string room_key(room_id id) { return std::to_string(id.value()); }

}  // namespace

cluster_sequencer::cluster_sequencer(room_host& host, chat_context& ctx, unsigned self, chat_counters& counters)
    : room_sequencer(room_id_source(ctx.first_room_counter, self, ctx.options.cluster.node_id)),
      host_(host),
      ctx_(ctx),
      self_(self),
      counters_(counters),
      node_id_(ctx.options.cluster.node_id) {
    shard& sh = ctx_.eng.at(self_);
    redis_options ro;
    ro.target = parse_redis_url(ctx_.options.cluster.redis);
    publisher_ =
        std::make_unique<redis_client>(sh, ro, std::vector<std::vector<std::string>>{backplane_load_command()});
    room_feed_options fo;
    fo.check_interval = std::chrono::milliseconds(ctx_.options.cluster.position_check_ms);
    room_feed::sink s;
    s.message = [this](std::string_view r, std::uint64_t seq, std::string_view body) { feed_message(r, seq, body); };
    s.gap = [this](std::string_view r, std::uint64_t from, std::uint64_t to, bool epoch) {
        feed_gap(r, from, to, epoch);
    };
    feed_ = std::make_unique<room_feed>(sh, ro, std::move(s), fo);
    room_gap_fill::sink g;
    g.stored = [this](room_id id, chat_log_entry&& e) {
        // The database keeps no origin or client fields: ours come from own_seqs_, others' go
        // out with node 0 (no node) and client fields 0.
        wire_chat w{e.sender_id, static_cast<std::uint64_t>(e.server_ts_us), 0, 0, 0, 0, e.sender_name, e.text, e.kind};
        if (auto o = own_seqs_.find({id, e.seq}); o != own_seqs_.end()) {
            w.client_ts = o->second.client_ts;
            w.client_seq = o->second.client_seq;
            w.node = node_id_;
            w.no = o->second.no;
        }
        feed_ordered(id, e.seq, encode_wire_chat(w));
    };
    g.missing = [this](room_id id, std::uint64_t, std::uint64_t to) { feed_ordered(id, to, {}); };
    g.released = [this](room_id id, std::uint64_t seq, std::string&& body) { feed_ordered(id, seq, body); };
    gap_fill_ = std::make_unique<room_gap_fill>(sh, ctx_.pool, std::move(g));
    presence_ = std::make_unique<cluster_presence>(host_, *this, sh, ro, *publisher_, node_id_, ctx_.options.cluster,
                                                   self_ == 0);
    settle_timer_.set_callback([this] { settle_due(); });
}

// stop() ran at the shard's exit; a sequencer destroyed without it (an engine that never ran)
// still fails the replies in flight into callbacks that find it gone.
cluster_sequencer::~cluster_sequencer() { *alive_ = false; }

cluster_sequencer& cluster_sequencer::of(chat_service& svc) {
    return static_cast<cluster_sequencer&>(svc.host().sequencer());
}

void cluster_sequencer::stop() {
    *alive_ = false;
    if (settle_timer_.armed()) ctx_.eng.at(self_).timers().cancel(settle_timer_);
    gap_fill_.reset();
    feed_.reset();
    presence_.reset();
    publisher_.reset();  // fails what is in flight: those callbacks find alive_ false
}

void cluster_sequencer::watch(const room& r) {
    if (!feed_) return;
    feed_->watch(room_key(r.id()), r.last_seq());
    presence_->watch(r);
}

void cluster_sequencer::unwatch(const room& r) {
    if (!feed_) return;
    feed_->unwatch(room_key(r.id()));
    presence_->unwatch(r);
}

void cluster_sequencer::announce(const room& r, presence_change what, std::uint64_t player_id, std::string_view name) {
    // Membership and presence changes of this node's sessions, for the other nodes (the room's
    // online hash and its channel, not ordered with the room's messages).
    if (presence_) presence_->announce(r, what, player_id, name);
}

bool cluster_sequencer::defer_join(const room& r, member& m, bool rejoin) {
    if (!presence_ || presence_->primed(r.id())) return false;
    const room_id id = r.id();
    presence_->prime(id,
                     [this, id, m = std::move(m), rejoin]() mutable { host_.join(id, std::move(m), rejoin, true); });
    return true;
}

bool cluster_sequencer::online_elsewhere(room_id id, std::uint64_t account) const {
    return presence_ && presence_->online_elsewhere(id, account);
}

std::uint64_t cluster_sequencer::join_point(const room& r) const {
    // Only what this node delivered went out before the join: later messages the feed brought
    // wait behind a commit or a gap and reach the newcomer live.
    return presence_ ? r.delivered_seq() : r.last_seq();
}

shared_buffer_ptr cluster_sequencer::join_room_res(const room& r, std::uint64_t join_seq) const {
    const std::size_t limit = ctx_.options.member_list_limit;
    return presence_ ? frames::join_room_res(presence_->summary(r), presence_->accounts(r, limit), join_seq)
                     : frames::join_room_res(r.summary(), r.listed_accounts(limit), join_seq);
}

void cluster_sequencer::chat(room& r, chat_request& req) { publish(r, req); }

void cluster_sequencer::publish(room& r, chat_request& req) {
    STRIX_ASSERT_OWNER(host_.service().home(), "cluster_sequencer::publish");
    if (!publisher_) return;  // stopping
    if (!floor_ready(r, req)) return;
    const std::int64_t ts = wall_clock_us();
    const std::uint64_t no = ++publish_no_;
    const std::string body = encode_wire_chat({req.sender.player_id, static_cast<std::uint64_t>(ts), req.client_ts,
                                               req.client_seq, node_id_, no, req.sender.name, req.text, req.kind});
    own_[no] = no_ticket;
    const auto& co = ctx_.options.cluster;
    // The floor: a room Redis has no state of continues after what this node knows of it, and
    // only once the other nodes' commits in flight had time to land (cluster_sequencer_floor.cpp).
    const auto f = floors_.find(r.id());
    // A room nothing is known of (no message seen, none stored) starts at once: a new room.
    const std::uint64_t floor = floor_of(r);
    const bool may_create = floor == 0 || (f != floors_.end() && f->second.settled == publisher_->connects());
    const auto cmd = publish_command(room_key(r.id()), body, co.stream_max, new_epoch(), 0, floor, may_create,
                                     req.taken ? std::string_view(req.idem_key) : std::string_view());
    std::vector<std::string_view> args(cmd.begin(), cmd.end());
    const room_id id = r.id();
    const own_publish mine{no, req.client_ts, req.client_seq};
    publisher_->command(args, [this, alive = alive_, req = std::move(req), ts, id, no,
                               mine](std::error_code ec, const resp_reply& reply) mutable {
        if (!*alive) return;
        std::optional<room_position> at;
        if (!ec) at = parse_publish_reply(reply);
        if (!at) {
            // Not sequenced, or its outcome is unknown (a timeout): the sender gets no chat_msg
            // from us and may send again. A publish that did happen still reaches the members.
            log_limited(log_level::warn, "room {}: chat_publish failed: {}", id.value(),
                        ec ? ec.message() : std::string("unexpected reply"));
            refuse(req, id, proto::error_code::server_busy, "the cluster backplane is unavailable; retry later");
            own_.erase(no);
            release(id);
            return;
        }
        if (at->seq == 0) {
            // Redis has no state for the room (it lost its data) and this node may not start it
            // yet: published after the wait, in its order.
            own_.erase(no);
            release(id);
            no_room_state(id, std::move(req));
            return;
        }
        if (at->repeated) {
            told_taken(req, id, no, *at, 0);  // nothing published: nothing to store
            return;
        }
        published(id, at->seq);
        own_seqs_[{id, at->seq}] = mine;
        bump(counters_.chat_messages);
        // The members see it through the feed; the database keeps it. A full queue here loses
        // the stored copy only (counted and logged, history then has a hole at this seq).
        std::optional<webhook_event> stored;
        if (const room* held = ctx_.hooks != nullptr ? host_.find(id) : nullptr)
            stored = hook_events::stored_message(ctx_, *held, at->seq, req);
        auto ticket = host_.order().write(to_log_entry(id, at->seq, req, ts));
        hook_events::emit(ctx_, std::move(stored));
        if (!ticket) {
            bump(counters_.server_busy);
            log_limited(log_level::warn, "room {}: seq {} published but not queued for the database", id.value(),
                        at->seq);
        }
        own_[no] = ticket.value_or(0);
        if (req.taken) {
            if (!ticket) {
                req.taken({0, 0, false, false, "the chat log queue is full; retry later"});
                req.taken = nullptr;
            }
            told_taken(req, id, no, *at, ticket.value_or(0));
            return;
        }
        release(id);
    });
}

void cluster_sequencer::refuse(chat_request& req, room_id id, proto::error_code code, const char* why) {
    if (req.taken)
        req.taken({0, 0, false, code == proto::error_code::not_in_room, why});
    else
        host_.fail(req.sender.shard, req.sender.session_id, id, proto::msg_type::chat_req, code, why);
}

void cluster_sequencer::told_taken(chat_request& req, room_id id, std::uint64_t no, const room_position& at,
                                   std::uint64_t ticket) {
    const room* r = host_.find(id);
    if (at.repeated) {
        own_.erase(no);  // nothing was published (at.seq is an earlier message's)
    } else if (r == nullptr || r->empty()) {
        // No session here: the feed does not follow the room, its copy never comes back.
        own_.erase(no);
        own_seqs_.erase({id, at.seq});
    }
    release(id);
    if (req.taken) req.taken({at.seq, ticket, at.repeated});
}

void cluster_sequencer::feed_message(std::string_view key, std::uint64_t seq, std::string_view body) {
    STRIX_ASSERT_OWNER(host_.service().home(), "cluster_sequencer::feed_message");
    std::uint64_t v = 0;
    std::from_chars(key.data(), key.data() + key.size(), v);
    const room_id id(v);
    // Behind a gap being read from the database: held, then released in order.
    if (gap_fill_ && gap_fill_->hold(id, seq, body)) return;
    feed_ordered(id, seq, body);
}

void cluster_sequencer::feed_ordered(room_id id, std::uint64_t seq, std::string_view body) {
    room* r = host_.find(id);
    if (r == nullptr) return;
    r->saw_seq(seq);
    if (auto s = stashed_.find(id); s != stashed_.end()) {
        s->second.emplace_back(seq, std::string(body));  // behind one of ours still unanswered
        return;
    }
    auto w = decode_wire_chat(body);
    if (w && w->node == node_id_) {
        auto own = own_.find(w->no);
        if (own != own_.end() && own->second == no_ticket) {
            stashed_[id].emplace_back(seq, std::string(body));
            return;
        }
    }
    deliver_chat(*r, seq, body);
}

void cluster_sequencer::release(room_id id) {
    auto s = stashed_.find(id);
    if (s == stashed_.end()) return;
    room* r = host_.find(id);
    auto& q = s->second;
    while (!q.empty()) {
        auto w = decode_wire_chat(q.front().second);
        if (w && w->node == node_id_) {
            auto own = own_.find(w->no);
            if (own != own_.end() && own->second == no_ticket) return;  // still waiting for that reply
        }
        if (r != nullptr) deliver_chat(*r, q.front().first, q.front().second);
        q.pop_front();
    }
    stashed_.erase(s);
}

void cluster_sequencer::deliver_chat(room& r, std::uint64_t seq, std::string_view body) {
    if (body.empty()) {
        // Lost seqs up to `seq` (neither Redis nor the database has them): told the way resume
        // tells a gap, in their place in the room's order (docs/protocol.md, "Cluster gaps").
        host_.flush_notices(r);
        host_.fan_out(r, room_event::kind::message, 0, 0, nullptr,
                      frames::resume_res(r.id().value(), true, {}, seq, 0, false), 0, seq);
        r.note_delivered(seq);
        return;
    }
    auto w = decode_wire_chat(body);
    if (!w) {
        log_limited(log_level::warn, "room {}: undecodable message {} from the backplane", r.id().value(), seq);
        return;
    }
    // One of ours waits for its database write's commit (--ack stored), and with it everything
    // after it on this shard (commit_order keeps the order).
    std::uint64_t ticket = 0;
    if (w->node == node_id_) {
        if (auto own = own_.find(w->no); own != own_.end()) {
            ticket = own->second;
            own_.erase(own);
        }
        own_seqs_.erase({r.id(), seq});
    }
    frames::chat_fields f;
    f.room_id = r.id().value();
    f.seq = seq;
    f.sender_id = w->sender_id;
    f.sender_name = w->name;
    f.server_ts_us = w->server_ts_us;
    f.text = w->text;
    f.client_ts = w->client_ts;
    f.client_seq = w->client_seq;
    f.kind = static_cast<std::uint8_t>(w->kind);
    host_.flush_notices(r);
    const bool notice = f.kind == static_cast<std::uint8_t>(proto::msg_kind::notice);
    host_.fan_out(r, notice ? room_event::kind::moderation : room_event::kind::message, 0, 0, nullptr,
                  frames::chat_msg(f), ticket, seq);
    r.note_delivered(seq);
    if (notice) host_.apply_notice(r, f.sender_id, f.text, ticket, static_cast<std::int64_t>(f.server_ts_us));
}

void cluster_sequencer::feed_gap(std::string_view key, std::uint64_t from, std::uint64_t to, bool epoch_changed) {
    std::uint64_t v = 0;
    std::from_chars(key.data(), key.data() + key.size(), v);
    if (to < from) {
        // A new epoch whose seqs restarted below what was delivered (the first publisher's floor
        // lagged): seqs (to, from] come again with other messages. Cannot be repaired here.
        log_limited(log_level::error, "room {}: Redis restarted the room's seqs at {} below {} delivered", key, to,
                    from);
        return;
    }
    if (to == from) return;  // a new epoch continuing the seqs: nothing lost
    log_limited(log_level::info, "room {}: messages ({}, {}] are not in Redis any more ({}); reading the database", key,
                from, to, epoch_changed ? "new epoch" : "stream trimmed");
    if (gap_fill_) gap_fill_->gap(room_id(v), from, to);
}

}  // namespace strix::chat
