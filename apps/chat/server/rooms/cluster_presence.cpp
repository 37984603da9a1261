#include "cluster_presence.hpp"

#include "cluster_sequencer.hpp"
#include "room_host.hpp"
#include "apps/chat/cluster/room_backplane.hpp"
#include "apps/chat/server/net/frames.hpp"
#include "apps/chat/server/options/cluster_options.hpp"
#include "apps/chat/server/service/chat_service.hpp"

#include <strix/core/log.hpp>

#include <algorithm>
#include <charconv>

namespace strix::chat {
namespace {

std::string key_of(room_id id) { return std::to_string(id.value()); }

void ignore_reply(std::error_code, const resp_reply&) {}

}  // namespace

room_id room_of_channel(std::string_view channel) {
    const auto open = channel.find('{'), close = channel.find('}');
    std::uint64_t v = 0;
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) return room_id(0);
    std::from_chars(channel.data() + open + 1, channel.data() + close, v);
    return room_id(v);
}

const std::string& cluster_presence::incarnation() {
    static const std::string inc = new_epoch();
    return inc;
}

cluster_presence::cluster_presence(room_host& host, cluster_sequencer& seq, shard& sh, const redis_options& ro,
                                   redis_client& publisher, std::uint32_t node, const cluster_options& co,
                                   bool registry)
    : host_(host), seq_(seq), shard_(sh), node_(node), publisher_(publisher), grace_(co.node_ttl_ms) {
    grace_timer_.set_callback([this] { grace_over(); });
    redis_ = std::make_unique<redis_client>(sh, ro, std::vector<std::vector<std::string>>{backplane_load_command()});
    redis_->on_connection([this](bool up) {
        // A connection after the first: Redis may have restarted empty, or others may have
        // cleared this node's entries meanwhile; put them back (idempotent for everyone).
        if (up && connections_++ > 0) {
            forget_versions();
            start_grace();
            reannounce();
        }
    });
    sub_ =
        std::make_unique<redis_subscriber>(sh, ro,
                                           redis_subscriber::events{[this](std::string_view ch, std::string_view m) {
                                                                        on_message(ch, m);
                                                                    },
                                                                    [this](std::string_view ch) { on_subscribed(ch); },
                                                                    [this](bool up) {
                                                                        if (!up) forget_versions();
                                                                        // Back after a loss: the reads its
                                                                        // subscriptions trigger may find hashes the
                                                                        // other nodes are still refilling.
                                                                        if (up && sub_seen_up_) start_grace();
                                                                        if (up) sub_seen_up_ = true;
                                                                    }});
    if (registry) {
        sub_->subscribe(std::string(control_channel));  // signals about accounts: once per node
        node_registry_options no;
        no.node_id = node;
        no.ttl = std::chrono::milliseconds(co.node_ttl_ms);
        no.scan_interval = std::chrono::milliseconds(co.node_scan_ms);
        no.incarnation = incarnation();
        node_registry::events ev;
        ev.up = [this](std::uint32_t) { broadcast_alive(); };
        ev.down = [this](std::uint32_t n) {
            log(log_level::info, "node {}: node {} is down; its members are shown offline", node_, n);
            broadcast_alive();
        };
        ev.lapsed = [this] {
            // Others may have cleared this node's entries while its beats were late.
            auto& c = host_.service().container();
            for (unsigned s = 0; s < c.size(); ++s)
                c.invoke_on(s, [](chat_service& svc) {
                    if (auto* p = cluster_sequencer::of(svc).presence()) p->reannounce();
                });
        };
        registry_ = std::make_unique<node_registry>(sh, ro, no, std::move(ev));
    }
}

cluster_presence::~cluster_presence() {
    *alive_flag_ = false;
    if (grace_timer_.armed()) shard_.timers().cancel(grace_timer_);
    registry_.reset();
    sub_.reset();
    redis_.reset();  // fails what is in flight: those callbacks find alive_flag_ false
}

void cluster_presence::broadcast_alive() {
    // Every shard keeps its own copy (its rooms' views use it); shard-local after that.
    const auto alive = registry_->alive();
    auto& c = host_.service().container();
    for (unsigned s = 0; s < c.size(); ++s)
        c.invoke_on(s, [alive](chat_service& svc) {
            if (auto* p = cluster_sequencer::of(svc).presence()) p->nodes_changed(alive);
        });
}

void cluster_presence::watch(const room& r) {
    rooms_[r.id()].primed = true;  // joined after prime(), or a room just created here
    sub_->subscribe(presence_channel(key_of(r.id())));
    sub_->subscribe(signal_channel(key_of(r.id())));
}

void cluster_presence::unwatch(const room& r) {
    sub_->unsubscribe(presence_channel(key_of(r.id())));
    sub_->unsubscribe(signal_channel(key_of(r.id())));
    auto it = rooms_.find(r.id());
    if (it == rooms_.end()) return;
    // The remote view is dropped: so are the room's counts of it (a next prime reads it again).
    if (room* held = host_.find(r.id())) held->clear_remote();
    // Not followed any more: the view would go stale. A join waiting for a read keeps the entry.
    if (it->second.waiting.empty())
        rooms_.erase(it);
    else
        it->second = room_state{{}, false, 0, std::move(it->second.waiting)};
}

bool cluster_presence::primed(room_id id) const {
    auto it = rooms_.find(id);
    return it != rooms_.end() && it->second.primed;
}

void cluster_presence::prime(room_id id, std::function<void()> then) {
    auto& st = rooms_[id];
    st.waiting.push_back(std::move(then));
    if (st.waiting.size() == 1) read(id);  // else a read is on its way
}

void cluster_presence::read(room_id id) {
    const std::string key = online_key(key_of(id));
    redis_->command({"HGETALL", key}, [this, alive = alive_flag_, id](std::error_code ec, const resp_reply& reply) {
        if (!*alive) return;
        auto it = rooms_.find(id);
        if (ec) {
            log_limited(log_level::warn, "room {}: reading who is online failed: {}", id.value(), ec.message());
        } else {
            std::uint64_t version = 0;
            std::vector<std::uint64_t> left;
            auto entries = parse_online_hash(reply, &version, &left);
            if (it != rooms_.end() && version < it->second.version) {
                // Older than a message applied meanwhile (the channel is another connection):
                // this read would undo it. The next one is newer.
                read(id);
                return;
            }
            apply_hash(id, entries, left);
            it = rooms_.find(id);
            if (it != rooms_.end()) it->second.version = std::max(it->second.version, version);
        }
        if (it == rooms_.end()) return;
        it->second.primed = true;
        auto waiting = std::move(it->second.waiting);
        it->second.waiting.clear();
        for (auto& f : waiting) f();  // may watch or unwatch: nothing of rooms_ is held here
    });
}

void cluster_presence::forget_versions() {
    // A Redis restarted empty numbers the versions from 1 again: the next read sets them.
    for (auto& [id, st] : rooms_) st.version = 0;
}

void cluster_presence::start_grace() {
    grace_until_ = std::chrono::steady_clock::now() + grace_;
    if (grace_timer_.armed()) shard_.timers().cancel(grace_timer_);
    shard_.timers().schedule(grace_timer_, shard_.ticks_for(grace_));
}

void cluster_presence::grace_over() {
    auto rooms = std::move(reread_);
    reread_.clear();
    std::sort(rooms.begin(), rooms.end());
    rooms.erase(std::unique(rooms.begin(), rooms.end()), rooms.end());
    for (room_id id : rooms)
        if (rooms_.contains(id)) read(id);
}

void cluster_presence::on_subscribed(std::string_view channel) {
    if (is_signal_channel(channel)) return;  // signals are not kept: nothing to read
    // What changed while this node did not follow the channel is in the hash.
    const room_id id = room_of_channel(channel);
    if (rooms_.contains(id)) read(id);
}

bool cluster_presence::counts(std::uint32_t node, const std::string& inc) const {
    if (!alive_) return true;  // no scan yet: every entry counts until one says otherwise
    auto it = alive_->find(node);
    return it != alive_->end() && it->second == inc;
}

void cluster_presence::apply_hash(room_id id, const std::vector<online_entry>& entries,
                                  const std::vector<std::uint64_t>& left) {
    room* rp = host_.find(id);
    auto sit = rooms_.find(id);
    if (rp == nullptr || sit == rooms_.end()) return;
    room& r = *rp;
    room_state& st = sit->second;
    // Leaves first: an account that left is told as member_left, not as gone offline.
    for (std::uint64_t account : left) forget_remote(r, st, account);
    std::map<entry_key, const online_entry*> now;
    std::map<std::uint32_t, bool> stale;  // nodes whose entries here are not alive
    for (const auto& e : entries) {
        if (e.node == node_) {
            if (e.incarnation != incarnation()) stale[node_] = true;  // this node's previous run
            continue;
        }
        if (!counts(e.node, e.incarnation)) {
            stale[e.node] = true;
            continue;
        }
        now[{e.account, e.node}] = &e;
    }
    std::vector<entry_key> gone;
    for (const auto& [k, inc] : st.remote)
        if (auto it = now.find(k); it == now.end() || it->second->incarnation != inc) gone.push_back(k);
    if (!gone.empty() && std::chrono::steady_clock::now() < grace_until_) {
        // Missing may mean not put back yet (Redis restarted empty): decided by a read after the
        // grace. A node found dead is still handled at once (nodes_changed).
        reread_.push_back(id);
        gone.clear();
    }
    for (const auto& k : gone) set_offline(r, st, k.first, k.second);
    for (const auto& [k, e] : now)
        if (!st.remote.contains(k)) set_online(r, st, k.first, k.second, e->incarnation, e->name);
    for (const auto& [n, _] : stale) clear_node({key_of(id)}, n);
}

bool cluster_presence::online_anywhere(const room& r, const room_state& st, std::uint64_t account) const {
    if (r.has_player(account)) return true;
    auto it = st.remote.lower_bound({account, 0});
    return it != st.remote.end() && it->first.first == account;
}

bool cluster_presence::online_elsewhere(room_id id, std::uint64_t account) const {
    auto it = rooms_.find(id);
    if (it == rooms_.end()) return false;
    auto e = it->second.remote.lower_bound({account, 0});
    return e != it->second.remote.end() && e->first.first == account;
}

void cluster_presence::set_online(room& r, room_state& st, std::uint64_t account, std::uint32_t node, std::string inc,
                                  std::string_view name) {
    const bool was = online_anywhere(r, st, account);
    const bool known = r.account(account) != nullptr;
    if (!known) r.mark_absent(account, std::string(name));
    const bool added = st.remote.insert_or_assign(entry_key{account, node}, std::move(inc)).second;
    if (added) r.add_remote(account, 1);
    if ((!known || !was) && host_.quiet(r)) return;  // a large room: counted, not announced
    shared_buffer_ptr frame;
    if (!known)
        frame = frames::member_joined(r.id().value(), account, name);
    else if (!was)
        frame = frames::member_presence(r.id().value(), account, r.account(account)->name, true);
    if (frame) host_.fan_out(r, room_event::kind::notice, 0, 0, nullptr, frame);
}

void cluster_presence::set_offline(room& r, room_state& st, std::uint64_t account, std::uint32_t node) {
    if (st.remote.erase({account, node}) == 0) return;
    r.add_remote(account, -1);
    const room_member* a = r.account(account);
    if (a == nullptr || online_anywhere(r, st, account) || host_.quiet(r)) return;
    host_.fan_out(r, room_event::kind::notice, 0, 0, nullptr,
                  frames::member_presence(r.id().value(), account, a->name, false));
}

void cluster_presence::forget_remote(room& r, room_state& st, std::uint64_t account) {
    for (auto it = st.remote.lower_bound({account, 0}); it != st.remote.end() && it->first.first == account;) {
        it = st.remote.erase(it);
        r.add_remote(account, -1);
    }
    const room_member* a = r.account(account);
    if (a == nullptr || r.has_player(account)) return;
    auto frame = frames::member_left(r.id().value(), account, a->name);
    r.forget(account);
    if (host_.quiet(r)) return;  // a large room: counted, not announced
    host_.fan_out(r, room_event::kind::notice, 0, 0, nullptr, frame);
}

void cluster_presence::on_message(std::string_view channel, std::string_view payload) {
    if (on_signal(channel, payload)) return;
    auto m = parse_presence(payload);
    if (!m || m->node == node_) return;  // our own: told locally already
    const room_id id = room_of_channel(channel);
    room* rp = host_.find(id);
    auto sit = rooms_.find(id);
    if (rp == nullptr || sit == rooms_.end()) return;
    room& r = *rp;
    room_state& st = sit->second;
    if (m->version <= st.version) return;  // a read applied after it was published has it
    st.version = m->version;
    switch (m->change) {
        case presence_change::joined:
        case presence_change::online:
            set_online(r, st, m->account, m->node, std::string(m->incarnation), m->name);
            break;
        case presence_change::offline: set_offline(r, st, m->account, m->node); break;
        case presence_change::left: forget_remote(r, st, m->account); break;
        case presence_change::deleted: host_.forget_deleted(id); break;
    }
}

void cluster_presence::announce(const room& r, presence_change what, std::uint64_t account, std::string_view name) {
    const auto cmd = presence_command(key_of(r.id()), {0, node_, what, account, incarnation(), name});
    std::vector<std::string_view> args(cmd.begin(), cmd.end());
    // Not retried: a change lost with a Redis outage is put right by the re-announcement after
    // the reconnect (online members) and by the others' reading of the hash.
    publisher_.command(args, [id = r.id()](std::error_code ec, const resp_reply&) {
        if (ec) log_limited(log_level::warn, "room {}: presence change not stored: {}", id.value(), ec.message());
    });
}

void cluster_presence::announce_deleted(room_id id) {
    const auto cmd = presence_command(key_of(id), {0, node_, presence_change::deleted, 0, incarnation(), {}});
    std::vector<std::string_view> args(cmd.begin(), cmd.end());
    publisher_.command(args, [id](std::error_code ec, const resp_reply&) {
        if (ec) log_limited(log_level::warn, "room {}: its deletion was not published: {}", id.value(), ec.message());
    });
}

void cluster_presence::nodes_changed(const std::map<std::uint32_t, std::string>& alive) {
    // A node alive now that was not at the last scan (back from late beats, or restarted): what
    // it has online is in the hashes, possibly after this node dropped it from its view.
    bool reread = false;
    if (alive_) {
        for (const auto& [n, inc] : alive)
            if (n != node_ && (!alive_->contains(n) || alive_->at(n) != inc)) reread = true;
        // A node gone (or back as a new incarnation) may have published messages it never
        // committed: the rooms here store them from the streams.
        for (const auto& [n, inc] : *alive_)
            if (n != node_ && (!alive.contains(n) || alive.at(n) != inc)) seq_.store_left_by(n);
    }
    alive_ = alive;
    std::map<std::uint32_t, std::vector<std::string>> clear;
    for (auto& [id, st] : rooms_) {
        room* r = host_.find(id);
        std::vector<entry_key> dead;
        for (const auto& [k, inc] : st.remote)
            if (!counts(k.second, inc)) dead.push_back(k);
        for (const auto& k : dead) {
            if (r != nullptr)
                set_offline(*r, st, k.first, k.second);
            else
                st.remote.erase(k);
            auto& v = clear[k.second];
            if (v.empty() || v.back() != key_of(id)) v.push_back(key_of(id));
        }
    }
    for (auto& [n, rooms] : clear) clear_node(std::move(rooms), n);
    if (reread) {
        std::vector<room_id> watched;
        for (const auto& [id, st] : rooms_)
            if (st.primed) watched.push_back(id);
        for (room_id id : watched) read(id);
    }
    // Seen alive again after a time others saw this node down (and may have cleared it).
    auto self = alive.find(node_);
    const bool self_alive = self != alive.end() && self->second == incarnation();
    if (self_alive && !self_alive_) reannounce();
    self_alive_ = self_alive;
}

void cluster_presence::clear_node(std::vector<std::string> rooms, std::uint32_t node) {
    std::string keep;
    if (node == node_)
        keep = incarnation();
    else if (alive_)
        if (auto it = alive_->find(node); it != alive_->end()) keep = it->second;
    const auto cmd = presence_clear_command(rooms, node, keep);
    std::vector<std::string_view> args(cmd.begin(), cmd.end());
    redis_->command(args, ignore_reply);
}

void cluster_presence::reannounce() {
    for (const auto& [id, st] : rooms_) {
        const room* r = host_.find(id);
        if (r == nullptr) continue;
        for (const auto& a : r->accounts())
            if (a.online()) announce(*r, presence_change::online, a.player_id, a.name);
    }
}

std::vector<room_member> cluster_presence::accounts(const room& r, std::size_t limit) const {
    std::vector<room_member> out = r.listed_accounts(limit);
    for (auto& a : out)
        if (a.sessions == 0 && a.remote != 0) a.sessions = 1;  // online elsewhere: listed as online
    return out;
}

room_summary cluster_presence::summary(const room& r) const {
    room_summary s = r.summary();
    s.online = static_cast<std::uint32_t>(r.online_anywhere());  // kept by the room: O(1)
    return s;
}

}  // namespace strix::chat
