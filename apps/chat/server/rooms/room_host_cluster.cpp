// room_host in cluster mode (--cluster): Redis gives each room's messages one seq for the whole
// cluster and publishes them; every node's room_feed delivers the rooms it has sessions in.
//
//   chat_req ─> owner shard: FCALL chat_publish ─> reply (seq) ─> chat log writer (that seq)
//   Redis PUBLISH chat:{R} ─> room_feed of every node watching R ─> feed_message ─> fan_out
//
// A node's own messages reach its members through the feed too, so one path orders them with
// the other nodes' messages. Rooms and memberships live in the shared database: a join for a
// room this node does not hold reads it from there first (load_room).

#include "room_host.hpp"

#include "apps/chat/cluster/resp.hpp"
#include "apps/chat/cluster/room_backplane.hpp"
#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/server/service/chat_context.hpp"
#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/storage/chat_log_writer.hpp"
#include "apps/chat/storage/db_pool.hpp"

#include <strix/core/log.hpp>

#include <charconv>
#include <chrono>

namespace strix::chat {
namespace {

std::int64_t now_us() {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// What travels in the room's channel and stream besides the seq: the fields of the chat_msg and
// where it came from (node, publish number: the origin node matches its own publishes),
// "<sender_id> <server_ts_us> <client_ts> <client_seq> <node> <no> <name length> <name><text>".
struct wire_chat {
    std::uint64_t sender_id = 0, server_ts_us = 0, client_ts = 0, client_seq = 0, node = 0, no = 0;
    std::string_view name, text;
};

std::string encode(const wire_chat& w) {
    std::string out;
    for (std::uint64_t v : {w.sender_id, w.server_ts_us, w.client_ts, w.client_seq, w.node, w.no,
                            static_cast<std::uint64_t>(w.name.size())}) {
        out += std::to_string(v);
        out += ' ';
    }
    out.append(w.name);
    out.append(w.text);
    return out;
}

bool take_number(std::string_view& s, std::uint64_t& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p == s.data() + s.size() || *p != ' ') return false;
    s.remove_prefix(static_cast<std::size_t>(p - s.data()) + 1);
    return true;
}

std::optional<wire_chat> decode(std::string_view s) {
    wire_chat w;
    std::uint64_t name_len = 0;
    for (std::uint64_t* v : {&w.sender_id, &w.server_ts_us, &w.client_ts, &w.client_seq, &w.node, &w.no, &name_len})
        if (!take_number(s, *v)) return std::nullopt;
    if (name_len > s.size()) return std::nullopt;
    w.name = s.substr(0, name_len);
    w.text = s.substr(name_len);
    return w;
}

std::string room_key(room_id id) { return std::to_string(id.value()); }

}  // namespace

void room_host::start_cluster() {
    shard& sh = ctx_.eng.at(self_);
    redis_options ro;
    ro.target = parse_redis_url(ctx_.options.cluster.redis);
    publisher_ = std::make_unique<redis_client>(sh, ro, std::vector<std::vector<std::string>>{backplane_load_command()});
    room_feed_options fo;
    fo.check_interval = std::chrono::milliseconds(ctx_.options.cluster.position_check_ms);
    room_feed::sink s;
    s.message = [this](std::string_view r, std::uint64_t seq, std::string_view body) { feed_message(r, seq, body); };
    s.gap = [this](std::string_view r, std::uint64_t from, std::uint64_t to, bool epoch) { feed_gap(r, from, to, epoch); };
    feed_ = std::make_unique<room_feed>(sh, ro, std::move(s), fo);
    room_gap_fill::sink g;
    g.stored = [this](room_id id, chat_log_entry&& e) {
        // The database keeps no origin or client fields: ours come from own_seqs_, others' go
        // out with node 0 (no node) and client fields 0.
        wire_chat w{e.sender_id, static_cast<std::uint64_t>(e.server_ts_us), 0, 0, 0, 0, e.sender_name, e.text};
        if (auto o = own_seqs_.find({id, e.seq}); o != own_seqs_.end()) {
            w.client_ts = o->second.client_ts;
            w.client_seq = o->second.client_seq;
            w.node = node_id_;
            w.no = o->second.no;
        }
        feed_ordered(id, e.seq, encode(w));
    };
    g.missing = [this](room_id id, std::uint64_t, std::uint64_t to) { feed_ordered(id, to, {}); };
    g.released = [this](room_id id, std::uint64_t seq, std::string&& body) { feed_ordered(id, seq, body); };
    gap_fill_ = std::make_unique<room_gap_fill>(sh, ctx_.pool, std::move(g));
    presence_ =
        std::make_unique<cluster_presence>(*this, sh, ro, *publisher_, node_id_, ctx_.options.cluster, self_ == 0);
    settle_timer_.set_callback([this] { settle_due(); });
}

void room_host::stop_cluster() {
    *alive_ = false;
    if (settle_timer_.armed()) ctx_.eng.at(self_).timers().cancel(settle_timer_);
    gap_fill_.reset();
    feed_.reset();
    presence_.reset();
    publisher_.reset();  // fails what is in flight: those callbacks find alive_ false
}

void room_host::watch(const room& r) {
    if (!feed_) return;
    feed_->watch(room_key(r.id()), r.last_seq());
    presence_->watch(r);
}

void room_host::unwatch(const room& r) {
    if (!feed_) return;
    feed_->unwatch(room_key(r.id()));
    presence_->unwatch(r);
}

void room_host::announce(const room& r, presence_change what, std::uint64_t player_id, std::string_view name) {
    if (presence_) presence_->announce(r, what, player_id, name);
}

void room_host::cluster_chat(room& r, chat_request& req) {
    if (!publisher_) return;  // stopping
    if (!floor_ready(r, req)) return;
    const std::int64_t ts = now_us();
    const std::uint64_t no = ++publish_no_;
    const std::string body = encode({req.sender.player_id, static_cast<std::uint64_t>(ts), req.client_ts,
                                     req.client_seq, node_id_, no, req.sender.name, req.text});
    own_[no] = no_ticket;
    const auto& co = ctx_.options.cluster;
    // The floor: a room Redis has no state of continues after what this node knows of it, and
    // only once the other nodes' commits in flight had time to land (room_host_cluster_floor.cpp).
    const auto f = floors_.find(r.id());
    // A room nothing is known of (no message seen, none stored) starts at once: a new room.
    const std::uint64_t floor = floor_of(r);
    const bool may_create = floor == 0 || (f != floors_.end() && f->second.settled == publisher_->connects());
    const auto cmd = publish_command(room_key(r.id()), body, co.stream_max, new_epoch(), 0, floor, may_create);
    std::vector<std::string_view> args(cmd.begin(), cmd.end());
    const room_id id = r.id();
    const own_publish mine{no, req.client_ts, req.client_seq};
    publisher_->command(args, [this, alive = alive_, req = std::move(req), ts, id, no, mine](
                                  std::error_code ec, const resp_reply& reply) mutable {
        if (!*alive) return;
        std::optional<room_position> at;
        if (!ec) at = parse_publish_reply(reply);
        if (!at) {
            // Not sequenced, or its outcome is unknown (a timeout): the sender gets no chat_msg
            // from us and may send again. A publish that did happen still reaches the members.
            log_limited(log_level::warn, "room {}: chat_publish failed: {}", id.value(),
                        ec ? ec.message() : std::string("unexpected reply"));
            fail(req.sender.shard, req.sender.session_id, id, proto::msg_type::chat_req, proto::error_code::server_busy,
                 "the cluster backplane is unavailable; retry later");
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
        published(id, at->seq);
        own_seqs_[{id, at->seq}] = mine;
        bump(counters_.chat_messages);
        chat_log_entry entry;
        entry.room_id = id.value();
        entry.seq = at->seq;
        entry.sender_id = req.sender.player_id;
        entry.sender_name = std::move(req.sender.name);
        entry.server_ts_us = ts;
        entry.text = std::move(req.text);
        // The members see it through the feed; the database keeps it. A full queue here loses
        // the stored copy only (counted and logged, history then has a hole at this seq).
        auto ticket = write(std::move(entry), true);
        if (!ticket) {
            bump(counters_.server_busy);
            log_limited(log_level::warn, "room {}: seq {} published but not queued for the database", id.value(),
                        at->seq);
        }
        own_[no] = ticket.value_or(0);
        release(id);
    });
}

void room_host::feed_message(std::string_view key, std::uint64_t seq, std::string_view body) {
    std::uint64_t v = 0;
    std::from_chars(key.data(), key.data() + key.size(), v);
    const room_id id(v);
    // Behind a gap being read from the database: held, then released in order.
    if (gap_fill_ && gap_fill_->hold(id, seq, body)) return;
    feed_ordered(id, seq, body);
}

void room_host::feed_ordered(room_id id, std::uint64_t seq, std::string_view body) {
    auto it = rooms_.find(id);
    if (it == rooms_.end()) return;
    it->second.saw_seq(seq);
    if (auto s = stashed_.find(id); s != stashed_.end()) {
        s->second.emplace_back(seq, std::string(body));  // behind one of ours still unanswered
        return;
    }
    auto w = decode(body);
    if (w && w->node == node_id_) {
        auto own = own_.find(w->no);
        if (own != own_.end() && own->second == no_ticket) {
            stashed_[id].emplace_back(seq, std::string(body));
            return;
        }
    }
    deliver_chat(it->second, seq, body);
}

void room_host::release(room_id id) {
    auto s = stashed_.find(id);
    if (s == stashed_.end()) return;
    auto it = rooms_.find(id);
    auto& q = s->second;
    while (!q.empty()) {
        auto w = decode(q.front().second);
        if (w && w->node == node_id_) {
            auto own = own_.find(w->no);
            if (own != own_.end() && own->second == no_ticket) return;  // still waiting for that reply
        }
        if (it != rooms_.end()) deliver_chat(it->second, q.front().first, q.front().second);
        q.pop_front();
    }
    stashed_.erase(s);
}

void room_host::deliver_chat(room& r, std::uint64_t seq, std::string_view body) {
    if (body.empty()) {
        // Lost seqs up to `seq` (neither Redis nor the database has them): told the way resume
        // tells a gap, in their place in the room's order (docs/protocol.md, "Cluster gaps").
        flush_notices(r);
        fan_out(r, room_event::kind::message, 0, 0, nullptr, frames::resume_res(r.id().value(), true, {}, seq, 0, false),
                0, seq);
        r.note_delivered(seq);
        return;
    }
    auto w = decode(body);
    if (!w) {
        log_limited(log_level::warn, "room {}: undecodable message {} from the backplane", r.id().value(), seq);
        return;
    }
    // One of ours waits for its database write's commit (--ack stored), and with it everything
    // after it on this shard (room_host::deliver keeps the order).
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
    flush_notices(r);
    fan_out(r, room_event::kind::message, 0, 0, nullptr, frames::chat_msg(f), ticket, seq);
    r.note_delivered(seq);
}

void room_host::feed_gap(std::string_view key, std::uint64_t from, std::uint64_t to, bool epoch_changed) {
    std::uint64_t v = 0;
    std::from_chars(key.data(), key.data() + key.size(), v);
    if (to < from) {
        // A new epoch whose seqs restarted below what was delivered (the first publisher's floor
        // lagged): seqs (to, from] come again with other messages. Cannot be repaired here.
        log_limited(log_level::error, "room {}: Redis restarted the room's seqs at {} below {} delivered", key, to, from);
        return;
    }
    if (to == from) return;  // a new epoch continuing the seqs: nothing lost
    log_limited(log_level::info, "room {}: messages ({}, {}] are not in Redis any more ({}); reading the database", key,
                from, to, epoch_changed ? "new epoch" : "stream trimmed");
    if (gap_fill_) gap_fill_->gap(room_id(v), from, to);
}

void room_host::read_stream(room_id id, std::uint64_t after, std::uint32_t limit,
                            std::function<void(std::optional<std::vector<chat_log_entry>>)> done,
                            std::uint32_t only_node) {
    if (!publisher_ || limit == 0) {
        done(std::nullopt);
        return;
    }
    const auto cmd = since_command(room_key(id), after, limit);
    std::vector<std::string_view> args(cmd.begin(), cmd.end());
    publisher_->command(args, [alive = alive_, id, after, limit, only_node, done = std::move(done)](
                                  std::error_code ec, const resp_reply& reply) {
        if (!*alive) return;
        std::optional<room_since> since;
        if (!ec) since = parse_since_reply(reply);
        if (!since) {
            done(std::nullopt);
            return;
        }
        std::vector<chat_log_entry> out;
        out.reserve(since->entries.size());
        for (const auto& m : since->entries) {
            if (m.seq <= after || m.seq > after + limit) continue;
            auto w = decode(m.body);
            if (!w) {
                log_limited(log_level::warn, "room {}: undecodable stream entry {}", id.value(), m.seq);
                continue;
            }
            if (only_node != 0 && w->node != only_node) continue;
            chat_log_entry e;
            e.room_id = id.value();
            e.seq = m.seq;
            e.sender_id = w->sender_id;
            e.sender_name = std::string(w->name);
            e.server_ts_us = static_cast<std::int64_t>(w->server_ts_us);
            e.text = std::string(w->text);
            out.push_back(std::move(e));
        }
        done(std::move(out));
    });
}

void room_host::store_left_by(std::uint32_t node) {
    if (!feed_) return;
    // The stream keeps about stream_max messages per room; twice that back from the newest seq
    // seen reaches past anything a node could have left uncommitted short of a writer stalled
    // for thousands of messages (whose entries the stream no longer holds anyway).
    const std::uint64_t window = 2ull * ctx_.options.cluster.stream_max;
    for (const auto& [id, r] : rooms_) {
        if (!feed_->watching(room_key(id))) continue;
        const std::uint64_t top = r.last_seq();
        const std::uint64_t after = top > window ? top - window : 0;
        read_stream(
            id, after, static_cast<std::uint32_t>(2 * window),
            [this, id, node](std::optional<std::vector<chat_log_entry>> entries) {
                if (!entries) {
                    log_limited(log_level::warn, "room {}: Redis did not give node {}'s recent messages", id.value(),
                                node);
                    return;
                }
                std::size_t queued = 0;
                for (auto& e : *entries) queued += ctx_.writer.try_enqueue_copy(std::move(e)) ? 1 : 0;
                if (queued != 0)
                    log(log_level::info,
                        "room {}: {} messages node {} published, from Redis's stream, queued for the database "
                        "(insert-if-absent)",
                        id.value(), queued, node);
                if (queued != entries->size())
                    log_limited(log_level::warn, "room {}: {} of node {}'s messages not queued (the queue is full)",
                                id.value(), entries->size() - queued, node);
            },
            node);
    }
}

void room_host::load_room(room_id id, member m, bool rejoin) {
    sharded<chat_service>* services = &service_.container();
    const unsigned self = self_;
    const bool queued = ctx_.pool.try_submit([services, self, id, m, rejoin](chat_store& store) mutable {
        std::optional<stored_room> found;
        try {
            found = store.load_room(id.value());
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "loading room {} failed: {}", id.value(), e.what());
        }
        services->invoke_on(self, [id, found = std::move(found), m = std::move(m), rejoin](chat_service& svc) mutable {
            svc.host().loaded(id, std::move(found), std::move(m), rejoin);
        });
    });
    if (!queued) {
        bump(counters_.server_busy);
        fail(m.shard, m.session_id, id, proto::msg_type::join_room_req, proto::error_code::server_busy,
             "the database queue is full; retry later");
    }
}

void room_host::loaded(room_id id, std::optional<stored_room> r, member m, bool rejoin) {
    if (r && !rooms_.contains(id) && id.owner(ctx_.eng.shard_count()) == self_) restore(std::move(*r));
    join(id, std::move(m), rejoin, true);
}

}  // namespace strix::chat
