// docs/protocol.md cannot drift from the code: its byte-exact examples are what the encoder
// produces and what a running server answers, and every message type and error code of the
// schema is documented.
#include "chat_fixture.hpp"

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
    // And the documented bytes decode as documented.
    auto ping = doc_frame(doc, "ping_req ts=1");
    ASSERT_EQ(ping.size(), 36u);
    auto span = std::span<const std::byte>(ping.data(), ping.size());
    EXPECT_EQ(chat::type_of(span), msg_type::ping_req);
    auto* p = chat::body_as<proto::ping_req>(span);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->ts(), 1u);
}

TEST(protocol_doc, a_running_server_answers_the_documented_ping_with_the_documented_pong) {
    auto doc = protocol_doc();
    temp_dir dir;
    server_process srv("sqlite:" + dir.path() + "/chat.db", dir.path() + "/server.log");
    ASSERT_TRUE(srv.ready()) << srv.log();
    chat_client c(srv.port());
    ASSERT_TRUE(c.send_raw(doc_frame(doc, "ping_req ts=1")));
    auto f = c.recv();
    ASSERT_TRUE(f);
    EXPECT_EQ(f->bytes, doc_frame(doc, "pong_res ts=1"));
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
