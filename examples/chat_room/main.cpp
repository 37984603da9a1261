// strix-example-chat-room [port] [shards]: one chat room served by every core.
//
// Wire format, both directions: the Echo server shoot-out's frames, one message per frame.
//
//   +----------------------------+---------------------------------+
//   | u32 little-endian: 4 + n   | n bytes: the message (any bytes) |
//   +----------------------------+---------------------------------+
//
// Every frame a client sends goes, unchanged, to every connected client (the sender too). A client
// that connects first receives the last 100 messages, then the live ones. Every client sees the
// messages in the same order. Port 0 (the default) takes any free port; the chosen one is printed.
//
// How: one `room` per shard (strix::sharded<room>) is that shard's session handler and keeps its
// participants. Shard 0's room also keeps the history, and so decides the order:
//
//   client --frame--> room@k --invoke_on(0)--> room@0: appends to the history (the order)
//                                                 | invoke_on_all, one shared_buffer per message
//                      room@0, room@1, ... <------+
//                      each sends that same buffer to its participants (no copy per client)
//
// Tasks from one shard to another run in the order they were posted, so every shard delivers in
// shard 0's order.
#include <strix/core/engine.hpp>
#include <strix/core/log.hpp>
#include <strix/core/shared_buffer.hpp>
#include <strix/core/sharded.hpp>
#include <strix/net/server.hpp>

#include <cstdio>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr unsigned owner_shard = 0;  // keeps the history and decides the order
constexpr std::size_t history_size = 100;
// A chat line, not a file: with this cap the whole history (100 x 4 KiB) fits the 1 MiB of output
// a session may have queued before the engine drops it as a slow consumer.
constexpr std::uint32_t max_message = 4096;

using history = std::vector<strix::shared_buffer_ptr>;

/// Per-session state: live messages go to a participant only once it has its history.
struct participant {
    bool joined = false;
};

class room final : public strix::session_handler {
public:
    /// `all` is the sharded service this room belongs to: how it reaches the other shards' rooms.
    explicit room(strix::sharded<room>& all) : all_(all) {}

    void on_open(strix::session& s) override {
        s.emplace_state<participant>();
        members_.emplace(s.id(), strix::session_ptr(&s));
        // The owner answers on the same FIFO channel (0 -> this shard) as its later deliveries,
        // so older messages come in the history and newer ones live: each exactly once.
        all_.invoke_on(
            owner_shard, [](room& owner) { return history(owner.history_.begin(), owner.history_.end()); },
            [this, id = s.id()](history h) { join(id, h); });
    }

    void on_frame(strix::session&, std::span<const std::byte> frame) override {
        // The frame lives in the receive buffer only during this call: copy it once, into the
        // buffer every shard and every participant will share.
        strix::shared_buffer_ptr msg = strix::shared_buffer::create(frame.size());
        std::memcpy(msg->data(), frame.data(), frame.size());
        all_.invoke_on(owner_shard, [msg](room& owner) { owner.publish(msg); });
    }

    void on_close(strix::session& s, std::error_code) override { members_.erase(s.id()); }

private:
    // Owner shard: the message takes its place in the order, then goes to every shard.
    void publish(const strix::shared_buffer_ptr& msg) {
        history_.push_back(msg);
        if (history_.size() > history_size) history_.pop_front();
        all_.invoke_on_all([msg](room& r) { r.deliver(msg); });
    }

    void deliver(const strix::shared_buffer_ptr& msg) {
        for (auto it = members_.begin(); it != members_.end();) {
            // send() may drop a slow consumer on the spot, and on_close then erases it from
            // members_: step past it (and keep it alive) before sending.
            strix::session_ptr s = (it++)->second;
            if (s->state<participant>()->joined) s->send(msg);
        }
    }

    void join(std::uint64_t id, const history& h) {
        auto it = members_.find(id);
        if (it == members_.end()) return;  // left while the history was on its way
        strix::session_ptr s = it->second;
        s->state<participant>()->joined = true;
        for (const auto& m : h) s->send(m);
        strix::log(strix::log_level::info, "chat-room: {} joined on shard {} ({} here)", s->peer(), s->owner().id(),
                   members_.size());
    }

    strix::sharded<room>& all_;
    std::unordered_map<std::uint64_t, strix::session_ptr> members_;  // this shard's, by session id
    std::deque<strix::shared_buffer_ptr> history_;                    // owner shard only, oldest first
};

/// argv[i] as a number up to `max`, or `fallback` when absent. Throws on anything else.
unsigned long number_arg(int argc, char** argv, int i, unsigned long fallback, unsigned long max) {
    if (argc <= i) return fallback;
    const unsigned long v = std::stoul(argv[i]);
    if (v > max) throw std::out_of_range(std::string(argv[i]) + " is above " + std::to_string(max));
    return v;
}

}  // namespace

int main(int argc, char** argv) try {
    strix::engine_config ecfg;
    ecfg.shards = static_cast<unsigned>(number_arg(argc, argv, 2, 0, 1024));  // 0 = one per CPU
    strix::engine eng(ecfg);
    // Each room needs the service it is part of, so the factory refers to `rooms` itself.
    strix::sharded<room> rooms(eng, [&rooms](strix::shard&) { return std::make_unique<room>(rooms); });

    strix::server_config cfg;
    cfg.port = static_cast<std::uint16_t>(number_arg(argc, argv, 1, 0, 65535));
    cfg.limits.max_frame = 4 + max_message;
    strix::server srv(eng, cfg, rooms);
    srv.start();
    std::printf("listening on 127.0.0.1:%u with %u shards\n", srv.port(), eng.shard_count());
    std::fflush(stdout);  // a pipe would otherwise hold the line until exit
    eng.run_until_signal();
} catch (const std::exception& e) {
    std::fprintf(stderr, "strix-example-chat-room: %s (usage: strix-example-chat-room [port] [shards])\n", e.what());
    return 1;
}
