// Outbound connections: session_group::connect over TCP and Unix sockets, failures, the connect
// timeout, reconnect with backoff (to a server that starts late, and after the server drops the
// session), and close() stopping it all. The server side is an ordinary strix::server.
#include "support/echo_fixture.hpp"
#include "support/loopback.hpp"

#include <strix/net/connection.hpp>
#include <strix/net/endpoint.hpp>
#include <strix/net/net_errc.hpp>
#include <strix/net/session_group.hpp>

#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

using namespace strix;
using namespace std::chrono_literals;

// Records what a client group's handler hears; the test thread reads it under the mutex.
class recording_client : public session_handler {
public:
    void on_open(session& s) override {
        std::lock_guard lk(mu);
        ++opens;
        had_origin = s.origin() != nullptr;
        if (!send_on_open.empty()) s.send(std::as_bytes(std::span(send_on_open)));
    }
    void on_frame(session&, std::span<const std::byte> f) override {
        std::lock_guard lk(mu);
        frames.emplace_back(reinterpret_cast<const char*>(f.data()), f.size());
    }
    void on_close(session&, std::error_code ec) override {
        std::lock_guard lk(mu);
        ++closes;
        last_close = ec;
    }
    void on_connect_failed(connection&, std::error_code ec) override {
        std::lock_guard lk(mu);
        failures.push_back(ec);
    }

    template <class F>
    auto read(F&& f) {
        std::lock_guard lk(mu);
        return f();
    }

    std::mutex mu;
    int opens = 0, closes = 0;
    bool had_origin = false;
    std::string send_on_open;
    std::vector<std::string> frames;
    std::vector<std::error_code> failures;
    std::error_code last_close;
};

std::string le32_frame(const std::string& body) {
    std::string f(4, '\0');
    const auto n = static_cast<std::uint32_t>(body.size() + 4);
    for (int i = 0; i < 4; ++i) f[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
    return f + body;
}

engine_config two_shards() {
    engine_config c;
    c.shards = 2;
    c.pin_threads = false;
    c.tick = 5ms;
    return c;
}

TEST(connect, a_tcp_connection_opens_a_session_that_talks_to_a_server) {
    test::server_fixture fx;
    recording_client h;
    h.send_on_open = le32_frame("hello over connect");
    auto group = std::make_unique<session_group>(fx.eng.at(1), h);
    session_group& client = *group;
    connection_ptr c;
    test::on_shard(fx.eng, 1, [&] { c = client.connect(endpoint::tcp("127.0.0.1", fx.srv.port())); });
    ASSERT_TRUE(test::eventually([&] { return h.read([&] { return h.frames.size() == 1; }); }));
    EXPECT_EQ(h.read([&] { return h.frames[0]; }), le32_frame("hello over connect"));
    EXPECT_TRUE(h.read([&] { return h.had_origin; }));
    test::on_shard(fx.eng, 1, [&] {
        EXPECT_EQ(c->state(), connection::status::open);
        ASSERT_NE(c->current(), nullptr);
        EXPECT_EQ(c->current()->origin(), c.get());
        EXPECT_EQ(client.counters().connected.value(), 1u);
        c->close();
        EXPECT_EQ(c->state(), connection::status::closed);
    });
    ASSERT_TRUE(test::eventually([&] { return h.read([&] { return h.closes == 1; }); }));
    test::on_shard(fx.eng, 1, [&] {
        c.reset();
        group.reset();  // a group belongs to its shard while the engine runs
    });
}

TEST(connect, a_unix_socket_connection_works_the_same_way) {
    test::temp_dir dir;
    const std::string path = dir.path() + "/s.sock";
    server_config cfg;
    cfg.tcp = false;
    cfg.unix_path = path;
    test::server_fixture fx(cfg);
    recording_client h;
    h.send_on_open = le32_frame("over a unix socket");
    auto client = std::make_unique<session_group>(fx.eng.at(0), h);
    test::on_shard(fx.eng, 0, [&] { client->connect(endpoint::parse("ipc://" + path)); });
    ASSERT_TRUE(test::eventually([&] { return h.read([&] { return h.frames.size() == 1; }); }));
    EXPECT_EQ(h.read([&] { return h.frames[0]; }), le32_frame("over a unix socket"));
    test::on_shard(fx.eng, 0, [&] { client.reset(); });
    EXPECT_EQ(h.read([&] { return h.closes; }), 1) << "destroying a group closes its sessions";
}

TEST(connect, a_refused_connection_is_reported_once_without_reconnect) {
    engine eng(two_shards());
    recording_client h;
    session_group client(eng.at(0), h);
    const std::uint16_t port = test::free_port();  // nothing listens there
    connection_ptr c = client.connect(endpoint::tcp("127.0.0.1", port));  // before the engine starts: allowed
    eng.start();
    ASSERT_TRUE(test::eventually([&] { return h.read([&] { return h.failures.size() == 1; }); }));
    EXPECT_EQ(h.read([&] { return h.failures[0]; }), std::make_error_code(std::errc::connection_refused));
    std::this_thread::sleep_for(200ms);
    EXPECT_EQ(h.read([&] { return h.failures.size(); }), 1u) << "no reconnect was asked for";
    test::on_shard(eng, 0, [&] {
        EXPECT_EQ(c->state(), connection::status::closed);
        EXPECT_EQ(c->failures(), 1u);
        EXPECT_EQ(client.counters().connect_failures.value(), 1u);
        c.reset();
    });
    eng.stop();
    eng.join();
}

TEST(connect, reconnect_backs_off_until_a_late_server_starts_then_connects) {
    engine eng(two_shards());
    recording_client h;
    h.send_on_open = le32_frame("finally");
    session_group client(eng.at(1), h);
    const std::uint16_t port = test::free_port();
    connect_options o;
    o.reconnect = true;
    o.reconnect_initial = 20ms;
    o.reconnect_max = 80ms;
    connection_ptr c = client.connect(endpoint::tcp("127.0.0.1", port), o);
    eng.start();
    // Doubling from 20 ms to a cap of 80 ms: 20 + 40 + 80 + 80 ... so at least 3 failures in 300 ms
    // and far fewer than the 15 a fixed 20 ms delay would give.
    std::this_thread::sleep_for(400ms);
    const auto failed = h.read([&] { return h.failures.size(); });
    EXPECT_GE(failed, 3u);
    EXPECT_LE(failed, 9u) << "the delay should double up to reconnect_max";
    server_config cfg;
    cfg.port = port;
    server srv(eng, cfg, [](shard&) { return std::make_unique<test::echo_handler>(); });
    srv.start();
    ASSERT_TRUE(test::eventually([&] { return h.read([&] { return h.frames.size() == 1; }); }));
    EXPECT_EQ(h.read([&] { return h.opens; }), 1);
    test::on_shard(eng, 1, [&] {
        EXPECT_EQ(c->failures(), 0u) << "a successful connect resets the count";
        c->close();
        c.reset();
    });
    eng.stop();
    eng.join();
}

// A server that hangs up on every new session at once.
class hang_up : public session_handler {
public:
    void on_open(session& s) override {
        ++opened;
        s.close(net_errc::closed_by_app);
    }
    void on_frame(session&, std::span<const std::byte>) override {}
    std::atomic<int> opened{0};
};

TEST(connect, reconnect_follows_a_dropped_session_and_close_stops_it) {
    engine eng(two_shards());
    std::vector<hang_up*> servers;
    server srv(eng, {}, [&](shard&) {
        auto p = std::make_unique<hang_up>();
        servers.push_back(p.get());
        return p;
    });
    srv.start();
    recording_client h;
    session_group client(eng.at(0), h);
    connect_options o;
    o.reconnect = true;
    o.reconnect_initial = 10ms;
    o.reconnect_max = 10ms;
    connection_ptr c = client.connect(endpoint::tcp("127.0.0.1", srv.port()), o);
    eng.start();
    ASSERT_TRUE(test::eventually([&] { return h.read([&] { return h.opens >= 3 && h.closes >= 3; }); }))
        << "each drop is followed by a new connection";
    test::on_shard(eng, 0, [&] { c->close(); });
    const int opens = h.read([&] { return h.opens; });
    std::this_thread::sleep_for(150ms);
    EXPECT_EQ(h.read([&] { return h.opens; }), opens) << "close() stops reconnecting";
    test::on_shard(eng, 0, [&] { c.reset(); });
    eng.stop();
    eng.join();
}

TEST(connect, an_attempt_that_hangs_times_out) {
    // A listener whose accept queue is full and never drained: the kernel drops further SYNs, so
    // a connect stays pending until our timeout.
    const int l = test::listen_loopback(0);
    ASSERT_GE(l, 0);
    const std::uint16_t port = test::local_port_of(l);
    std::vector<int> fillers;
    for (int i = 0; i < 4; ++i) {  // the queue holds backlog + 1; fill it to be sure
        int f = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        sockaddr_in t{};
        t.sin_family = AF_INET;
        t.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        t.sin_port = htons(port);
        ::connect(f, reinterpret_cast<sockaddr*>(&t), sizeof t);
        fillers.push_back(f);
    }
    std::this_thread::sleep_for(50ms);

    engine eng(two_shards());
    recording_client h;
    session_group client(eng.at(0), h);
    connect_options o;
    o.timeout = 150ms;
    connection_ptr c = client.connect(endpoint::tcp("127.0.0.1", port), o);
    const auto t0 = std::chrono::steady_clock::now();
    eng.start();
    ASSERT_TRUE(test::eventually([&] { return h.read([&] { return !h.failures.empty(); }); }));
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(h.read([&] { return h.failures[0]; }), std::make_error_code(std::errc::timed_out));
    EXPECT_GE(took, 140ms);
    EXPECT_LT(took, 2s);
    test::on_shard(eng, 0, [&] { c.reset(); });
    eng.stop();
    eng.join();
    for (int f : fillers) ::close(f);
    ::close(l);
}

TEST(connect, endpoints_that_cannot_be_connected_to_are_refused_at_once) {
    engine eng(two_shards());
    recording_client h;
    session_group client(eng.at(0), h);
    EXPECT_THROW(client.connect(endpoint::parse("tcp://127.0.0.1:*")), std::invalid_argument);
    EXPECT_THROW(client.connect(endpoint::parse("tcp://*:7000")), std::invalid_argument);
}

TEST(endpoint, parses_the_documented_forms) {
    auto e = endpoint::parse("tcp://127.0.0.1:7000");
    EXPECT_EQ(e.kind, endpoint::transport::tcp);
    EXPECT_EQ(e.host, "127.0.0.1");
    EXPECT_EQ(e.port, 7000);
    EXPECT_EQ(e.to_string(), "tcp://127.0.0.1:7000");
    e = endpoint::parse("tcp://[::1]:9");
    EXPECT_EQ(e.host, "::1");
    EXPECT_EQ(e.to_string(), "tcp://[::1]:9");
    EXPECT_EQ(endpoint::parse("tcp://localhost:1").host, "127.0.0.1");
    EXPECT_EQ(endpoint::parse("tcp://*:*").port, 0);
    e = endpoint::parse("ipc:///tmp/a.sock");
    EXPECT_EQ(e.kind, endpoint::transport::unix_socket);
    EXPECT_EQ(e.path, "/tmp/a.sock");
    EXPECT_EQ(e.to_string(), "ipc:///tmp/a.sock");
    EXPECT_EQ(endpoint::parse("unix:///x").path, "/x");
    EXPECT_EQ(endpoint::parse("/x/y").path, "/x/y");
    EXPECT_EQ(endpoint::parse("ipc://@abstract").path, "@abstract");
    for (const char* bad :
         {"tcp://127.0.0.1", "tcp://:80", "tcp://h:70000", "tcp://h:x", "udp://h:1", "ipc://", "tcp://[::1"})
        EXPECT_THROW(endpoint::parse(bad), std::invalid_argument) << bad;
}

TEST(connect, abstract_unix_names_listen_and_connect_without_a_file) {
    engine eng(two_shards());
    test::echo_handler echo;
    session_group srv(eng.at(0), echo);
    const std::string name = "@strix-test-" + std::to_string(::getpid());
    srv.listen(endpoint::parse("ipc://" + name));
    recording_client h;
    h.send_on_open = le32_frame("abstract");
    session_group client(eng.at(1), h);
    client.connect(endpoint::parse("ipc://" + name));
    eng.start();
    ASSERT_TRUE(test::eventually([&] { return h.read([&] { return h.frames.size() == 1; }); }));
    EXPECT_EQ(h.read([&] { return h.frames[0]; }), le32_frame("abstract"));
    eng.stop();
    eng.join();
}

}  // namespace
