// The publish hook against a backend started here: accept, reject and rewrite; a backend that is
// slow, down, answers non-2xx or nonsense, under the fail-closed (default) and fail-open
// policies; the request is signed and carries the message.

#include "chat_hooks/hook_receiver.hpp"

#include "apps/chat/server/hooks/hook_signature.hpp"
#include "apps/chat/server/hooks/publish_hook.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <future>

namespace strix::chat {
namespace {

using namespace std::chrono_literals;
using test::hook_receiver;
using test::hook_request;
using test::hook_response;

const std::string secret = "publish-secret-0123456789";

publish_request message(std::string text) {
    publish_request r;
    r.room = 513;
    r.room_name = "support-2";
    r.user = 7;
    r.user_name = "grace";
    r.text = std::move(text);
    return r;
}

// Submits and waits for the verdict (as a shard would get it posted back).
publish_verdict judge(publish_hook& hook, publish_request req) {
    std::promise<publish_verdict> p;
    auto f = p.get_future();
    hook.submit(std::move(req), [&p](publish_verdict v) { p.set_value(std::move(v)); });
    EXPECT_EQ(f.wait_for(5s), std::future_status::ready);
    return f.get();
}

// A backend whose verdict depends on the text: "ok" accepts, "bad" rejects, "rude" is rewritten,
// "slow" answers after a second, "500" answers 500, "junk" answers something else.
hook_response backend(const hook_request& q) {
    const auto j = nlohmann::json::parse(q.body);
    const std::string text = j["text"];
    if (text == "bad") return {.body = R"({"action":"reject","reason":"no spam here"})"};
    if (text == "rude") return {.body = R"({"action":"rewrite","text":"r**e"})"};
    if (text == "slow") return {.body = R"({"action":"accept"})", .delay = 1000ms};
    if (text == "500") return {.status = 500, .body = "oops"};
    if (text == "junk") return {.body = "<html>"};
    return {.body = R"({"action":"accept"})"};
}

publish_hook_config config_for(const std::string& url, bool fail_open) {
    publish_hook_config c;
    c.url = url;
    c.secret = secret;
    c.timeout = 300ms;
    c.fail_open = fail_open;
    c.workers = 2;
    return c;
}

TEST(PublishHook, AcceptRejectRewrite) {
    hook_receiver rx(backend);
    rx.start();
    publish_hook hook(config_for(rx.url(), false));
    publish_verdict v = judge(hook, message("ok"));
    EXPECT_EQ(v.act, publish_verdict::action::accept);
    EXPECT_FALSE(v.hook_failed);
    v = judge(hook, message("bad"));
    EXPECT_EQ(v.act, publish_verdict::action::reject);
    EXPECT_EQ(v.reason, "no spam here");
    EXPECT_FALSE(v.hook_failed);
    v = judge(hook, message("rude"));
    EXPECT_EQ(v.act, publish_verdict::action::rewrite);
    EXPECT_EQ(v.text, "r**e");
    const publish_hook_stats s = hook.stats();
    EXPECT_EQ(s.accepted, 1u);
    EXPECT_EQ(s.rejected, 1u);
    EXPECT_EQ(s.rewritten, 1u);
    EXPECT_EQ(s.failures, 0u);
    // What the backend received: signed, with the message and who sent it where.
    const auto reqs = rx.requests();
    ASSERT_EQ(reqs.size(), 3u);
    const hook_request& q = reqs[0];
    EXPECT_TRUE(hook_signature_valid(secret, std::stoll(q.headers.at("x-strix-timestamp")), q.body,
                                     q.headers.at("x-strix-signature"), std::time(nullptr), 300));
    const auto j = nlohmann::json::parse(q.body);
    EXPECT_EQ(j["type"], "message.publish");
    EXPECT_EQ(j["room"]["id"], 513);
    EXPECT_EQ(j["room"]["name"], "support-2");
    EXPECT_EQ(j["user"]["name"], "grace");
    EXPECT_EQ(j["text"], "ok");
    EXPECT_NE(j["id"], nlohmann::json::parse(reqs[1].body)["id"]);
}

TEST(PublishHook, FailClosedRefusesWhenTheHookFails) {
    hook_receiver rx(backend);
    rx.start();
    publish_hook hook(config_for(rx.url(), false));
    const auto t0 = std::chrono::steady_clock::now();
    publish_verdict v = judge(hook, message("slow"));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 900ms);  // the timeout, not the backend's second
    EXPECT_TRUE(v.hook_failed);
    EXPECT_EQ(v.act, publish_verdict::action::reject);
    EXPECT_NE(v.reason.find("in time"), std::string::npos);
    v = judge(hook, message("500"));
    EXPECT_TRUE(v.hook_failed);
    EXPECT_EQ(v.act, publish_verdict::action::reject);
    EXPECT_NE(v.reason.find("500"), std::string::npos);
    v = judge(hook, message("junk"));
    EXPECT_TRUE(v.hook_failed);
    EXPECT_EQ(v.act, publish_verdict::action::reject);
    rx.stop();  // down
    v = judge(hook, message("ok"));
    EXPECT_TRUE(v.hook_failed);
    EXPECT_EQ(v.act, publish_verdict::action::reject);
    EXPECT_NE(v.reason.find("unreachable"), std::string::npos);
    const publish_hook_stats s = hook.stats();
    EXPECT_EQ(s.failures, 4u);
    EXPECT_EQ(s.timeouts, 1u);
    EXPECT_EQ(s.accepted + s.rejected + s.rewritten, 0u);
}

TEST(PublishHook, FailOpenAcceptsWhenTheHookFails) {
    hook_receiver rx(backend);
    rx.start();
    publish_hook hook(config_for(rx.url(), true));
    publish_verdict v = judge(hook, message("slow"));
    EXPECT_TRUE(v.hook_failed);
    EXPECT_EQ(v.act, publish_verdict::action::accept);
    v = judge(hook, message("500"));
    EXPECT_EQ(v.act, publish_verdict::action::accept);
    // A verdict the backend did give still counts under fail-open.
    v = judge(hook, message("bad"));
    EXPECT_FALSE(v.hook_failed);
    EXPECT_EQ(v.act, publish_verdict::action::reject);
    rx.stop();
    v = judge(hook, message("ok"));
    EXPECT_TRUE(v.hook_failed);
    EXPECT_EQ(v.act, publish_verdict::action::accept);
}

TEST(PublishHook, AnswersAreReadStrictly) {
    publish_hook hook(config_for("http://127.0.0.1:9/unused", false));
    hook.stop();
    EXPECT_EQ(hook.parse_answer(R"({"action":"accept"})").act, publish_verdict::action::accept);
    EXPECT_EQ(hook.parse_answer(R"({"action":"reject"})").reason, "refused by the application");
    EXPECT_TRUE(hook.parse_answer(R"({"action":"rewrite"})").hook_failed);             // no text
    EXPECT_TRUE(hook.parse_answer(R"({"action":"rewrite","text":""})").hook_failed);   // empty
    EXPECT_TRUE(hook.parse_answer(R"({"action":"rewrite","text":")" + std::string(5000, 'x') + "\"}").hook_failed);
    EXPECT_TRUE(hook.parse_answer(R"({"action":"maybe"})").hook_failed);
    EXPECT_TRUE(hook.parse_answer(R"(["accept"])").hook_failed);
    EXPECT_TRUE(hook.parse_answer("").hook_failed);
    // After stop() a submission is answered at once, under the policy.
    publish_verdict v = judge(hook, message("ok"));
    EXPECT_TRUE(v.hook_failed);
    EXPECT_EQ(v.act, publish_verdict::action::reject);
}

// More questions at once than workers: each waits its turn, and the time limit runs from
// submit(), so three slow answers behind one worker take about one limit, not three.
TEST(PublishHook, TimeLimitRunsFromSubmit) {
    hook_receiver rx(backend);
    rx.start();
    publish_hook_config c = config_for(rx.url(), false);
    c.workers = 1;
    c.timeout = 600ms;  // the backend's "slow" takes 1000 ms
    publish_hook hook(c);
    std::vector<std::future<publish_verdict>> verdicts;
    std::vector<std::promise<publish_verdict>> promises(3);
    const auto t0 = std::chrono::steady_clock::now();
    for (auto& p : promises) {
        verdicts.push_back(p.get_future());
        hook.submit(message("slow"), [&p](publish_verdict v) { p.set_value(std::move(v)); });
    }
    for (auto& f : verdicts) {
        ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
        EXPECT_TRUE(f.get().hook_failed);
    }
    // Limits counted from each one's turn would take 1800 ms.
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
    EXPECT_EQ(hook.stats().timeouts, 3u);
}

}  // namespace
}  // namespace strix::chat
