// strix-example-echo [port]: sends every frame back to its sender, byte for byte.
// Frames are the Echo server shoot-out's: a 4-byte little-endian total length (itself included),
// then the body. Port 0 (the default) takes any free port; the chosen one is printed. Stops on
// SIGINT/SIGTERM.
#include <strix/core/engine.hpp>
#include <strix/net/server.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>

struct echo final : strix::session_handler {
    void on_frame(strix::session& s, std::span<const std::byte> frame) override { s.send(frame); }
};

int main(int argc, char** argv) try {
    const unsigned long port = argc > 1 ? std::stoul(argv[1]) : 0;
    if (port > 65535) throw std::out_of_range("port " + std::to_string(port) + " is not in 0..65535");
    strix::server_config cfg;  // 127.0.0.1, the 4-byte length-prefix framing, default limits
    cfg.port = static_cast<std::uint16_t>(port);
    strix::engine eng;  // one shard per CPU
    strix::server srv(eng, cfg, [](strix::shard&) { return std::make_unique<echo>(); });
    srv.start();
    std::printf("listening on 127.0.0.1:%u\n", srv.port());
    std::fflush(stdout);  // a pipe would otherwise hold the line until exit
    eng.run_until_signal();
} catch (const std::exception& e) {
    std::fprintf(stderr, "strix-example-echo: %s (usage: strix-example-echo [port])\n", e.what());
    return 1;
}
