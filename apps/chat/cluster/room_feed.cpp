#include "apps/chat/cluster/room_feed.hpp"

#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>

#include <vector>

namespace strix::chat {

namespace {

void run(redis_client& c, const std::vector<std::string>& args, redis_callback cb) {
    std::vector<std::string_view> a(args.begin(), args.end());
    c.command(a, std::move(cb));
}

}  // namespace

room_feed::room_feed(shard& sh, const redis_options& opts, sink s, room_feed_options fo)
    : owner_(sh), sink_(std::move(s)), fo_(fo), timer_([this] { check(); }) {
    commands_ =
        std::make_unique<redis_client>(sh, opts, std::vector<std::vector<std::string>>{backplane_load_command()});
    pubsub_ =
        std::make_unique<redis_subscriber>(sh, opts,
                                           redis_subscriber::events{[this](std::string_view ch, std::string_view m) {
                                                                        on_message(ch, m);
                                                                    },
                                                                    [this](std::string_view ch) { on_subscribed(ch); },
                                                                    [this](bool up) {
                                                                        if (up && !seen_up_) seen_up_ = true;
                                                                    }});
    owner_.timers().schedule(timer_, owner_.ticks_for(fo_.check_interval));
}

room_feed::~room_feed() {
    *alive_ = false;
    if (timer_.armed()) owner_.timers().cancel(timer_);
    pubsub_.reset();
    commands_.reset();  // fails what is in flight; the callbacks see alive_ false
}

std::string room_feed::room_of(std::string_view channel) const {
    // "chat:{<room>}" (keys_for_room)
    if (channel.size() < 7 || !channel.starts_with("chat:{") || channel.back() != '}') return {};
    return std::string(channel.substr(6, channel.size() - 7));
}

void room_feed::watch(const std::string& room, std::uint64_t after, const std::string& epoch) {
    auto [it, fresh] = rooms_.try_emplace(room);
    ++it->second.watchers;
    if (!fresh) return;
    it->second.delivered = after;
    it->second.epoch = epoch;
    it->second.checked_top = after;
    pubsub_->subscribe(keys_for_room(room).channel);
}

void room_feed::unwatch(const std::string& room) {
    const auto it = rooms_.find(room);
    if (it == rooms_.end() || --it->second.watchers > 0) return;
    rooms_.erase(it);
    pubsub_->unsubscribe(keys_for_room(room).channel);
}

std::uint64_t room_feed::delivered(const std::string& room) const {
    const auto it = rooms_.find(room);
    return it == rooms_.end() ? 0 : it->second.delivered;
}

bool room_feed::in_sync() const {
    if (!pubsub_->is_up()) return false;
    for (const auto& [room, st] : rooms_) {
        if (!pubsub_->is_subscribed(keys_for_room(room).channel)) return false;
    }
    return true;
}

void room_feed::on_subscribed(std::string_view channel) {
    const std::string room = room_of(channel);
    if (!rooms_.contains(room)) return;
    if (pubsub_->connects() > 1) ++stats_.resubscribed;
    // Whatever was published before the subscription took effect is only in the stream.
    read(room);
}

void room_feed::deliver(const std::string& room, room_state& st, std::uint64_t seq, std::string_view body,
                        bool stream) {
    st.delivered = seq;
    ++stats_.delivered;
    if (stream) ++stats_.from_stream;
    if (sink_.message) sink_.message(room, seq, body);
}

void room_feed::drain_early(const std::string& room, room_state& st) {
    while (!st.early.empty()) {
        auto first = st.early.begin();
        if (first->first <= st.delivered) {
            ++stats_.duplicates;
            st.early.erase(first);
            continue;
        }
        if (first->first != st.delivered + 1) return;
        const std::string body = std::move(first->second);
        const auto seq = first->first;
        st.early.erase(first);
        deliver(room, st, seq, body, false);
    }
}

void room_feed::on_message(std::string_view channel, std::string_view payload) {
    const auto m = parse_channel_message(payload);
    if (!m) {
        log_limited(log_level::warn, "room feed: malformed message on {} ignored", channel);
        return;
    }
    const std::string room = room_of(channel);
    const auto it = rooms_.find(room);
    if (it == rooms_.end()) return;
    auto& st = it->second;
    if (st.epoch.empty()) st.epoch = m->epoch;
    if (m->epoch != st.epoch) {
        read(room);  // sees the new epoch and starts over from the stream
        return;
    }
    if (m->seq <= st.delivered) {
        ++stats_.duplicates;
        return;
    }
    if (m->seq == st.delivered + 1) {
        deliver(room, st, m->seq, m->body, false);
        drain_early(room, st);
        return;
    }
    // A hole before this one: hold it (bounded) and read the hole from the stream.
    if (st.early.size() < fo_.max_buffered) st.early.emplace(m->seq, m->body);
    read(room);
}

void room_feed::read(const std::string& room, bool from_start) {
    const auto it = rooms_.find(room);
    if (it == rooms_.end()) return;
    auto& st = it->second;
    if (st.reading) {
        st.read_again = true;
        return;
    }
    st.reading = true;
    ++stats_.reads;
    run(*commands_, since_command(room, from_start ? 0 : st.delivered, fo_.fetch_limit),
        [this, alive = alive_, room, from_start](std::error_code ec, const resp_reply& r) {
            if (!*alive) return;
            const auto found = rooms_.find(room);
            if (found == rooms_.end()) return;
            auto& state = found->second;
            state.reading = false;
            if (!ec) {
                if (const auto s = parse_since_reply(r)) {
                    on_read(room, state, *s, from_start);
                } else {
                    log_limited(log_level::warn, "room feed: unexpected chat_since reply {}", r.describe());
                }
            }
            // A failed read is retried by the next position check or resubscription.
            if (state.read_again && !state.reading) {
                state.read_again = false;
                read(room);
            }
        });
}

void room_feed::on_read(const std::string& room, room_state& st, const room_since& s, bool from_start) {
    if (s.at.epoch.empty()) return;  // no state in Redis (yet): nothing to read
    if (st.epoch.empty()) st.epoch = s.at.epoch;
    if (s.at.epoch != st.epoch) {
        if (!from_start) {
            // The entries were asked for by the old epoch's numbers; read the new epoch's stream.
            st.read_again = false;
            read(room, true);
            return;
        }
        // Redis lost the room: what the old epoch had past `delivered` is gone from Redis.
        const std::uint64_t first = s.entries.empty() ? s.at.seq + 1 : s.entries.front().seq;
        ++stats_.gaps;
        const std::uint64_t from = st.delivered;
        st.epoch = s.at.epoch;
        st.delivered = first - 1;
        st.early.clear();
        if (sink_.gap) sink_.gap(room, from, first - 1, true);
    }
    for (const auto& e : s.entries) {
        if (e.seq <= st.delivered) {
            ++stats_.duplicates;
            continue;
        }
        if (e.seq != st.delivered + 1) {
            // Trimmed out of the stream before this node read it.
            ++stats_.gaps;
            const std::uint64_t from = st.delivered;
            st.delivered = e.seq - 1;
            if (sink_.gap) sink_.gap(room, from, e.seq - 1, false);
        }
        deliver(room, st, e.seq, e.body, true);
    }
    if (s.entries.empty() && s.at.seq > st.delivered) {
        // Redis counts messages its stream no longer has.
        ++stats_.gaps;
        const std::uint64_t from = st.delivered;
        st.delivered = s.at.seq;
        if (sink_.gap) sink_.gap(room, from, s.at.seq, false);
    }
    drain_early(room, st);
    if (s.entries.size() == fo_.fetch_limit && st.delivered < s.at.seq) st.read_again = true;
}

void room_feed::check() {
    owner_.timers().schedule(timer_, owner_.ticks_for(fo_.check_interval));
    // One chat_positions call per batch of rooms, not one call per room: a node with 100,000
    // watched rooms checks them in 400 calls per interval.
    std::vector<std::string> batch;
    auto flush = [&] {
        if (batch.empty()) return;
        ++stats_.checks;
        // Built before the callback takes the batch (argument evaluation order is unspecified).
        const auto args = positions_command(batch);
        run(*commands_, args,
            [this, alive = alive_, rooms = std::move(batch)](std::error_code ec, const resp_reply& r) {
                if (!*alive) return;
                const auto at = ec ? std::nullopt : parse_positions_reply(r, rooms.size());
                for (std::size_t i = 0; i < rooms.size(); ++i) {
                    const auto found = rooms_.find(rooms[i]);
                    if (found == rooms_.end()) continue;
                    found->second.checking = false;
                    if (at) on_position(rooms[i], found->second, (*at)[i]);
                }
            });
        batch = {};
    };
    for (auto& [room, st] : rooms_) {
        if (st.reading || st.checking) continue;
        st.checking = true;
        batch.push_back(room);
        if (batch.size() == fo_.check_batch) flush();
    }
    flush();
}

void room_feed::on_position(const std::string& room, room_state& st, const room_position& at) {
    if (at.epoch.empty()) return;  // no state in Redis: nothing to catch up with
    if (!st.epoch.empty() && at.epoch != st.epoch) {
        read(room);
    } else if (at.seq > st.delivered && st.checked_top > st.delivered) {
        // Messages that existed a whole interval ago are still not here: pub/sub stalled without
        // telling us.
        ++stats_.stalls;
        log_limited(log_level::warn,
                    "room feed: room {} behind Redis ({} < {}) for a check interval; reading the stream", room,
                    st.delivered, at.seq);
        read(room);
    }
    st.checked_top = at.seq;
}

}  // namespace strix::chat
