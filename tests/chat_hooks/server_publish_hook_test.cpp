// The publish hook through a real strix-chat-server: the backend accepts, rejects and rewrites
// chat messages before they are stored and delivered; a backend that is down refuses messages
// with fail-closed (the default) and lets them through with fail-open.

#include "chat_hooks/hook_receiver.hpp"

#include "chat/chat_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace strix::test {
namespace {

using namespace std::chrono_literals;

std::string write_secret(const temp_dir& dir) {
    const std::string path = dir.path() + "/hook.secret";
    std::ofstream(path) << "publish-hook-e2e-secret-0123456789\n";
    return path;
}

hook_response backend(const hook_request& q) {
    const std::string text = nlohmann::json::parse(q.body).at("text");
    if (text == "buy now") return {.body = R"({"action":"reject","reason":"no ads"})"};
    if (text.find("darn") != std::string::npos) return {.body = R"({"action":"rewrite","text":"d**n"})"};
    return {.body = R"({"action":"accept"})"};
}

TEST(ServerPublishHook, AcceptRejectRewriteReachTheMembers) {
    temp_dir dir;
    hook_receiver rx(backend);
    rx.start();
    server_process srv("sqlite:" + dir.path() + "/chat.db", dir.path() + "/server.log", 2,
                       {"--publish-hook-url", rx.url(), "--webhook-secret", write_secret(dir)});
    ASSERT_TRUE(srv.ready()) << srv.log();
    chat_client a(srv.port()), b(srv.port());
    a.login("ann");
    b.login("ben");
    const std::uint64_t room = a.create("lobby");
    b.join(room);
    a.expect_member_event(proto::msg_type::member_joined, room, "ben");
    a.send_chat("hello", 1);
    a.send_chat("buy now", 2);  // waits behind the first: order is kept
    a.send_chat("oh darn", 3);
    // The messages are stored in the order sent; the refusal may overtake the first one's
    // acknowledgement (which waits for the database), as any chat_req error may.
    std::vector<std::string> acks;
    int refusals = 0;
    for (int i = 0; i < 3; ++i) {
        auto f = a.recv();
        ASSERT_TRUE(f);
        if (f->type == proto::msg_type::error_res) {
            EXPECT_EQ(f->as<proto::error_res>()->code(), proto::error_code::forbidden);
            EXPECT_EQ(f->as<proto::error_res>()->reason()->str(), "refused by the application: no ads");
            ++refusals;
        } else {
            ASSERT_EQ(f->type, proto::msg_type::chat_msg);
            acks.push_back(f->as<proto::chat_msg>()->text()->str());
        }
    }
    EXPECT_EQ(refusals, 1);
    EXPECT_EQ(acks, (std::vector<std::string>{"hello", "d**n"}));
    EXPECT_EQ(b.expect_chat().text, "hello");
    EXPECT_EQ(b.expect_chat().text, "d**n");  // the rejected one never reached ben
    b.expect_nothing();
    EXPECT_EQ(rx.requests().size(), 3u);
    EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST(ServerPublishHook, BackendDownFailClosedRefusesFailOpenStores) {
    temp_dir dir;
    const std::string down = "http://127.0.0.1:" + std::to_string(free_port()) + "/hook";
    for (const bool open : {false, true}) {
        server_process srv("sqlite:" + dir.path() + "/chat" + std::to_string(open) + ".db",
                           dir.path() + "/server" + std::to_string(open) + ".log", 1,
                           {"--publish-hook-url", down, "--webhook-secret", write_secret(dir), "--publish-hook-failure",
                            open ? "open" : "closed"});
        ASSERT_TRUE(srv.ready()) << srv.log();
        chat_client a(srv.port());
        a.login("ann");
        a.create("lobby");
        a.send_chat("anyone?");
        if (open)
            EXPECT_EQ(a.expect_chat().text, "anyone?");
        else
            a.expect_error(proto::msg_type::chat_req, proto::error_code::server_busy);
        EXPECT_EQ(srv.stop(), 0) << srv.log();
    }
}

}  // namespace
}  // namespace strix::test
