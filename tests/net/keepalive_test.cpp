// TCP keepalive on sessions: server_config::keepalive on accepted sockets, connect_options on
// outbound ones, checked in /proc/net/tcp (the socket's keepalive timer and when it is due).
#include "support/echo_fixture.hpp"
#include "support/loopback.hpp"
#include "support/proc_tcp.hpp"

#include <strix/net/connection.hpp>
#include <strix/net/session_group.hpp>

#include <gtest/gtest.h>

namespace {

using namespace strix;
using namespace std::chrono_literals;

TEST(keepalive, accepted_sockets_get_the_servers_keepalive_and_others_keep_the_systems) {
    server_config cfg;
    cfg.keepalive = {.enable = 1, .idle_s = 77, .interval_s = 5, .count = 3};
    test::server_fixture with(cfg);
    test::server_fixture without;
    int a = test::connect_tcp(with.srv.port());
    int b = test::connect_tcp(without.srv.port());
    ASSERT_GE(a, 0);
    ASSERT_GE(b, 0);
    ASSERT_TRUE(test::eventually([&] { return with.srv.stats().accepted == 1 && without.srv.stats().accepted == 1; }));
    // The server's end of each connection: local port = the server's, remote = the client's.
    std::optional<test::tcp_timer> ta, tb;
    ASSERT_TRUE(test::eventually([&] {
        ta = test::proc_tcp_timer(with.srv.port(), test::local_port_of(a));
        return ta && ta->kind == 2;
    })) << "keepalive timer armed on the accepted socket";
    EXPECT_GT(ta->due_s, 60);
    EXPECT_LE(ta->due_s, 77.01);
    tb = test::proc_tcp_timer(without.srv.port(), test::local_port_of(b));
    ASSERT_TRUE(tb);
    EXPECT_EQ(tb->kind, 0) << "no keepalive unless asked";
    ::close(a);
    ::close(b);
}

TEST(keepalive, an_outbound_connection_gets_its_connect_options_keepalive) {
    test::server_fixture fx;
    test::echo_handler h;
    auto group = std::make_unique<session_group>(fx.eng.at(0), h);
    connect_options o;
    o.keepalive = {.enable = 1, .idle_s = 55};
    connection_ptr c;
    test::on_shard(fx.eng, 0, [&] { c = group->connect(endpoint::tcp("127.0.0.1", fx.srv.port()), o); });
    ASSERT_TRUE(test::eventually([&] { return fx.srv.stats().accepted == 1; }));
    // The client's end: remote port = the server's. Find its local port among the entries.
    std::optional<test::tcp_timer> t;
    ASSERT_TRUE(test::eventually([&] {
        std::ifstream f("/proc/net/tcp");
        std::string line;
        std::getline(f, line);
        while (std::getline(f, line)) {
            std::istringstream in(line);
            std::string sl, loc, rem, st;
            in >> sl >> loc >> rem >> st;
            auto port = [](const std::string& x) {
                return static_cast<std::uint16_t>(std::stoul(x.substr(x.find(':') + 1), nullptr, 16));
            };
            // Established only (state 01): a TIME_WAIT entry left by an earlier test whose server
            // had the same port would otherwise be taken for ours (seen once in a full make test).
            if (st == "01" && port(rem) == fx.srv.port()) t = test::proc_tcp_timer(port(loc), fx.srv.port());
        }
        return t && t->kind == 2;
    }));
    EXPECT_GT(t->due_s, 40);
    EXPECT_LE(t->due_s, 55.01);
    test::on_shard(fx.eng, 0, [&] {
        c->close();
        c.reset();
        group.reset();
    });
}

}  // namespace
