#include "apps/chat/cluster/node_registry.hpp"

#include "apps/chat/cluster/room_backplane.hpp"

#include <strix/core/log.hpp>
#include <strix/core/shard.hpp>

#include <charconv>
#include <vector>

namespace strix::chat {

namespace {
constexpr std::string_view nodes_key = "chat:nodes";
std::string node_key(std::uint32_t id) { return "chat:node:" + std::to_string(id); }
}  // namespace

node_registry::node_registry(shard& sh, const redis_options& opts, node_registry_options no, events ev)
    : owner_(sh),
      no_(no),
      ev_(std::move(ev)),
      incarnation_(no_.incarnation.empty() ? new_epoch() : no_.incarnation),
      key_(node_key(no.node_id)),
      redis_(std::make_unique<redis_client>(sh, opts)),
      beat_timer_([this] { beat(); }),
      scan_timer_([this] { scan(); }) {
    redis_->on_connection([this](bool up) {
        if (up && connections_++ > 0) grace_until_ = std::chrono::steady_clock::now() + no_.ttl;
    });
    beat();
    owner_.timers().schedule(scan_timer_, owner_.ticks_for(no_.scan_interval));
}

node_registry::~node_registry() {
    *alive_flag_ = false;
    if (beat_timer_.armed()) owner_.timers().cancel(beat_timer_);
    if (scan_timer_.armed()) owner_.timers().cancel(scan_timer_);
    redis_.reset();
}

void node_registry::beat() {
    owner_.timers().schedule(beat_timer_, owner_.ticks_for(std::max(no_.ttl / 3, std::chrono::milliseconds(1))));
    const std::string ttl = std::to_string(no_.ttl.count());
    // SET ... GET returns what was there: another incarnation under our id after our first beat
    // means a second node runs with this id.
    redis_->command({"SET", key_, incarnation_, "PX", ttl, "GET"},
                    [this, alive = alive_flag_, first = beats_ == 0](std::error_code ec, const resp_reply& r) {
                        if (!*alive || ec) return;
                        if (r.type == resp_reply::kind::nil && !first) {
                            log_limited(log_level::warn, "node {}: heartbeat expired before this beat ({} ms late)",
                                        no_.node_id, no_.ttl.count());
                            if (ev_.lapsed) ev_.lapsed();
                        }
                        if (r.type == resp_reply::kind::string && r.str != incarnation_) {
                            if (first) {
                                log(log_level::info, "node {}: a previous run's heartbeat was still alive",
                                    no_.node_id);
                            } else {
                                ++conflicts_;
                                log_limited(log_level::error,
                                            "node {}: another node heartbeats with this node id; give every node its "
                                            "own --node-id",
                                            no_.node_id);
                            }
                        }
                    });
    // On every beat, not once: a Redis restarted empty must learn the node ids again.
    ++beats_;
    redis_->command({"SADD", nodes_key, std::to_string(no_.node_id)}, [](std::error_code, const resp_reply&) {});
}

void node_registry::scan() {
    owner_.timers().schedule(scan_timer_, owner_.ticks_for(no_.scan_interval));
    if (scanning_) return;
    scanning_ = true;
    redis_->command({"SMEMBERS", nodes_key}, [this, alive = alive_flag_](std::error_code ec, const resp_reply& ids) {
        if (!*alive) return;
        if (ec || ids.type != resp_reply::kind::array || ids.elements.empty()) {
            scanning_ = false;
            return;
        }
        std::vector<std::string> args{"MGET"};
        for (const auto& id : ids.elements) args.push_back("chat:node:" + id.str);
        std::vector<std::string_view> a(args.begin(), args.end());
        redis_->command(a, [this, alive2 = alive_flag_, ids](std::error_code ec2, const resp_reply& values) {
            if (!*alive2) return;
            scanning_ = false;
            if (!ec2) on_scan(ids, values);
        });
    });
}

void node_registry::on_scan(const resp_reply& ids, const resp_reply& values) {
    if (values.type != resp_reply::kind::array || values.elements.size() != ids.elements.size()) return;
    std::map<std::uint32_t, std::string> now;
    for (std::size_t i = 0; i < ids.elements.size(); ++i) {
        const auto& s = ids.elements[i].str;
        std::uint32_t id = 0;
        const auto r = std::from_chars(s.data(), s.data() + s.size(), id);
        if (r.ec != std::errc{} || values.elements[i].type != resp_reply::kind::string) continue;
        now.emplace(id, values.elements[i].str);
    }
    if (std::chrono::steady_clock::now() < grace_until_)
        for (const auto& [id, inc] : alive_) now.try_emplace(id, inc);  // missing, not yet reported down
    // Copy first: a callback may read alive().
    const auto before = std::exchange(alive_, now);
    for (const auto& [id, inc] : before) {
        const auto it = now.find(id);
        if (it == now.end() || it->second != inc) {
            if (ev_.down) ev_.down(id);
        }
    }
    for (const auto& [id, inc] : now) {
        const auto it = before.find(id);
        if (it == before.end() || it->second != inc) {
            if (ev_.up) ev_.up(id);
        }
    }
}

}  // namespace strix::chat
