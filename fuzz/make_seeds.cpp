// Writes the seed corpora, fuzz/corpus/<target>/, from the inputs the tests use: the frames of
// tests/unit/codec and docs/wire_format.md, the framer cases of tests/net/framer_test.cpp, the
// ZMTP conversations of tests/link/zmtp_wire_test.cpp and garbage_test.cpp, the chat requests of
// tests/chat (and the server's replies), the config files of tests/chat/server_cli_test.cpp and
// the HTTP requests of tests/chat/metrics_endpoint_test.cpp, and a few call sequences of libzmq's
// C API. Each seed carries the parameter
// bytes its target reads first (see the target's header comment).
//
//   cmake --build build-fuzz --target strix_fuzz_seeds && build-fuzz/strix_fuzz_seeds fuzz/corpus
//
// The files are committed (a few KiB); rerun this after changing a target's input layout.
#include "apps/chat/common/chat_frame.hpp"

#include <strix/codec/frame_codec.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using bytes = std::vector<std::byte>;
using namespace strix;
using namespace strix::chat;

namespace {

fs::path root;
int written = 0;

bytes of(std::string_view s) {
    bytes b(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) b[i] = static_cast<std::byte>(s[i]);
    return b;
}
bytes operator+(bytes a, const bytes& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}
bytes u8(unsigned v) { return {static_cast<std::byte>(v)}; }
bytes le16(unsigned v) { return {static_cast<std::byte>(v & 0xff), static_cast<std::byte>((v >> 8) & 0xff)}; }
bytes le32(std::uint32_t v) { return le16(v & 0xffff) + le16(v >> 16); }

void seed(const std::string& target, const std::string& name, const bytes& b) {
    const fs::path dir = root / target;
    fs::create_directories(dir);
    std::ofstream out(dir / name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    ++written;
}

bytes strix_frame(std::uint16_t type, const bytes& body, bool crc) {
    bytes out(frame_header_size + body.size());
    encode_frame(out, type, body, crc);
    return out;
}
bytes raw_header(std::uint32_t length, std::uint16_t type, std::uint16_t flags, std::uint32_t crc) {
    bytes out(frame_header_size);
    encode_header(out.data(), frame_header{length, type, flags, crc});
    return out;
}

// ZMTP bytes written by hand from the RFC, as tests/link/raw_zmtp.hpp does.
bytes greeting(unsigned major = 3, unsigned minor = 1, std::string_view mech = "NULL", unsigned sig9 = 0x7f) {
    bytes g(64, std::byte{0});
    g[0] = std::byte{0xff};
    g[8] = std::byte{0x01};
    g[9] = static_cast<std::byte>(sig9);
    g[10] = static_cast<std::byte>(major);
    g[11] = static_cast<std::byte>(minor);
    for (std::size_t i = 0; i < mech.size() && i < 20; ++i) g[12 + i] = static_cast<std::byte>(mech[i]);
    return g;
}
bytes zframe(unsigned flags, const bytes& body, bool force_long = false) {
    if (body.size() <= 255 && !force_long) return u8(flags) + u8(static_cast<unsigned>(body.size())) + body;
    bytes h = u8(flags | 0x02);
    for (int i = 0; i < 8; ++i)
        h.push_back(static_cast<std::byte>((static_cast<std::uint64_t>(body.size()) >> (56 - 8 * i)) & 0xff));
    return h + body;
}
bytes zcommand(std::string_view name, const bytes& data) {
    return zframe(0x04, u8(static_cast<unsigned>(name.size())) + of(name) + data);
}
bytes property(std::string_view name, std::string_view value) {
    const auto n = static_cast<std::uint32_t>(value.size());
    return u8(static_cast<unsigned>(name.size())) + of(name) + u8(n >> 24) + u8((n >> 16) & 0xff) +
           u8((n >> 8) & 0xff) + u8(n & 0xff) + of(value);
}
bytes ready(std::string_view type, std::string_view identity = {}) {
    bytes props = property("Socket-Type", type);
    if (!identity.empty()) props = props + property("Identity", identity);
    return zcommand("READY", props);
}

bytes finished(flatbuffers::FlatBufferBuilder& fbb) {
    const auto* p = reinterpret_cast<const std::byte*>(fbb.GetBufferPointer());
    return bytes(p, p + fbb.GetSize());
}

void frame_decoder_seeds() {
    // [mode][max_frame u16][cut seed u32][stream]
    auto params = [](unsigned mode, unsigned max) { return u8(mode) + le16(max) + le32(0x5eed); };
    const bytes hello = strix_frame(0x0102, of("hello"), false);       // docs/wire_format.md
    const bytes hello_crc = strix_frame(0x0102, of("hello"), true);
    const bytes empty = strix_frame(0, {}, false);
    seed("frame_decoder", "doc_examples", params(0, 0) + hello + hello_crc + empty);
    seed("frame_decoder", "doc_examples_bytewise", params(4, 0) + hello + hello_crc + empty);
    seed("frame_decoder", "crc_fixed_split",
         params(1 | 6, 0) + hello_crc + strix_frame(7, bytes(300, std::byte{0x5a}), true));
    seed("frame_decoder", "partial_tail", params(2, 0) + hello + bytes(hello.begin(), hello.begin() + 9));
    seed("frame_decoder", "partial_body", params(0, 0) + hello + bytes(hello.begin(), hello.end() - 2));
    seed("frame_decoder", "length_too_small", params(0, 0) + hello + raw_header(11, 1, 0, 0));
    seed("frame_decoder", "length_too_large", params(0, 100) + raw_header(101, 1, 0, 0) + bytes(89));
    seed("frame_decoder", "unknown_flags", params(0, 0) + raw_header(12, 1, 0x8000, 0));
    seed("frame_decoder", "crc_without_flag", params(0, 0) + raw_header(12, 1, 0, 1));
    bytes bad_crc = hello_crc;
    bad_crc.back() ^= std::byte{1};
    seed("frame_decoder", "crc_mismatch", params(6, 0) + hello + bad_crc + hello);
}

void framers_seeds() {
    // [max_frame u16][stream]
    seed("framers", "length_prefix", le16(100) + le32(9) + of("hello") + le32(4));
    seed("framers", "length_prefix_too_small", le16(100) + le32(3) + of("abc"));
    seed("framers", "strix_header", le16(1000) + raw_header(200, 1, 0, 0) + bytes(20));
    seed("framers", "strix_frames",
         le16(0) + strix_frame(0x0102, of("hello"), true) + strix_frame(3, of("abc"), false));
    seed("framers", "zmtp_greeting_ready", le16(0) + greeting() + ready("DEALER", "id"));
    seed("framers", "zmtp_long_frame", le16(0) + zframe(0, bytes(300, std::byte{1})) + zframe(1, of("x"), true));
    seed("framers", "http_like", le16(0) + of("GET /metrics HTTP/1.0\r\n\r\n"));
}

void zmtp_seeds() {
    // [mode][max_msg u16][peer bytes]; mode 0: the peer's greeting is in the input.
    auto params = [](unsigned mode, unsigned max) { return u8(mode) + le16(max); };
    const bytes g = greeting();
    seed("zmtp", "dealer_handshake_messages",
         params(0, 0) + g + ready("DEALER", "peer-1") + zframe(1, {}) + zframe(0, of("hello")) +
             zframe(0, bytes(256, std::byte{7})));
    seed("zmtp", "greeting_3_0_sub",
         params(0, 0) + greeting(3, 0) + ready("SUB") + zframe(0, u8(1) + of("topic")) +
             zframe(0, u8(0) + of("topic")));
    seed("zmtp", "greeting_4_2_padding", params(0, 0) + greeting(4, 2) + ready("PUB"));
    seed("zmtp", "greeting_3_7_filler", params(0, 0) + greeting(3, 7) + ready("REQ"));
    seed("zmtp", "curve_refused", params(0, 0) + greeting(3, 1, "CURVE"));
    seed("zmtp", "version_2_refused", params(0, 0) + greeting(2, 0));
    seed("zmtp", "bad_signature", params(0, 0) + greeting(3, 1, "NULL", 0x7e));
    seed("zmtp", "peer_error", params(0, 0) + g + zcommand("ERROR", u8(19) + of("Invalid socket type")));
    seed("zmtp", "ready_broken_property",
         params(0, 0) + g + zcommand("READY", u8(11) + of("Socket-Type") + le32(0xffffff)));
    seed("zmtp", "ping_pong_subscribe",
         params(1 | 2, 0) + zcommand("PING", u8(0) + u8(50) + of("ctx")) + zcommand("PONG", of("ctx")) +
             zcommand("SUBSCRIBE", of("a")) + zcommand("CANCEL", of("a")));
    seed("zmtp", "multipart_long", params(1 | 2, 0) + zframe(1, of("a"), true) + zframe(1, {}) + zframe(0, bytes(300)));
    seed("zmtp", "oversized_size_field", params(1 | 2, 100) + u8(0x02) + bytes(8, std::byte{0xff}));
    seed("zmtp", "reserved_flags", params(1 | 2, 0) + u8(0x08) + u8(1) + of("x"));
}

void chat_request_seeds() {
    // mode bit 0 clear: [mode][client byte stream]; set: [mode][type u16][body]
    using proto::msg_type;
    std::vector<std::pair<msg_type, bytes>> bodies;
    {
        flatbuffers::FlatBufferBuilder fbb;
        // With a device token (32 bytes), so the optional field is in the corpus from the start.
        std::vector<std::uint8_t> token(32);
        for (std::size_t i = 0; i < token.size(); ++i) token[i] = static_cast<std::uint8_t>(i);
        fbb.Finish(
            proto::Createlogin_req(fbb, fbb.CreateString("alice"), fbb.CreateString("pw"), fbb.CreateVector(token)));
        bodies.emplace_back(msg_type::login_req, finished(fbb));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createcreate_room_req(fbb, fbb.CreateString("r\xc3\xa9sum\xc3\xa9")));
        bodies.emplace_back(msg_type::create_room_req, finished(fbb));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createjoin_room_req(fbb, 0x0100000000000001ull));
        bodies.emplace_back(msg_type::join_room_req, finished(fbb));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createleave_room_req(fbb));
        bodies.emplace_back(msg_type::leave_room_req, finished(fbb));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createchat_req(fbb, fbb.CreateString("hello"), 1700000000000000ull, 7));
        bodies.emplace_back(msg_type::chat_req, finished(fbb));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createlist_rooms_req(fbb));
        bodies.emplace_back(msg_type::list_rooms_req, finished(fbb));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createping_req(fbb, 12345));
        bodies.emplace_back(msg_type::ping_req, finished(fbb));
    }
    // Replies and pushes, as a client reads them.
    {
        flatbuffers::FlatBufferBuilder fbb;
        auto room = proto::Createroom_info(fbb, 9, fbb.CreateString("r"), 2);
        std::vector<flatbuffers::Offset<proto::member_info>> members{
            proto::Createmember_info(fbb, 1, fbb.CreateString("ann"), true, proto::member_role::owner),
            proto::Createmember_info(fbb, 2, fbb.CreateString("ben"), false)};
        fbb.Finish(proto::Createjoin_room_res(fbb, room, fbb.CreateVector(members)));
        bodies.emplace_back(msg_type::join_room_res, finished(fbb));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        std::vector<flatbuffers::Offset<proto::room_info>> rooms{proto::Createroom_info(fbb, 1, fbb.CreateString("a"),
                                                                                        3),
                                                                 proto::Createroom_info(fbb, 2, fbb.CreateString("b"),
                                                                                        0)};
        fbb.Finish(proto::Createlist_rooms_res(fbb, fbb.CreateVector(rooms)));
        bodies.emplace_back(msg_type::list_rooms_res, finished(fbb));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        auto sender = proto::Createplayer_info(fbb, 1, fbb.CreateString("ann"));
        fbb.Finish(proto::Createchat_msg(fbb, 9, 1, sender, 1700000000000000ull, fbb.CreateString("hi"), 5, 6));
        bodies.emplace_back(msg_type::chat_msg, finished(fbb));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createerror_res(fbb, msg_type::chat_req, proto::error_code::rate_limited,
                                          fbb.CreateString("slow down")));
        bodies.emplace_back(msg_type::error_res, finished(fbb));
    }

    bytes session;  // a client's whole conversation in one stream, as the fuzz test sends it
    for (const auto& [type, body] : bodies) {
        const auto t = static_cast<unsigned>(type);
        seed("chat_request", "one_" + std::to_string(t), u8(1) + le16(t) + body);
        seed("chat_request", "one_aligned_" + std::to_string(t), u8(1 | 2) + le16(t) + body);
        if (t < 100 && (t & 1)) session = session + strix_frame(static_cast<std::uint16_t>(t), body, false);
    }
    seed("chat_request", "session_stream", u8(0) + session);
    seed("chat_request", "session_stream_logged_in_aligned", u8(2 | 4) + session);
    seed("chat_request", "unknown_type", u8(0) + strix_frame(999, of("junk"), false));
}

void chat_config_seeds() {
    // The file's contents, as tests/chat/server_cli_test.cpp writes them.
    seed("chat_config", "good",
         of("port = 7000\ndb = \"sqlite:var/deep/er/chat.db\"\nmetrics-port = 0\nshards = 1\npassword-cost = \"fast\"\n"
            "auto-register = false\nchat-burst = 1\nchat-rate = 0.01\nno-pin = true\n"));
    seed("chat_config", "typo", of("port = 0\nprot = 7000\n"));
    seed("chat_config", "no_value", of("port = \n"));
    seed("chat_config", "boolean_for_number", of("port = true\n"));
    seed("chat_config", "nested_config", of("config = \"/tmp/x.toml\"\n"));
    seed("chat_config", "table", of("[server]\nport = 1\n"));
    seed("chat_config", "limits",
         of("# limits\nmax-connections = 10000\nmax-connections-per-address = 256\nlogin-timeout-ms = 10000\n"
            "frame-timeout-ms = 10000\nidle-timeout-ms = 300000\nlogin-queue = 64\nroom-rate = 5.0\nroom-burst = 10\n"
            "notice-delay-ms = 100\nlogin-backoff-ms = 1000\nlogin-lockout-ms = 300000\npoll-spin-us = 0\n"));
    seed("chat_config", "strings_and_arrays",
         of("host = '127.0.0.1'\nunix = \"/tmp/strix.sock\"\ndb = \"postgresql://u@h/db\"\nshards = [1, 2]\n"
            "db-workers = 2\ndb-queue = 65536\nmax-queued = 4194304\nstall-timeout-ms = 5000\n"));
    // Found by this target: CLI11 gave these keys no value and crashed (SIGSEGV) before the fix.
    seed("chat_config", "regress_empty_array", of("host = []\n"));
    seed("chat_config", "regress_unclosed_array", of("chat-rate =[s"));
    seed("chat_config", "bad_values",
         of("chat-rate = 0\nshards = 300\nlogin-free-failures = 20\nlogin-lockout-failures = 3\n"));
}

void metrics_http_seeds() {
    // [max_head u16][bytes from the scraper]
    seed("metrics_http", "scrape", le16(0) + of("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"));
    seed("metrics_http", "half_sent", le16(0) + of("GET /metr"));
    seed("metrics_http", "query", le16(0) + of("GET /metrics?x=1 HTTP/1.1\r\n\r\n"));
    seed("metrics_http", "not_found", le16(0) + of("GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n"));
    seed("metrics_http", "bare_lf_post", le16(0) + of("POST /metrics HTTP/1.0\n\n"));
    seed("metrics_http", "head_method", le16(0) + of("HEAD /metrics HTTP/1.1\r\n\r\n"));
    seed("metrics_http", "too_big", le16(64) + of("GET /metrics HTTP/1.0\r\nX-Junk: " + std::string(80, 'x')));
    seed("metrics_http", "lf_then_crlf", le16(0) + of("GET / HTTP/1.0\n\nmore\r\n\r\n"));
}

void ws_seeds() {
    // [max_frame u16][cut seed u8][bytes]: a client's frames (masked), a server's, the upgrade.
    const bytes mask = u8(0x37) + u8(0xfa) + u8(0x21) + u8(0x3d);
    seed("ws", "masked_text_hello", le16(0) + u8(1) + u8(0x81) + u8(0x85) + mask + of("\x7f\x9f\x4d\x51\x58"));
    seed("ws", "unmasked_text", le16(0) + u8(2) + u8(0x81) + u8(0x05) + of("Hello"));
    seed("ws", "fragments_and_ping",
         le16(0) + u8(3) + u8(0x01) + u8(0x83) + mask + of("abc") + u8(0x89) + u8(0x80) + mask + u8(0x80) + u8(0x82) +
             mask + of("de"));
    seed("ws", "len16",
         le16(0) + u8(4) + u8(0x82) + u8(0xfe) + u8(0x01) + u8(0x00) + mask + bytes(256, std::byte{0x41}));
    seed("ws", "len64_top_bit", le16(0) + u8(5) + u8(0x82) + u8(0xff) + u8(0x80) + bytes(7, std::byte{0}) + mask);
    seed("ws", "len64_too_big",
         le16(1024) + u8(6) + u8(0x82) + u8(0xff) + bytes(4, std::byte{0}) + u8(1) + bytes(3, std::byte{0}));
    seed("ws", "close_1000", le16(0) + u8(7) + u8(0x88) + u8(0x82) + mask + u8(0x03 ^ 0x37) + u8(0xe8 ^ 0xfa));
    seed("ws", "rsv_bits", le16(0) + u8(8) + u8(0xc1) + u8(0x81) + mask + of("x"));
    seed("ws", "utf8_mixed", le16(0) + u8(9) + of("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \xed\xa0\x80"));
    seed("ws", "upgrade",
         le16(0) + u8(10) +
             of("GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                "Origin: http://example.com\r\nSec-WebSocket-Protocol: chat, superchat\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"));
    seed("ws", "response_101",
         le16(0) + u8(11) +
             of("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"));
    seed("ws", "head_too_big", le16(64) + u8(12) + of("GET / HTTP/1.1\r\nX-Junk: " + std::string(80, 'x')));
}

void zmq_api_seeds() {
    // Operations [op u8][arguments]: op & 3 picks msg_* (0), send (1), recv (2), options (3); the
    // rest of op the call (zmq_api_fuzz.cpp). Every msg_* call names two slots first.
    const bytes init_size_0 = u8(1 << 2) + u8(0) + u8(1) + le16(100) + u8('x');
    const bytes init_1 = u8(0) + u8(1) + u8(0);
    seed("zmq_api", "msg_lifecycle",
         init_size_0 + init_1 + u8(3 << 2) + u8(1) + u8(0) +  // copy 0 -> 1
             u8(4 << 2) + u8(2) + u8(1) +                      // move 1 -> 2 (2 never initialised)
             u8(5 << 2) + u8(0) + u8(0) + u8(5 << 2) + u8(0) + u8(0) +  // close 0 twice
             u8(6 << 2) + u8(1) + u8(0) + u8(0) + u8(0) +               // properties of 1
             u8(7 << 2) + u8(1) + u8(0) + u8(7 << 2) + u8(0) + u8(0) +  // data and size of 1 and 0
             u8(2 << 2) + u8(3) + u8(0) + le16(5) + of("hello"));     // init_data 3
    // zmq_send with SNDMORE then an empty last part, a constant, a vector; received with zmq_recv,
    // zmq_msg_recv and zmq_recviov; a poll.
    seed("zmq_api", "pair_multipart",
         u8(1) + u8(0) + u8(1) + le16(3) + of("abc") + u8(1) + u8(0) + u8(0) + le16(0) +  // a -> b: [abc, ""]
             u8(2) + u8(0) + le16(16) + u8(2) + u8(0) + le16(0) +                       // b: zmq_recv twice
             u8((1 << 2) | 1) + u8(1) + u8(0) + u8(10) +                                // b -> a: a constant
             init_1 + u8((1 << 2) | 2) + u8(1) + u8(1) +                                // a: zmq_msg_recv
             u8((3 << 2) | 1) + u8(0) + u8(1) + u8(2) + u8(2) + of("p0") + u8(0) + u8(3) + of("p2x") +
             u8((2 << 2) | 2) + u8(0) + u8(4) +  // b: zmq_recviov
             u8((2 << 2) | 1) + u8(0) + u8(0) + u8(1) + u8((3 << 2) | 2) + u8(0));
    // A ROUTER's routing id set and read back, a SUB's subscription, ints on the pair.
    seed("zmq_api", "options",
         u8(3) + u8(0) + u8(6) + u8(5) + le16(3) + of("abc") + u8((2 << 2) | 3) + u8(0) + u8(5) + le16(32) + u8(3) +
             u8(1) + u8(2) + u8(6) + le16(1) + of("A") + u8(3) + u8(2) + u8(8) + u8(17) + le16(4) + le32(250) +
             u8((2 << 2) | 3) + u8(2) + u8(17) + le16(4) + u8((3 << 2) | 3) + u8(3) + le16(5) + u8(0));
}

// [max_head u16][max_body u16][piece seed u8][bytes]: the requests of tests/net/http_server_test.cpp.
void http_seeds() {
    const bytes dflt = le16(0) + le16(0) + u8(7);
    seed("http", "get", dflt + of("GET /api/v1/rooms HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer k\r\n\r\n"));
    seed("http", "pipelined",
         dflt + of("GET /api/v1/rooms/7/history?after_seq=3&limit=2 HTTP/1.1\r\nHost: t\r\n\r\n"
                   "HEAD /api/v1/rooms/a%2Fb HTTP/1.1\r\n\r\n"
                   "GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    seed("http", "post_length",
         dflt + of("POST /api/v1/users/u/messages HTTP/1.1\r\nContent-Length: 13\r\n\r\n"
                   "{\"text\":\"hi\"}"));
    seed("http", "chunked",
         dflt + of("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"
                   "4;ext=1\r\ndefg\r\n0\r\nTrailer: x\r\n\r\n"));
    seed("http", "expect", dflt + of("PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok"));
    seed("http", "head_limit",
         le16(64) + le16(0) + u8(3) + of("GET /hello HTTP/1.1\r\nX-Big: " + std::string(80, 'a') + "\r\n\r\n"));
    seed("http", "body_limit",
         le16(0) + le16(8) + u8(3) + of("POST /echo HTTP/1.1\r\nContent-Length: 9\r\n\r\n123456789"));
    seed("http", "both_lengths",
         dflt + of("GET /x HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"));
    seed("http", "upgrade", dflt + of("GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nrest"));
    seed("http", "http2", dflt + of("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
    seed("http", "unknown_method", dflt + of("FROB /x HTTP/1.1\r\n\r\n"));
    seed("http", "json_body",
         dflt + of("POST /api/v1/rooms/5/messages HTTP/1.1\r\nContent-Type: application/json\r\n"
                   "Content-Length: 72\r\n\r\n{\"text\":\"h\\u00e9\",\"from\":\"ops\",\"idempotency_key\":"
                   "\"k-1\",\"n\":[1,2.5,null]}"));
    seed("http", "json_wrong_type",
         dflt + of("POST /api/v1/rooms HTTP/1.1\r\nContent-Type: text/plain\r\n"
                   "Content-Length: 2\r\n\r\n{}"));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR (fuzz/corpus)\n", argv[0]);
        return 2;
    }
    root = argv[1];
    frame_decoder_seeds();
    framers_seeds();
    zmtp_seeds();
    chat_request_seeds();
    chat_config_seeds();
    metrics_http_seeds();
    ws_seeds();
    zmq_api_seeds();
    http_seeds();
    std::printf("strix fuzz: wrote %d seeds under %s\n", written, root.c_str());
    return 0;
}
