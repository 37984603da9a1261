// session_group::stop_listening: the listener closes and its port is free when the call returns,
// while the sessions it accepted go on (a messaging socket's unbind ends them later itself).
#include "support/echo_fixture.hpp"
#include "support/loopback.hpp"

#include <strix/core/engine.hpp>
#include <strix/net/endpoint.hpp>
#include <strix/net/session_group.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace {

using namespace strix;
using namespace std::chrono_literals;
using test::echo_handler;

std::string le32_frame(const std::string& body) {
    std::string f(4, '\0');
    const auto n = static_cast<std::uint32_t>(body.size() + 4);
    for (int i = 0; i < 4; ++i) f[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
    return f + body;
}

// Sends one frame on fd and reads its echo back.
bool echoes(int fd, const std::string& body) {
    const std::string f = le32_frame(body);
    if (!test::send_all(fd, f.data(), f.size())) return false;
    std::string back(f.size(), '\0');
    return test::recv_exact(fd, back.data(), back.size()) && back == f;
}

TEST(stop_listening, frees_the_port_at_return_and_keeps_the_accepted_sessions) {
    engine_config c;
    c.shards = 1;
    c.pin_threads = false;
    engine eng(c);
    eng.start();
    echo_handler handler;
    std::unique_ptr<session_group> first, second;
    const endpoint bound = eng.run_on(0, [&] {
        first = std::make_unique<session_group>(eng.at(0), handler);
        return first->listen(endpoint::parse("tcp://127.0.0.1:0"));
    });
    const int client = test::connect_tcp(bound.port);
    ASSERT_GE(client, 0);
    ASSERT_TRUE(echoes(client, "before"));

    eng.run_on(0, [&] { first->stop_listening(); });
    EXPECT_LT(test::connect_tcp(bound.port, 1s), 0) << "nobody listens there any more";
    EXPECT_TRUE(echoes(client, "after")) << "the accepted session goes on";
    EXPECT_EQ(eng.run_on(0, [&] { return first->size(); }), 1u);

    // Another group binds the same port at once.
    const endpoint again = eng.run_on(0, [&] {
        second = std::make_unique<session_group>(eng.at(0), handler);
        return second->listen(bound);
    });
    EXPECT_EQ(again.port, bound.port);
    const int client2 = test::connect_tcp(bound.port);
    ASSERT_GE(client2, 0);
    EXPECT_TRUE(echoes(client2, "second"));

    ::close(client);
    ::close(client2);
    eng.run_on(0, [&] {
        first.reset();
        second.reset();
    });
    eng.stop();
    eng.join();
}

}  // namespace
