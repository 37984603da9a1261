#pragma once
// An in-process engine + server on an ephemeral loopback port, for tests through the public API.

#include <strix/core/engine.hpp>
#include <strix/net/server.hpp>

#include "support/loopback.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>

namespace strix::test {

/// Echoes every frame back with one send() per frame.
class echo_handler : public session_handler {
public:
    void on_frame(session& s, std::span<const std::byte> frame) override { s.send(frame); }
};

struct server_fixture {
    explicit server_fixture(server_config cfg = {}, server::handler_factory make = {}, unsigned shards = 2,
                            engine_config ecfg = {})
        : eng(with_shards(ecfg, shards)),
          srv(eng, std::move(cfg),
              make ? make : server::handler_factory([](shard&) { return std::make_unique<echo_handler>(); })) {
        srv.start();
        eng.start();
    }

    static engine_config with_shards(engine_config c, unsigned n) {
        c.shards = n;
        c.pin_threads = false;  // tests share the machine with other tests
        return c;
    }

    engine eng;
    server srv;
};

/// Runs f on shard i of a running engine and waits for it (a test assertion if it never runs).
template <class F>
void on_shard(engine& eng, unsigned i, F f) {
    std::atomic<bool> done{false};
    eng.post(i, [&] {
        f();
        done = true;
    });
    ASSERT_TRUE(eventually([&] { return done.load(); }));
}

}  // namespace strix::test
