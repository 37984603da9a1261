// WebSocket through the public API: a strix client (ws_protocol::connect) against a strix
// server over ws:// and wss://, the upgrade's refusals and the plain-HTTP hook seen from a raw
// socket, subprotocol choice, a broadcast encoded once, and the counters. The protocol's hostile
// cases and a second client library are in tests/ws/ws_protocol_test.py. Both backends.
#include "support/echo_fixture.hpp"
#include "support/loopback.hpp"
#include "support/test_certs.hpp"

#include <strix/net/connection.hpp>
#include <strix/net/net_errc.hpp>
#include <strix/net/session_group.hpp>
#include <strix/net/ws_protocol.hpp>

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

namespace {

using namespace strix;
using namespace std::chrono_literals;

std::string text_of(std::span<const std::byte> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

// What a ws_handler hears, for the test thread to read under the mutex. With echo on it sends
// every message back (a server); with `greeting` set it sends those messages on open (a client).
struct recorder : ws_handler {
    std::mutex mu;
    bool echo = false;
    std::vector<std::pair<ws_opcode, std::string>> greeting;
    std::vector<std::pair<ws_opcode, std::string>> messages;
    std::vector<std::string> subprotocols;
    std::vector<std::error_code> closes, failures;
    ws_protocol* proto = nullptr;  // a client's, for subprotocol()
    int opens = 0;

    void on_open(session& s) override {
        std::lock_guard lk(mu);
        ++opens;
        if (proto) subprotocols.emplace_back(proto->subprotocol(s));
        for (auto& [op, m] : greeting) ws_send(s, op, m);
    }
    void on_message(session& s, ws_opcode op, std::span<const std::byte> m) override {
        if (echo) ws_send(s, op, m);
        std::lock_guard lk(mu);
        messages.emplace_back(op, text_of(m));
    }
    void on_close(session&, std::error_code ec) override {
        std::lock_guard lk(mu);
        closes.push_back(ec);
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
};

// A server whose shards run ws_protocol over one shared recorder (echoing).
struct ws_server {
    explicit ws_server(ws_options o, server_config cfg = {}) : opts(std::move(o)) {
        app.echo = true;
        opts.apply(cfg);
        fx = std::make_unique<test::server_fixture>(cfg, [this](shard&) {
            return std::make_unique<ws_protocol>(app, opts);
        });
    }
    recorder app;
    ws_options opts;
    std::unique_ptr<test::server_fixture> fx;
};

// A client group on shard 1 of the server's engine.
struct ws_client {
    ws_client(engine& e, ws_options o) : eng(e), opts(std::move(o)), proto(app, opts) {
        app.proto = &proto;
        session_group_config gc;
        opts.apply(gc);
        group = std::make_unique<session_group>(eng.at(1), proto, gc);
    }
    ~ws_client() {
        test::on_shard(eng, 1, [&] {
            if (conn) conn->close();
            conn.reset();
            group.reset();
        });
    }
    void connect(const std::string& url, const connect_options& co = {}) {
        test::on_shard(eng, 1, [&] { conn = proto.connect(*group, url, co); });
    }
    engine& eng;
    recorder app;
    ws_options opts;
    ws_protocol proto;
    std::unique_ptr<session_group> group;
    connection_ptr conn;
};

// Sends a raw request head and returns everything the server says until it closes (or, for an
// upgrade, until the end of the 101's head: the connection stays open).
std::string raw_exchange(std::uint16_t port, const std::string& request) {
    const int fd = test::connect_tcp(port);
    if (fd < 0) return "connect failed";
    test::send_all(fd, request.data(), request.size());
    std::string got;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, static_cast<std::size_t>(n));
        if (got.starts_with("HTTP/1.1 101 ") && got.find("\r\n\r\n") != std::string::npos) break;
    }
    ::close(fd);
    return got;
}

std::string upgrade_request(const std::string& path, const std::string& extra = "", const std::string& version = "13") {
    return "GET " + path +
           " HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: " +
           version + "\r\n" + extra + "\r\n";
}

std::vector<std::byte> bytes_of(std::initializer_list<int> v) {
    std::vector<std::byte> out;
    for (int x : v) out.push_back(static_cast<std::byte>(x));
    return out;
}

frame_cut cut(const framer& f, std::initializer_list<int> v, std::size_t max_frame = 1000) {
    const auto b = bytes_of(v);
    return f.cut(b, max_frame);
}

TEST(websocket, the_frame_framer_sizes_and_refuses_frames_from_their_header) {
    const framer& srv = ws_server_framer();
    EXPECT_EQ(cut(srv, {0x81}).size, 0u) << "one byte: wait";
    EXPECT_EQ(cut(srv, {0x81, 0x85, 1, 2}).size, 0u) << "mask key incomplete: wait";
    EXPECT_EQ(cut(srv, {0x81, 0x85, 1, 2, 3, 4}).size, 6u + 5u);
    EXPECT_EQ(cut(srv, {0x82, 0xFE, 0x01, 0x00, 1, 2, 3, 4}).size, 8u + 256u) << "16-bit length";
    EXPECT_EQ(cut(srv, {0x81, 0x05}).error, ws_errc::protocol_error) << "unmasked client frame";
    EXPECT_EQ(cut(srv, {0xC1, 0x85}).error, ws_errc::protocol_error) << "RSV1";
    EXPECT_EQ(cut(srv, {0x83, 0x80}).error, ws_errc::protocol_error) << "opcode 3";
    EXPECT_EQ(cut(srv, {0x09, 0x80}).error, ws_errc::protocol_error) << "fragmented ping";
    EXPECT_EQ(cut(srv, {0x89, 0xFE}).error, ws_errc::protocol_error) << "ping longer than 125";
    EXPECT_EQ(cut(srv, {0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0}).error, ws_errc::protocol_error)
        << "2^63: refused once the length is in, before the mask key";
    EXPECT_EQ(cut(srv, {0x82, 0xFF, 0, 0, 0, 1, 0, 0, 0, 0}).error, ws_errc::message_too_big)
        << "2^32 bytes against a 1000-byte limit, before the mask key";
    EXPECT_EQ(cut(srv, {0x82, 0xFE, 0x03, 0xE8, 1, 2, 3, 4}).error, ws_errc::message_too_big)
        << "1000 bytes of payload plus the header exceed 1000";
    const framer& cli = ws_client_framer();
    EXPECT_EQ(cut(cli, {0x81, 0x05}).size, 7u);
    EXPECT_EQ(cut(cli, {0x81, 0x85, 1, 2, 3, 4}).error, ws_errc::protocol_error) << "masked server frame";
    const framer& http = ws_http_framer();
    const std::string head = "GET / HTTP/1.1\r\nHost: x\r\n\r\n\x81";
    EXPECT_EQ(http.cut(std::as_bytes(std::span(head.data(), head.size())), 100).size, head.size() - 1);
    EXPECT_EQ(http.cut(std::as_bytes(std::span(head.data(), 20)), 100).size, 0u);
    EXPECT_GT(http.cut(std::as_bytes(std::span(head.data(), 20)), 10).size, 10u) << "no end within the limit";
}

TEST(websocket, a_strix_client_and_server_echo_text_and_binary_messages) {
    ws_server srv({.path = "/ws", .max_message = 128 * 1024});
    ws_client cli(srv.fx->eng, {.max_message = 128 * 1024});
    const std::string big(70000, 'b');  // an 8-byte length on the wire
    cli.app.greeting = {{ws_opcode::text, "hello"}, {ws_opcode::binary, big}, {ws_opcode::text, ""}};
    cli.connect("ws://127.0.0.1:" + std::to_string(srv.fx->srv.port()) + "/ws");
    ASSERT_TRUE(test::eventually([&] { return cli.app.read([&] { return cli.app.messages.size() == 3; }); }));
    cli.app.read([&] {
        EXPECT_EQ(cli.app.messages[0], std::make_pair(ws_opcode::text, std::string("hello")));
        EXPECT_EQ(cli.app.messages[1], std::make_pair(ws_opcode::binary, big));
        EXPECT_EQ(cli.app.messages[2], std::make_pair(ws_opcode::text, std::string()));
        EXPECT_TRUE(cli.app.failures.empty());
        return 0;
    });
    const net_stats st = srv.fx->srv.stats();
    EXPECT_EQ(st.ws_handshakes.value(), 1u);
    EXPECT_EQ(st.ws_messages_in.value(), 3u);
    EXPECT_EQ(st.ws_handshakes_refused.value(), 0u);
    test::on_shard(srv.fx->eng, 1, [&] {
        EXPECT_EQ(cli.group->counters().ws_handshakes.value(), 1u);
        EXPECT_EQ(cli.group->counters().ws_messages_in.value(), 3u);
        ws_close(*cli.conn->current(), 4001, "bye");
        EXPECT_EQ(cli.group->counters().ws_closes_normal.value(), 1u);
    });
    ASSERT_TRUE(test::eventually([&] { return srv.app.read([&] { return srv.app.closes.size() == 1; }); }));
    EXPECT_EQ(srv.app.read([&] { return srv.app.closes[0]; }), ws_close_reason(4001))
        << "the server hears the client's close code";
    EXPECT_EQ(srv.fx->srv.stats().ws_closes_normal.value(), 1u);
}

TEST(websocket, wss_is_the_same_server_with_tls_below_the_session) {
    test::test_certs certs;
    server_config cfg;
    cfg.tls = tls_server::load({.cert_file = certs.cert, .key_file = certs.key});
    ws_server srv({.path = "/"}, cfg);
    ws_client cli(srv.fx->eng, {});
    cli.app.greeting = {{ws_opcode::text, "over tls"}};
    connect_options co;
    co.tls = tls_client::load({.ca_file = certs.ca});
    co.server_name = "localhost";
    EXPECT_THROW(cli.proto.connect(*cli.group, "wss://127.0.0.1:1/", {}), std::invalid_argument)
        << "wss:// without connect_options::tls";
    cli.connect("wss://127.0.0.1:" + std::to_string(srv.fx->srv.port()) + "/", co);
    ASSERT_TRUE(test::eventually([&] { return cli.app.read([&] { return cli.app.messages.size() == 1; }); }));
    EXPECT_EQ(cli.app.read([&] { return cli.app.messages[0].second; }), "over tls");
    EXPECT_EQ(srv.fx->srv.stats().tls_handshakes.value(), 1u);
    EXPECT_EQ(srv.fx->srv.stats().ws_handshakes.value(), 1u);
}

TEST(websocket, the_upgrade_is_refused_with_the_right_status_and_counted) {
    ws_server srv({.path = "/ws", .origins = {"https://chat.example"}, .max_handshake = 1024});
    const auto port = srv.fx->srv.port();
    const std::string origin = "Origin: https://chat.example\r\n";
    std::string r = raw_exchange(port, upgrade_request("/ws", origin, "8"));
    EXPECT_TRUE(r.starts_with("HTTP/1.1 426 ")) << r;
    EXPECT_NE(r.find("Sec-WebSocket-Version: 13\r\n"), std::string::npos) << r;
    r = raw_exchange(port, upgrade_request("/elsewhere", origin));
    EXPECT_TRUE(r.starts_with("HTTP/1.1 404 ")) << r;
    r = raw_exchange(port, upgrade_request("/ws", "Origin: https://evil.example\r\n"));
    EXPECT_TRUE(r.starts_with("HTTP/1.1 403 ")) << r;
    r = raw_exchange(port, upgrade_request("/ws"));
    EXPECT_TRUE(r.starts_with("HTTP/1.1 403 ")) << "no Origin while an allow list is set: " << r;
    r = raw_exchange(port, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Version: 13\r\n" +
                               origin + "\r\n");
    EXPECT_TRUE(r.starts_with("HTTP/1.1 400 ")) << "no key: " << r;
    r = raw_exchange(port, upgrade_request("/ws", origin + "X-Pad: " + std::string(2000, 'p') + "\r\n"));
    EXPECT_TRUE(r.starts_with("HTTP/1.1 431 ")) << r;
    r = raw_exchange(port, "NOT HTTP\r\n\r\n");
    EXPECT_TRUE(r.starts_with("HTTP/1.1 400 ")) << r;
    EXPECT_EQ(srv.fx->srv.stats().ws_handshakes_refused.value(), 7u) << "426, 404, 403, 403, 400, 431 and 400";
    // The refusals above came as upgrades except the last; a plain GET on the path asks for one.
    r = raw_exchange(port, "GET /ws HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_TRUE(r.starts_with("HTTP/1.1 426 ")) << r;
    r = raw_exchange(port, upgrade_request("/ws", origin));
    EXPECT_TRUE(r.starts_with("HTTP/1.1 101 Switching Protocols\r\n")) << r;
    // RFC 6455 section 1.3's example key and its accept value.
    EXPECT_NE(r.find("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"), std::string::npos) << r;
    EXPECT_EQ(srv.fx->srv.stats().ws_handshakes.value(), 1u);
}

TEST(websocket, plain_requests_reach_the_applications_http_hook_and_deflate_is_declined) {
    ws_options o{.path = "/ws"};
    o.on_http = [](const http_request& req) {
        http_response r;
        if (req.path == "/") {
            r.status = 200;
            r.content_type = "text/html";
            r.body = "<p>page for " + std::string(req.header("user-agent")) + "</p>";
        }
        return r;
    };
    ws_server srv(o);
    const auto port = srv.fx->srv.port();
    std::string r = raw_exchange(port, "GET /?x=1 HTTP/1.1\r\nHost: x\r\nUser-Agent: tester\r\n\r\n");
    EXPECT_TRUE(r.starts_with("HTTP/1.1 200 OK\r\n")) << r;
    EXPECT_NE(r.find("Content-Type: text/html\r\n"), std::string::npos) << r;
    EXPECT_TRUE(r.ends_with("\r\n\r\n<p>page for tester</p>")) << r;
    r = raw_exchange(port, "GET /missing HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_TRUE(r.starts_with("HTTP/1.1 404 ")) << r;
    EXPECT_EQ(srv.fx->srv.stats().ws_http_requests.value(), 2u);
    r = raw_exchange(port, upgrade_request("/ws",
                                           "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"));
    EXPECT_TRUE(r.starts_with("HTTP/1.1 101 ")) << r;
    EXPECT_EQ(r.find("Sec-WebSocket-Extensions"), std::string::npos) << "compression declined by not echoing it: " << r;
}

TEST(websocket, the_servers_first_subprotocol_the_client_offers_is_agreed) {
    ws_server srv({.subprotocols = {"strix.v2", "strix.v1"}});
    ws_client cli(srv.fx->eng, {.subprotocols = {"strix.v1", "strix.v2"}});
    cli.connect("ws://127.0.0.1:" + std::to_string(srv.fx->srv.port()) + "/");
    ASSERT_TRUE(test::eventually([&] { return cli.app.read([&] { return cli.app.opens == 1; }); }));
    EXPECT_EQ(cli.app.read([&] { return cli.app.subprotocols.at(0); }), "strix.v2");
    const std::string r = raw_exchange(srv.fx->srv.port(), upgrade_request("/", "Sec-WebSocket-Protocol: other\r\n"));
    EXPECT_TRUE(r.starts_with("HTTP/1.1 101 ")) << r;
    EXPECT_EQ(r.find("Sec-WebSocket-Protocol"), std::string::npos) << "nothing in common: none chosen";
}

TEST(websocket, a_client_refuses_a_server_that_does_not_upgrade) {
    ws_server srv({.path = "/ws"});
    ws_client cli(srv.fx->eng, {});
    cli.connect("ws://127.0.0.1:" + std::to_string(srv.fx->srv.port()) + "/nowhere");
    ASSERT_TRUE(test::eventually([&] { return cli.app.read([&] { return cli.app.failures.size() == 1; }); }));
    EXPECT_EQ(cli.app.read([&] { return cli.app.failures[0]; }), make_error_code(ws_errc::handshake_refused));
    EXPECT_EQ(cli.app.read([&] { return cli.app.opens; }), 0);
}

TEST(websocket, a_broadcast_frame_is_encoded_once_and_sent_to_every_member) {
    struct members : ws_handler {
        std::mutex mu;
        std::vector<session_ptr> all;
        void on_open(session& s) override {
            std::lock_guard lk(mu);
            all.emplace_back(&s);
        }
        void on_message(session&, ws_opcode, std::span<const std::byte>) override {}
    } room;
    ws_options o;
    server_config cfg;
    o.apply(cfg);
    // One shard, so every member lives where the broadcast runs.
    test::server_fixture fx(
        cfg, [&](shard&) { return std::make_unique<ws_protocol>(room, o); }, 1);
    // The clients' group shares the server's one shard.
    session_group_config gc;
    ws_options co;
    co.apply(gc);
    recorder heard;
    ws_protocol proto(heard, co);
    auto group = std::make_unique<session_group>(fx.eng.at(0), proto, gc);
    const std::string url = "ws://127.0.0.1:" + std::to_string(fx.srv.port()) + "/";
    test::on_shard(fx.eng, 0, [&] {
        for (int i = 0; i < 3; ++i) proto.connect(*group, url);
    });
    ASSERT_TRUE(test::eventually([&] {
        std::lock_guard lk(room.mu);
        return room.all.size() == 3;
    }));
    const shared_buffer* sent = nullptr;
    test::on_shard(fx.eng, 0, [&] {
        shared_buffer_ptr frame = ws_encode(ws_opcode::text, std::string_view("to everyone"));
        sent = frame.get();
        for (auto& s : room.all) s->send(frame);
        EXPECT_EQ(frame->size(), 2u + 11u);
    });
    EXPECT_NE(sent, nullptr);
    ASSERT_TRUE(test::eventually([&] { return heard.read([&] { return heard.messages.size() == 3; }); }));
    for (auto& m : heard.read([&] { return heard.messages; })) EXPECT_EQ(m.second, "to everyone");
    test::on_shard(fx.eng, 0, [&] {
        room.all.clear();
        group.reset();
    });
}

// A masked client frame, built by hand (key 1 2 3 4).
std::string client_frame(int first_byte, const std::string& payload) {
    std::string f;
    f += static_cast<char>(first_byte);
    f += static_cast<char>(0x80 | payload.size());  // short payloads only
    const char key[4] = {1, 2, 3, 4};
    f.append(key, 4);
    for (std::size_t i = 0; i < payload.size(); ++i) f += static_cast<char>(payload[i] ^ key[i % 4]);
    return f;
}

TEST(websocket, an_application_may_close_from_on_message_and_frames_may_ride_with_the_request) {
    // Closes the session from inside on_message of a reassembled message (whose buffer the
    // protocol must not touch afterwards), and echoes anything else.
    struct closer : ws_handler {
        void on_message(session& s, ws_opcode op, std::span<const std::byte> m) override {
            if (text_of(m) == "quit") {
                ws_close(s, 4000, "bye");
                return;
            }
            ws_send(s, op, m);
        }
    } app;
    ws_options o;
    server_config cfg;
    o.apply(cfg);
    test::server_fixture fx(cfg, [&](shard&) { return std::make_unique<ws_protocol>(app, o); });
    const int fd = test::connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    // The upgrade and two frames in one write: the framer switch takes effect within the read.
    const std::string out = upgrade_request("/") + client_frame(0x81, "first") + client_frame(0x01, "qu") +
                            client_frame(0x89, "ping") + client_frame(0x80, "it");
    ASSERT_TRUE(test::send_all(fd, out.data(), out.size()));
    std::string got;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    const auto body = got.find("\r\n\r\n");
    ASSERT_NE(body, std::string::npos) << got;
    EXPECT_TRUE(got.starts_with("HTTP/1.1 101 ")) << got;
    const std::string frames = got.substr(body + 4);
    const std::string expect = std::string("\x81\x05"
                                           "first") +
                               "\x8a\x04"
                               "ping" +
                               "\x88\x05"
                               "\x0f\xa0"
                               "bye";
    EXPECT_EQ(frames, expect) << "echo, pong, then the application's close, then EOF";
    EXPECT_EQ(fx.srv.stats().ws_closes_normal.value(), 1u);
}

}  // namespace
