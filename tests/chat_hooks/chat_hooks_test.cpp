// chat_hooks: presence counting (user.online at an account's first session, user.offline at its
// last), the --webhook-messages filter, and a short secret refusing to start.

#include "chat_hooks/hook_receiver.hpp"

#include "apps/chat/server/hooks/chat_hooks.hpp"

#include <support/loopback.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace strix::chat {
namespace {

std::vector<std::string> received(const test::hook_receiver& rx) {
    std::vector<std::string> out;
    for (const test::hook_request& q : rx.requests()) {
        const nlohmann::json batch = nlohmann::json::parse(q.body);
        for (const auto& ev : batch.at("events"))
            out.push_back(ev.at("type").get<std::string>() + " " + ev.at("user").at("name").get<std::string>());
    }
    return out;
}

TEST(ChatHooks, OnlineAtTheFirstSessionOfflineAtTheLast) {
    test::temp_dir dir;
    std::ofstream(dir.path() + "/secret") << "chat-hooks-secret-0123456789\n";
    test::hook_receiver rx([](const test::hook_request&) { return test::hook_response{}; });
    rx.start();
    hook_options o;
    o.webhook_url = rx.url();
    o.secret_file = dir.path() + "/secret";
    o.messages_pattern = "support-*";
    {
        chat_hooks hooks(o, 4, 60000);
        ASSERT_NE(hooks.webhooks(), nullptr);
        EXPECT_EQ(hooks.publish(), nullptr);
        EXPECT_EQ(hooks.presence_shard(7), 3u);
        hooks.session_up(7, "ann");
        hooks.session_up(7, "ann");  // a second device: nothing new
        hooks.session_up(8, "ben");
        hooks.session_down(7);  // one of ann's two
        hooks.session_down(8);
        hooks.session_down(7);
        hooks.session_down(9);  // never up: nothing
        EXPECT_TRUE(hooks.wants_messages("support-1"));
        EXPECT_FALSE(hooks.wants_messages("general"));
        EXPECT_EQ(hooks.stop(), 0u);
    }
    EXPECT_EQ(received(rx),
              (std::vector<std::string>{"user.online ann", "user.online ben", "user.offline ben", "user.offline ann"}));
}

TEST(ChatHooks, ShortSecretRefusesToStart) {
    test::temp_dir dir;
    std::ofstream(dir.path() + "/secret") << "too-short\n";
    hook_options o;
    o.webhook_url = "http://127.0.0.1:9/hook";
    o.secret_file = dir.path() + "/secret";
    EXPECT_THROW(chat_hooks(o, 1, 60000), std::runtime_error);
}

}  // namespace
}  // namespace strix::chat
