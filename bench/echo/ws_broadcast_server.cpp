// strix-ws-broadcast-server: the strix side of the WebSocket echo shoot-out's broadcast test
// (`scripts/bench-echo.sh <build_dir> ws`). Every text or binary message from any client goes to
// every connected client, the sender included, with its opcode.
//
// The way a strix application broadcasts: each shard keeps its own WebSocket sessions in a hub
// (a sharded<hub>, so no locks); a message is encoded once into a shared buffer (ws_encode:
// header + payload), handed to the sender's shard's members directly and to every other shard
// through the mesh (sharded::invoke_on_all, FIFO per pair of shards, so each sender's messages
// reach every receiver in order). Each member's send() only queues the shared buffer; the
// turn's gather write sends it.
//
//   strix-ws-broadcast-server [--port P] [--shards N] [--io auto|uring|epoll] [--max-queued B]
//
// Prints "listening on ..." when it accepts; stops on SIGTERM or SIGINT. A client whose queued
// output passes --max-queued (a slow consumer) is dropped, as strix drops one anywhere.
#include <strix/core/engine.hpp>
#include <strix/core/format.hpp>
#include <strix/core/sharded.hpp>
#include <strix/net/server.hpp>
#include <strix/net/websocket.hpp>
#include <strix/net/ws_protocol.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

namespace {

// One shard's WebSocket members. Used on its own shard only.
struct hub : strix::sharded_peers<hub> {
    std::vector<strix::session*> members;

    void deliver(const strix::shared_buffer_ptr& frame) {
        for (strix::session* s : members) s->send(frame);
    }
};

class broadcaster final : public strix::ws_handler {
public:
    explicit broadcaster(hub& local) : local_(local) {}

    void on_open(strix::session& s) override { local_.members.push_back(&s); }

    void on_close(strix::session& s, std::error_code) override {
        auto& m = local_.members;
        m.erase(std::remove(m.begin(), m.end(), &s), m.end());
    }

    void on_message(strix::session&, strix::ws_opcode op, std::span<const std::byte> payload) override {
        // Encoded once; every shard's members send the same buffer.
        local_.container().invoke_on_all([frame = strix::ws_encode(op, payload)](hub& h) { h.deliver(frame); });
    }

private:
    hub& local_;
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"strix-ws-broadcast-server: every WebSocket message to every client (the broadcast test of "
                 "the WebSocket echo shoot-out)"};
    strix::engine_config ecfg;
    strix::server_config scfg;
    scfg.port = 7001;
    std::string io = "auto";
    std::size_t max_queued = 16u << 20;
    app.add_option("--host", scfg.host, "address to listen on")->capture_default_str();
    app.add_option("--port", scfg.port, "TCP port (0 = any free port)")->capture_default_str();
    app.add_option("--shards", ecfg.shards, "shards (threads); 0 = one per online CPU")->capture_default_str();
    app.add_option("--io", io, "I/O backend: auto, uring or epoll")
        ->check(CLI::IsMember({"auto", "epoll", "uring"}))
        ->capture_default_str();
    app.add_option("--max-queued", max_queued, "queued output that disconnects a slow consumer, bytes")
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    ecfg.io = io == "uring"   ? strix::io_backend::uring
              : io == "epoll" ? strix::io_backend::epoll
                              : strix::io_backend::automatic;
    try {
        strix::engine eng(ecfg);
        strix::ws_options wo;
        wo.path.clear();  // any path
        wo.apply(scfg);
        // A broadcast queues every sender's messages on every member: allow more than an echo's.
        scfg.limits.max_queued = std::max(scfg.limits.max_queued, max_queued);
        strix::sharded<hub> hubs(eng, [](strix::shard&) { return std::make_unique<hub>(); });
        strix::server srv(eng, scfg, [&](strix::shard& sh) -> std::unique_ptr<strix::session_handler> {
            return std::make_unique<strix::ws_protocol>(std::make_unique<broadcaster>(hubs.on(sh.id())), wo);
        });
        srv.start();
        strix::print(stdout, "strix-ws-broadcast-server: listening on {}:{} with {} shards ({})\n", scfg.host,
                     srv.port(), eng.shard_count(), eng.io_name());
        std::fflush(stdout);
        eng.run_until_signal();
        auto st = srv.stats();
        strix::print(stdout,
                     "strix-ws-broadcast-server: stopped; {} connections, {} messages in, {} bytes out, "
                     "{} slow consumers\n",
                     st.accepted.value(), st.ws_messages_in.value(), st.bytes_out.value(), st.slow_consumers.value());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "strix-ws-broadcast-server: %s\n", e.what());
        return 1;
    }
    return 0;
}
