// strix::link's ZMTP 3.x on the wire, checked byte by byte from a plain socket playing the peer:
// the greeting and READY (sent once the peer's greeting arrived), frame size encodings, LONG
// frames of any size accepted, PING/PONG and strix's own heartbeat and TTL handling, and
// subscriptions as commands to ZMTP 3.1 peers and as messages to ZMTP 3.0 peers (both accepted).
#include "link/interop_support.hpp"
#include "link/raw_zmtp.hpp"

#include <strix/core/unique_fd.hpp>
#include <strix/link/socket.hpp>

#include <gtest/gtest.h>

namespace {

using namespace strix;
using namespace strix::test;
using namespace strix::test::raw;
using link::link_errc;
using link::socket_type;
using kind = link::socket_event::kind;
using strs = std::vector<std::string>;
using namespace std::chrono_literals;

class wire : public ::testing::Test {
protected:
    link_env env;

    // A socket on shard 0 bound to tcp; its address.
    std::string bound(link::socket& s) {
        return env.on(0, [&] { return s.bind("tcp://127.0.0.1:*"); });
    }
    // True if nothing arrives on fd within `quiet`.
    static bool quiet(int fd, std::chrono::milliseconds within) {
        pollfd p{fd, POLLIN, 0};
        return ::poll(&p, 1, static_cast<int>(within.count())) == 0;
    }
};

TEST_F(wire, greeting_then_ready_only_after_the_peers_greeting) {
    auto& pull = env.make(0, socket_type::pull);
    client c(bound(pull));
    auto g = read_greeting(c.fd());
    ASSERT_TRUE(g);
    bytes want = greeting(3, 1, "NULL");
    EXPECT_EQ(*g, want) << "0xFF, padding ending in 1, 0x7F, version 3.1, NULL, as-server 0, zero filler";
    EXPECT_TRUE(quiet(c.fd(), 100ms)) << "READY before our greeting";
    ASSERT_TRUE(c.send(greeting()));
    auto f = read_frame(c.fd());
    ASSERT_TRUE(f);
    EXPECT_EQ(f->flags, command_flag);
    EXPECT_EQ(f->name(), "READY");
    EXPECT_EQ(ready_property(f->data(), "Socket-Type"), "PULL");
    EXPECT_EQ(f->data(), property("Socket-Type", "PULL")) << "a PULL announces no Identity";
}

TEST_F(wire, any_3_x_or_later_greeting_is_accepted_and_padding_and_filler_are_ignored) {
    inbox& got = env.new_inbox();
    auto& pull = env.make(0, socket_type::pull, {}, &got);
    const std::string a = bound(pull);
    struct variant {
        std::uint8_t major, minor;
        bool noise;
    };
    for (const variant v : {variant{3, 0, false}, variant{3, 7, true}, variant{4, 2, true}}) {
        client c(a);
        bytes g = greeting(v.major, v.minor);
        if (v.noise) {
            for (std::size_t i = 1; i < 9; ++i) g[i] = std::byte{0xa5};      // signature padding
            g[32] = std::byte{1};                                             // as-server
            for (std::size_t i = 33; i < 64; ++i) g[i] = std::byte{0x5a};    // filler
        }
        ASSERT_TRUE(c.send(g + ready("PUSH")));
        ASSERT_TRUE(read_greeting(c.fd()));
        auto r = read_frame(c.fd());
        ASSERT_TRUE(r && r->name() == "READY") << int(v.major) << "." << int(v.minor);
        ASSERT_TRUE(c.send(frame(0, "v" + std::to_string(v.major) + "." + std::to_string(v.minor))));
        EXPECT_EQ(got.pop(), strs{"v" + std::to_string(v.major) + "." + std::to_string(v.minor)});
    }
    EXPECT_EQ(env.on(0, [&] { return pull.stats().handshake_failures; }), 0u);
}

TEST_F(wire, dealer_announces_its_routing_id) {
    link::socket_options o;
    o.routing_id = std::string("id\0x", 4);
    auto& dealer = env.make(0, socket_type::dealer, o);
    client c(bound(dealer));
    auto r = c.handshake("ROUTER");
    ASSERT_TRUE(r);
    EXPECT_EQ(ready_property(*r, "Socket-Type"), "DEALER");
    EXPECT_EQ(ready_property(*r, "Identity"), std::string("id\0x", 4));
}

TEST_F(wire, strix_uses_the_short_size_up_to_255_and_the_long_one_above) {
    auto& push = env.make(0, socket_type::push);
    client c(bound(push));
    ASSERT_TRUE(c.handshake("PULL"));
    ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return push.peers(); }) == 1; }));
    ASSERT_FALSE(env.send(push, {""}));
    ASSERT_FALSE(env.send(push, {std::string(255, 'a')}));
    ASSERT_FALSE(env.send(push, {std::string(256, 'b')}));
    ASSERT_FALSE(env.send(push, {"x", std::string(300, 'c'), ""}));
    const bytes expected = header(0, 0) + frame(0, std::string(255, 'a')) + frame(0, std::string(256, 'b')) +
                           frame(more, "x") + frame(more, std::string(300, 'c')) + frame(0, "");
    // Exactly: 00 00 | 00 ff a... | 02 00..01 00 b... | 01 01 x | 03 00..01 2c c... | 00 00
    bytes got(expected.size());
    ASSERT_TRUE(recv_exact(c.fd(), got.data(), got.size()));
    EXPECT_EQ(got, expected);
    EXPECT_EQ(got[2], std::byte{0x00});
    EXPECT_EQ(got[3], std::byte{0xff});
    EXPECT_EQ(got[2 + 2 + 255], std::byte{0x02}) << "256 bytes take the 8-byte size";
}

TEST_F(wire, long_frames_of_any_size_and_empty_parts_are_accepted) {
    inbox& got = env.new_inbox();
    auto& pull = env.make(0, socket_type::pull, {}, &got);
    client c(bound(pull));
    ASSERT_TRUE(c.handshake("PUSH"));
    ASSERT_TRUE(c.send(frame(0, "five!", true)));  // LONG for 5 bytes
    ASSERT_TRUE(c.send(frame(0, "", true)));       // LONG for 0 bytes
    ASSERT_TRUE(
        c.send(frame(more, "a") + frame(more, "", true) + frame(more, std::string(256, 'z')) + frame(0, "end", true)));
    EXPECT_EQ(got.pop(), strs{"five!"});
    EXPECT_EQ(got.pop(), strs{""});
    EXPECT_EQ(got.pop(), (strs{"a", "", std::string(256, 'z'), "end"}));
}

TEST_F(wire, ping_gets_a_pong_with_the_same_context) {
    auto& pull = env.make(0, socket_type::pull);
    client c(bound(pull));
    ASSERT_TRUE(c.handshake("PUSH"));
    const std::string ctx = "sixteen bytes!!!";
    ASSERT_TRUE(c.send(command("PING", std::string("\0\0", 2) + ctx)));
    auto f = read_frame(c.fd());
    ASSERT_TRUE(f);
    EXPECT_EQ(f->name(), "PONG");
    EXPECT_EQ(f->data(), ctx);
    ASSERT_TRUE(c.send(command("PING", std::string("\0\0", 2))));  // no context
    f = read_frame(c.fd());
    ASSERT_TRUE(f);
    EXPECT_EQ(f->name(), "PONG");
    EXPECT_EQ(f->data(), "");
}

TEST_F(wire, strix_pings_with_its_ttl_and_drops_a_peer_that_never_answers) {
    event_log& log = env.new_log();
    link::socket_options o;
    o.heartbeat_ivl = 100ms;
    o.heartbeat_timeout = 300ms;
    o.heartbeat_ttl = 2500ms;
    auto& pull = env.make(0, socket_type::pull, o, nullptr, &log);
    client c(bound(pull));
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(c.handshake("PUSH"));
    auto f = read_frame(c.fd());
    ASSERT_TRUE(f);
    EXPECT_EQ(f->name(), "PING");
    ASSERT_GE(f->data().size(), 2u);
    EXPECT_EQ(f->data().substr(0, 2), std::string("\0\x19", 2)) << "TTL in tenths of a second: 25";
    // We never answer: strix gives up after its timeout.
    EXPECT_TRUE(wait_closed(c.fd(), 3s));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    ASSERT_TRUE(log.saw(kind::disconnected));
    EXPECT_EQ(log.count(kind::disconnected), 1u) << describe(log);
    for (auto& e : log.all())
        if (e.what == kind::disconnected) {
            EXPECT_EQ(e.error, link_errc::heartbeat_timeout);
        }
}

TEST_F(wire, strix_answers_pings_and_is_kept_up_by_pongs) {
    event_log& log = env.new_log();
    link::socket_options o;
    o.heartbeat_ivl = 100ms;
    o.heartbeat_timeout = 400ms;
    auto& pull = env.make(0, socket_type::pull, o, nullptr, &log);
    client c(bound(pull));
    ASSERT_TRUE(c.handshake("PUSH"));
    // Answer strix's PINGs for 1.2 s (3 timeouts): it keeps the connection.
    int pings = 0;
    const auto end = std::chrono::steady_clock::now() + 1200ms;
    while (std::chrono::steady_clock::now() < end) {
        auto f = read_frame(c.fd());
        ASSERT_TRUE(f) << "closed after " << pings << " pings\n" << describe(log);
        if (f->name() != "PING") continue;
        ++pings;
        ASSERT_TRUE(c.send(command("PONG", f->data().substr(2))));
    }
    EXPECT_GE(pings, 5);
    EXPECT_EQ(log.count(kind::disconnected), 0u) << describe(log);
}

TEST_F(wire, a_peers_ttl_closes_the_connection_when_the_peer_falls_silent) {
    event_log& log = env.new_log();
    auto& pull = env.make(0, socket_type::pull, {}, nullptr, &log);
    client c(bound(pull));
    ASSERT_TRUE(c.handshake("PUSH"));
    ASSERT_TRUE(c.send(command("PING", std::string("\0\x03", 2))));  // "drop me after 300 ms of silence"
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(wait_closed(c.fd(), 3s));
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(took, 250ms);
    EXPECT_LT(took, 2s);
    ASSERT_TRUE(log.saw(kind::disconnected));
    EXPECT_EQ(log.all().back().error, link_errc::heartbeat_timeout);
}

// --- subscriptions on the wire ----------------------------------------------------------------

class wire_subscriptions : public wire, public ::testing::WithParamInterface<int> {};  // the peer's minor version

TEST_P(wire_subscriptions, a_subscriber_peer_may_subscribe_with_a_command_or_a_message) {
    event_log& log = env.new_log();
    auto& pub = env.make(0, socket_type::pub, {}, nullptr, &log);
    client c(bound(pub));
    ASSERT_TRUE(c.send(greeting(3, static_cast<std::uint8_t>(GetParam())) + ready("SUB")));
    ASSERT_TRUE(read_greeting(c.fd()));
    ASSERT_TRUE(read_frame(c.fd()));  // READY
    // Both forms are accepted from either version (libzmq 4.3 sends either).
    ASSERT_TRUE(c.send(frame(0, "\x01news.")));
    ASSERT_TRUE(c.send(command("SUBSCRIBE", "sport.")));
    ASSERT_TRUE(eventually([&] { return log.count(kind::subscribed) == 2; })) << describe(log);
    ASSERT_FALSE(env.send(pub, {"weather.1"}));
    ASSERT_FALSE(env.send(pub, {"news.1", "x"}));
    ASSERT_FALSE(env.send(pub, {"sport.1"}));
    auto f = read_frame(c.fd());
    ASSERT_TRUE(f);
    EXPECT_EQ(f->flags, more);
    EXPECT_EQ(f->body, "news.1");
    f = read_frame(c.fd());
    ASSERT_TRUE(f);
    EXPECT_EQ(f->body, "x");
    f = read_frame(c.fd());
    ASSERT_TRUE(f);
    EXPECT_EQ(f->body, "sport.1");
    ASSERT_TRUE(c.send(command("CANCEL", "sport.")));
    ASSERT_TRUE(c.send(frame(0, std::string("\0news.", 6))));
    ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return pub.subscribers(); }) == 0; }));
    ASSERT_FALSE(env.send(pub, {"news.2"}));
    EXPECT_TRUE(quiet(c.fd(), 100ms));
}

TEST_P(wire_subscriptions, strix_sub_sends_commands_to_3_1_and_messages_to_3_0) {
    // A listening plain socket plays the publisher; strix's SUB connects to it.
    unique_fd ls(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(ls.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(ls.get(), 4), 0);
    const std::uint16_t port = local_port_of(ls.get());
    inbox& got = env.new_inbox();
    auto& sub = env.make(1, socket_type::sub, {}, &got);
    env.on(1, [&] {
        sub.subscribe("a.");
        sub.connect("tcp://127.0.0.1:" + std::to_string(port));
    });
    pollfd p{ls.get(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1);
    unique_fd fd(::accept(ls.get(), nullptr, nullptr));
    set_timeouts(fd.get(), 5s);
    const bool v31 = GetParam() == 1;
    ASSERT_TRUE(send_all(fd.get(), greeting(3, static_cast<std::uint8_t>(GetParam())) + ready("PUB")));
    ASSERT_TRUE(read_greeting(fd.get()));
    auto r = read_frame(fd.get());
    ASSERT_TRUE(r);
    EXPECT_EQ(ready_property(r->data(), "Socket-Type"), "SUB");
    auto expect_sub = [&](bool on, const std::string& topic) {
        auto f = read_frame(fd.get());
        ASSERT_TRUE(f);
        if (v31) {
            EXPECT_EQ(f->flags, command_flag);
            EXPECT_EQ(f->name(), on ? "SUBSCRIBE" : "CANCEL");
            EXPECT_EQ(f->data(), topic);
        } else {
            EXPECT_EQ(f->flags, 0);
            EXPECT_EQ(f->body, std::string(1, on ? '\x01' : '\x00') + topic);
        }
    };
    expect_sub(true, "a.");  // made before the connection, sent when it attached
    env.on(1, [&] {
        sub.subscribe("b.");
        sub.unsubscribe("a.");
    });
    expect_sub(true, "b.");
    expect_sub(false, "a.");
    // What the publisher sends is filtered by strix too.
    ASSERT_TRUE(send_all(fd.get(), frame(0, "a.1") + frame(0, "b.1")));
    EXPECT_EQ(got.pop(), strs{"b.1"});
    EXPECT_TRUE(got.stays_empty(100ms));
}

INSTANTIATE_TEST_SUITE_P(zmtp, wire_subscriptions, ::testing::Values(0, 1),
                         [](const auto& p) { return p.param ? std::string("zmtp31") : std::string("zmtp30"); });

}  // namespace
