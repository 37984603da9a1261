// The chat server's WebSocket port (--ws-port): browser-style clients are ordinary chat members.
// A TCP member and a WebSocket member chat with each other; each binary WebSocket message is one
// protocol frame, byte for byte the frame a TCP client gets; text messages and messages that are
// not exactly one frame are refused with a close code; the login timeout, the frame size limits
// and the chat throttle hold for WebSocket members too; the origin allow list; the web page at /.
#include "chat_fixture.hpp"

#include <support/test_certs.hpp>

#include <cstdio>
#include <set>

using namespace strix;
using namespace strix::test;
using namespace std::chrono_literals;
using proto::error_code;
using proto::msg_type;

namespace {

class ws_chat : public chat_test {
protected:
    std::unique_ptr<server_process> start_ws(std::vector<std::string> extra = {}) {
        extra.insert(extra.end(), {"--ws-port", "0"});
        auto s = start(2, std::move(extra));
        EXPECT_NE(s->ws_port(), 0) << "no ws:// address announced:\n" << s->log();
        return s;
    }
};

// Runs a shell command; its exit status and output.
std::pair<int, std::string> shell(const std::string& cmd) {
    std::string out;
    FILE* f = ::popen((cmd + " 2>&1").c_str(), "r");
    if (!f) return {-1, out};
    char buf[512];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    const int st = ::pclose(f);
    return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

std::string hex(std::span<const std::byte> b) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (std::byte x : b) {
        out += digits[std::to_integer<unsigned>(x) >> 4];
        out += digits[std::to_integer<unsigned>(x) & 15];
    }
    return out;
}

// Debian's python3-websockets (so /usr/bin/python3, not whatever python3 PATH finds) over wss://: sends one binary
// message (hex argument), prints the reply's bytes in hex.
constexpr const char* wss_client = R"(
import asyncio, ssl, sys, websockets
async def main():
    ctx = ssl.create_default_context(cafile=sys.argv[2])
    async with websockets.connect(sys.argv[1], ssl=ctx, origin=sys.argv[3]) as ws:
        await ws.send(bytes.fromhex(sys.argv[4]))
        print(bytes(await asyncio.wait_for(ws.recv(), 10)).hex())
asyncio.run(main())
)";

// A plain HTTP/1.1 GET on the WebSocket port: the status code and the body.
std::pair<int, std::string> get(std::uint16_t port, const std::string& path) {
    int fd = connect_tcp(port, 5s);
    if (fd < 0) return {0, ""};
    std::string req =
        "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nConnection: close\r\n\r\n";
    send_all(fd, req.data(), req.size());
    std::string reply;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    if (reply.rfind("HTTP/1.1 ", 0) != 0) return {0, reply};
    auto body = reply.find("\r\n\r\n");
    return {std::atoi(reply.c_str() + 9), body == std::string::npos ? "" : reply.substr(body + 4)};
}

TEST_P(ws_chat, tcp_and_websocket_members_chat_with_each_other) {
    auto srv = start_ws();
    chat_client w;
    ASSERT_TRUE(w.connect_ws(srv->ws_port())) << w.upgrade_reply().head;
    const auto wid = w.login("webby");
    ASSERT_NE(wid, 0u);
    const auto room = w.create("mixed");
    ASSERT_NE(room, 0u);

    chat_client t(srv->port());
    ASSERT_NE(t.login("tcpy"), 0u);
    auto listed = t.list();
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(std::get<1>(listed[0]), "mixed");
    EXPECT_EQ(t.join(room), (std::vector<std::string>{"webby", "tcpy"}));
    w.expect_member_event(msg_type::member_joined, room, "tcpy");

    ASSERT_TRUE(t.send_chat("from tcp", 1));
    ASSERT_TRUE(w.send_chat("from ws", 1));
    for (chat_client* c : {&t, &w}) {
        auto a = c->expect_chat();
        auto b = c->expect_chat();
        EXPECT_EQ(a.seq + 1, b.seq) << "every member sees the room's order";
        EXPECT_EQ(a.room_id, room);
        std::set<std::string> texts{a.text, b.text};
        EXPECT_EQ(texts, (std::set<std::string>{"from tcp", "from ws"}));
    }
    // The WebSocket member lists, leaves and is seen leaving.
    auto from_ws = w.list();
    ASSERT_EQ(from_ws.size(), 1u);
    EXPECT_EQ(std::get<2>(from_ws[0]), 2u);
    ASSERT_TRUE(w.send_leave());
    auto left = w.expect(msg_type::leave_room_res);
    ASSERT_NE(left.as<proto::leave_room_res>(), nullptr);
    EXPECT_EQ(left.as<proto::leave_room_res>()->room_id(), room);
    t.expect_member_event(msg_type::member_left, room, "webby");
    ASSERT_TRUE(t.send_chat("alone now", 2));
    EXPECT_EQ(t.expect_chat().text, "alone now");
    w.send_chat("not in a room");
    w.expect_error(msg_type::chat_req, error_code::not_in_room);
    stop_cleanly(*srv);
}

TEST_P(ws_chat, a_websocket_message_carries_the_tcp_frame_unchanged) {
    auto srv = start_ws();
    chat_client w, t(srv->port());
    ASSERT_TRUE(w.connect_ws(srv->ws_port()));
    // Replies that do not depend on the connection: byte for byte the same frame.
    ASSERT_TRUE(w.send_ping(42));
    ASSERT_TRUE(t.send_ping(42));
    auto wf = w.expect(msg_type::pong_res), tf = t.expect(msg_type::pong_res);
    EXPECT_EQ(wf.bytes, tf.bytes);
    w.send_chat("before login");
    t.send_chat("before login");
    auto we = w.expect(msg_type::error_res), te = t.expect(msg_type::error_res);
    EXPECT_EQ(we.bytes, te.bytes);
    // A frame with the CRC flag is accepted over WebSocket as over TCP.
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(proto::Createping_req(fbb, 7));
    auto plain = finish_frame(fbb, msg_type::ping_req);
    std::vector<std::byte> crc(plain->data(), plain->data() + plain->size());
    encode_header(crc.data(), make_header(static_cast<std::uint16_t>(msg_type::ping_req),
                                          std::span<const std::byte>(crc).subspan(frame_header_size), true));
    ASSERT_TRUE(w.send_ws(ws::binary, crc));
    auto pong = w.expect(msg_type::pong_res);
    ASSERT_NE(pong.as<proto::pong_res>(), nullptr);
    EXPECT_EQ(pong.as<proto::pong_res>()->ts(), 7u);
    stop_cleanly(*srv);
}

TEST_P(ws_chat, text_messages_and_messages_that_are_not_one_frame_are_refused) {
    auto srv = start_ws();
    const std::string hello = "hello";
    {
        chat_client w;
        ASSERT_TRUE(w.connect_ws(srv->ws_port()));
        ASSERT_TRUE(w.send_ws(ws::text, std::as_bytes(std::span(hello))));
        EXPECT_FALSE(w.recv(5s).has_value());
        EXPECT_EQ(w.close_code(), 1003) << "text: unsupported data";
    }
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(proto::Createping_req(fbb, 1));
    auto ping = finish_frame(fbb, msg_type::ping_req);
    std::vector<std::byte> two(ping->data(), ping->data() + ping->size());
    two.insert(two.end(), ping->data(), ping->data() + ping->size());
    for (std::size_t n : {two.size(), ping->size() - 1, std::size_t{3}}) {
        chat_client w;
        ASSERT_TRUE(w.connect_ws(srv->ws_port()));
        ASSERT_TRUE(w.send_ws(ws::binary, std::span<const std::byte>(two.data(), n)));
        EXPECT_FALSE(w.recv(5s).has_value()) << n << " bytes";
        EXPECT_EQ(w.close_code(), 1002) << n << " bytes: a message must hold exactly one frame";
    }
    // Other members are served meanwhile.
    chat_client ok;
    ASSERT_TRUE(ok.connect_ws(srv->ws_port()));
    EXPECT_NE(ok.login("still-fine"), 0u);
    stop_cleanly(*srv);
}

TEST_P(ws_chat, limits_and_throttles_apply_to_websocket_members) {
    auto srv = start_ws({"--chat-rate", "1", "--chat-burst", "2", "--login-timeout-ms", "400"});
    // Before login a message is at most 4096 bytes, like a frame on TCP.
    {
        chat_client w;
        ASSERT_TRUE(w.connect_ws(srv->ws_port()));
        std::vector<std::byte> big(5000);
        ASSERT_TRUE(w.send_ws(ws::binary, big));
        EXPECT_FALSE(w.recv(5s).has_value());
        EXPECT_EQ(w.close_code(), 1009) << "message too big";
    }
    // The login timeout.
    {
        chat_client w;
        ASSERT_TRUE(w.connect_ws(srv->ws_port()));
        auto t0 = std::chrono::steady_clock::now();
        while (w.recv(3s)) {
        }
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 2500ms) << "not closed at the login timeout";
    }
    // The chat throttle: a burst of 2, then rate_limited.
    chat_client w;
    ASSERT_TRUE(w.connect_ws(srv->ws_port()));
    ASSERT_NE(w.login("burster"), 0u);
    ASSERT_NE(w.create("fast"), 0u);
    for (int i = 1; i <= 4; ++i) ASSERT_TRUE(w.send_chat("m" + std::to_string(i), static_cast<std::uint64_t>(i)));
    // The refusals are immediate, the chat_msgs wait for the database (--ack stored).
    std::vector<std::string> texts;
    int limited = 0;
    for (int i = 0; i < 4; ++i) {
        auto f = w.recv();
        ASSERT_TRUE(f.has_value()) << "frame " << i;
        if (f->type == msg_type::chat_msg) {
            texts.push_back(to_line(*f->as<proto::chat_msg>()).text);
        } else {
            ASSERT_EQ(f->type, msg_type::error_res);
            EXPECT_EQ(f->as<proto::error_res>()->code(), error_code::rate_limited);
            ++limited;
        }
    }
    EXPECT_EQ(texts, (std::vector<std::string>{"m1", "m2"}));
    EXPECT_EQ(limited, 2);
    // After login, messages up to 64 KiB are fine.
    std::this_thread::sleep_for(1100ms);
    const std::string text(60000, 'x');
    ASSERT_TRUE(w.send_chat(text, 9));
    EXPECT_EQ(w.expect_chat().text.size(), text.size());
    stop_cleanly(*srv);
}

TEST_P(ws_chat, origins_are_checked_and_the_page_is_served_at_the_root) {
    auto srv = start_ws();
    const std::uint16_t p = srv->ws_port();
    const std::string same = "http://127.0.0.1:" + std::to_string(p);
    chat_client a, b, c;
    EXPECT_TRUE(a.connect_ws(p, "/ws", same)) << "the page's own origin: " << a.upgrade_reply().head;
    EXPECT_TRUE(b.connect_ws(p, "/ws")) << "no Origin (not a browser): " << b.upgrade_reply().head;
    EXPECT_FALSE(c.connect_ws(p, "/ws", "http://evil.example"));
    EXPECT_EQ(c.upgrade_reply().status, 403) << c.upgrade_reply().head;
    chat_client d;
    EXPECT_FALSE(d.connect_ws(p, "/elsewhere"));
    EXPECT_EQ(d.upgrade_reply().status, 404) << d.upgrade_reply().head;

    auto [status, body] = get(p, "/");
    EXPECT_EQ(status, 200);
    EXPECT_NE(body.find("<title>strix chat</title>"), std::string::npos) << body.substr(0, 200);
    EXPECT_NE(body.find("content=\"/ws\""), std::string::npos) << "the page is told the WebSocket path";
    auto [js_status, js] = get(p, "/app.js");
    EXPECT_EQ(js_status, 200);
    EXPECT_GT(js.size(), 1000u);
    EXPECT_EQ(get(p, "/missing").first, 404);
    stop_cleanly(*srv);

    auto listed = start_ws({"--ws-origins", "https://chat.example,http://other.example:8080", "--ws-path", "/chat"});
    const std::uint16_t q = listed->ws_port();
    chat_client e, f, g;
    EXPECT_TRUE(e.connect_ws(q, "/chat", "https://chat.example")) << e.upgrade_reply().head;
    EXPECT_TRUE(f.connect_ws(q, "/chat", "http://other.example:8080")) << f.upgrade_reply().head;
    EXPECT_FALSE(g.connect_ws(q, "/chat", "http://127.0.0.1:" + std::to_string(q)))
        << "a list replaces the same-origin default";
    EXPECT_EQ(g.upgrade_reply().status, 403);
    EXPECT_NE(get(q, "/").second.find("content=\"/chat\""), std::string::npos);
    stop_cleanly(*listed);
}

TEST_P(ws_chat, with_a_certificate_the_websocket_port_speaks_wss) {
    test_certs certs;
    auto srv = start_ws({"--tls-cert", certs.cert, "--tls-key", certs.key});
    EXPECT_NE(srv->log().find("web chat page https://127.0.0.1:"), std::string::npos) << srv->log();
    flatbuffers::FlatBufferBuilder fbb;
    auto n = fbb.CreateString("secure");
    auto pw = fbb.CreateString("pw");
    fbb.Finish(proto::Createlogin_req(fbb, n, pw));
    auto login = finish_frame(fbb, msg_type::login_req);
    const std::string port = std::to_string(srv->ws_port());
    const std::string script = dir_.path() + "/wss_client.py";
    std::ofstream(script) << wss_client;
    auto [status, out] = shell("timeout 30 /usr/bin/python3 " + script + " wss://127.0.0.1:" + port + "/ws " +
                               certs.ca + " https://127.0.0.1:" + port + " " + hex({login->data(), login->size()}));
    ASSERT_EQ(status, 0) << out;
    // The reply is one frame: header length = message length, type login_res (2).
    ASSERT_GE(out.size(), 24u) << out;
    EXPECT_EQ(out.substr(8, 4), "0200") << out;
    EXPECT_EQ(std::stoul(out.substr(6, 2) + out.substr(4, 2) + out.substr(2, 2) + out.substr(0, 2), nullptr, 16),
              (out.size() - 1) / 2)
        << out;
    // Plain ws:// on the TLS port is not understood.
    chat_client plain;
    EXPECT_FALSE(plain.connect_ws(srv->ws_port()));
    stop_cleanly(*srv);
}

STRIX_CHAT_BACKENDS(ws_chat);

}  // namespace
