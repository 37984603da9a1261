// docs/protocol.md cannot drift from the code: its byte-exact examples are what the encoder
// produces and what a running server answers, and every message type and error code of the
// schema is documented.
#include "chat_fixture.hpp"

#include "apps/chat/server/net/frames.hpp"

#include <filesystem>
#include <sstream>

using namespace strix;
using namespace strix::chat;
using namespace strix::test;
using proto::msg_type;

namespace {

std::string protocol_doc() {
    auto path = std::filesystem::path(STRIX_SOURCE_DIR) / "docs" / "protocol.md";
    auto text = read_file(path.string());
    EXPECT_FALSE(text.empty()) << "cannot read " << path;
    return text;
}

/// The bytes of the fenced block that follows `<!-- frame: NAME -->` in the doc.
std::vector<std::byte> doc_frame(const std::string& doc, const std::string& name) {
    auto marker = "<!-- frame: " + name + " -->";
    auto pos = doc.find(marker);
    if (pos == std::string::npos) {
        ADD_FAILURE() << "docs/protocol.md has no example marked '" << marker << "'";
        return {};
    }
    auto open = doc.find("```", pos);
    auto body = doc.find('\n', open) + 1;
    auto close = doc.find("```", body);
    std::vector<std::byte> out;
    std::istringstream hex(doc.substr(body, close - body));
    std::string tok;
    while (hex >> tok) out.push_back(static_cast<std::byte>(std::stoul(tok, nullptr, 16)));
    return out;
}

/// True if the doc has a table row starting "| <number> | `<name>` |".
bool has_row(const std::string& doc, unsigned number, const std::string& name) {
    std::istringstream in(doc);
    std::string line;
    auto trim = [](std::string s) {
        auto b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
        return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    };
    while (std::getline(in, line)) {
        if (line.empty() || line[0] != '|') continue;
        std::vector<std::string> cells;
        std::size_t pos = 1;
        while (pos < line.size()) {
            auto bar = line.find('|', pos);
            if (bar == std::string::npos) break;
            cells.push_back(trim(line.substr(pos, bar - pos)));
            pos = bar + 1;
        }
        if (cells.size() >= 2 && cells[0] == std::to_string(number) && cells[1] == "`" + name + "`") return true;
    }
    return false;
}

std::vector<std::byte> bytes_of(const shared_buffer_ptr& b) { return {b->data(), b->data() + b->size()}; }

TEST(protocol_doc, examples_are_what_the_encoder_produces) {
    auto doc = protocol_doc();
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createping_req(fbb, 1));
        EXPECT_EQ(bytes_of(chat::finish_frame(fbb, msg_type::ping_req)), doc_frame(doc, "ping_req ts=1"));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createpong_res(fbb, 1));
        EXPECT_EQ(bytes_of(chat::finish_frame(fbb, msg_type::pong_res)), doc_frame(doc, "pong_res ts=1"));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createleave_room_req(fbb));
        EXPECT_EQ(bytes_of(chat::finish_frame(fbb, msg_type::leave_room_req)), doc_frame(doc, "leave_room_req"));
    }
    // The device token examples: tokens 00 01 ... 1f.
    std::uint8_t token[32];
    for (int i = 0; i < 32; ++i) token[i] = static_cast<std::uint8_t>(i);
    {
        flatbuffers::FlatBufferBuilder fbb;
        auto n = fbb.CreateString("ann");
        auto p = fbb.CreateString("pw");
        auto t = fbb.CreateVector(token, 32);
        fbb.Finish(proto::Createlogin_req(fbb, n, p, t));
        EXPECT_EQ(bytes_of(chat::finish_frame(fbb, msg_type::login_req)), doc_frame(doc, "login_req ann pw token"));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        auto n = fbb.CreateString("ann");
        auto p = fbb.CreateString("pw");
        fbb.Finish(proto::Createlogin_req(fbb, n, p));
        EXPECT_EQ(bytes_of(chat::finish_frame(fbb, msg_type::login_req)), doc_frame(doc, "login_req ann pw"));
    }
    {
        device_token t;
        std::memcpy(t.bytes.data(), token, 32);
        EXPECT_EQ(bytes_of(frames::login_res(7, "ann", false, &t)), doc_frame(doc, "login_res 7 ann token"));
    }
    {
        // The old client's login_req reads as one without a token; the login_res decodes as
        // documented.
        auto old = doc_frame(doc, "login_req ann pw");
        auto* r = chat::body_as<proto::login_req>(std::span<const std::byte>(old.data(), old.size()));
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(r->name()->str(), "ann");
        EXPECT_EQ(r->device_token(), nullptr);
        auto res = doc_frame(doc, "login_res 7 ann token");
        auto* l = chat::body_as<proto::login_res>(std::span<const std::byte>(res.data(), res.size()));
        ASSERT_NE(l, nullptr);
        EXPECT_EQ(l->player()->id(), 7u);
        EXPECT_FALSE(l->created());
        ASSERT_NE(l->device_token(), nullptr);
        ASSERT_EQ(l->device_token()->size(), 32u);
        EXPECT_EQ(l->device_token()->Get(31), 31);
    }
    {
        // The WebSocket examples: the frames inside masked client frames (the test client's key)
        // and an unmasked server frame.
        auto wrap = [](const std::vector<std::byte>& f) { return ws::encode(ws::binary, f.data(), f.size()); };
        EXPECT_EQ(wrap(doc_frame(doc, "login_req ann pw")), doc_frame(doc, "ws login_req ann pw"));
        EXPECT_EQ(wrap(doc_frame(doc, "ping_req ts=1")), doc_frame(doc, "ws ping_req ts=1"));
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createpong_res(fbb, 1));
        EXPECT_EQ(bytes_of(frames::ws_message(chat::finish_frame(fbb, msg_type::pong_res))),
                  doc_frame(doc, "ws pong_res ts=1"));
    }
    // And the documented bytes decode as documented.
    auto ping = doc_frame(doc, "ping_req ts=1");
    ASSERT_EQ(ping.size(), 36u);
    auto span = std::span<const std::byte>(ping.data(), ping.size());
    EXPECT_EQ(chat::type_of(span), msg_type::ping_req);
    auto* p = chat::body_as<proto::ping_req>(span);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->ts(), 1u);
}

TEST(protocol_doc, a_running_server_answers_the_documented_ping_and_logins) {
    auto doc = protocol_doc();
    temp_dir dir;
    server_process srv("sqlite:" + dir.path() + "/chat.db", dir.path() + "/server.log");
    ASSERT_TRUE(srv.ready()) << srv.log();
    chat_client c(srv.port());
    ASSERT_TRUE(c.send_raw(doc_frame(doc, "ping_req ts=1")));
    auto f = c.recv();
    ASSERT_TRUE(f);
    EXPECT_EQ(f->bytes, doc_frame(doc, "pong_res ts=1"));
    // Both documented logins get in: the old client's, and the one whose token the server does
    // not know (an ordinary login). The second is a new session of the same account.
    for (const char* example : {"login_req ann pw", "login_req ann pw token"}) {
        chat_client l(srv.port());
        ASSERT_TRUE(l.send_raw(doc_frame(doc, example)));
        auto res = l.expect(msg_type::login_res);
        auto* r = res.as<proto::login_res>();
        ASSERT_NE(r, nullptr) << example;
        EXPECT_EQ(r->player()->name()->str(), "ann");
        ASSERT_NE(r->device_token(), nullptr) << example;
        EXPECT_EQ(r->device_token()->size(), 32u);
    }
    EXPECT_EQ(srv.stop(), 0);
}

TEST(protocol_doc, a_running_server_answers_the_documented_websocket_frames) {
    auto doc = protocol_doc();
    temp_dir dir;
    server_process srv("sqlite:" + dir.path() + "/chat.db", dir.path() + "/server.log", 2, {"--ws-port", "0"});
    ASSERT_TRUE(srv.ready()) << srv.log();
    chat_client c;
    ASSERT_TRUE(c.connect_ws(srv.ws_port())) << c.upgrade_reply().head;
    // Raw bytes after the upgrade: exactly the documented server frame comes back.
    ASSERT_TRUE(c.send_raw(doc_frame(doc, "ws ping_req ts=1")));
    const auto want = doc_frame(doc, "ws pong_res ts=1");
    std::vector<std::byte> got(want.size());
    ASSERT_TRUE(recv_exact(c.fd(), got.data(), got.size()));
    EXPECT_EQ(got, want);
    ASSERT_TRUE(c.send_raw(doc_frame(doc, "ws login_req ann pw")));
    auto res = c.expect(msg_type::login_res);
    auto* r = res.as<proto::login_res>();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->player()->name()->str(), "ann");
    EXPECT_EQ(srv.stop(), 0);
}

TEST(protocol_doc, every_message_type_and_error_code_is_documented) {
    auto doc = protocol_doc();
    for (auto t : proto::EnumValuesmsg_type()) {
        std::string name = proto::EnumNamemsg_type(t);
        if (t == msg_type::none) continue;
        EXPECT_TRUE(has_row(doc, static_cast<unsigned>(t), name))
            << "msg_type " << name << " is missing from the message table";
    }
    for (auto e : proto::EnumValueserror_code()) {
        std::string name = proto::EnumNameerror_code(e);
        if (e == proto::error_code::none) continue;
        EXPECT_TRUE(has_row(doc, static_cast<unsigned>(e), name))
            << "error_code " << name << " is missing from the error table";
    }
}

}  // namespace
