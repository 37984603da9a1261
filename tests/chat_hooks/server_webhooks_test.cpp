// Webhooks through a real strix-chat-server: a receiver that is down for 5 s and then back gets
// every event at least once, in order per room; a receiver that never answers fills the bounded
// queue and the drops are counted in /metrics; a server given --webhook-url without a secret
// refuses to start.

#include "chat_hooks/hook_receiver.hpp"

#include "chat/chat_fixture.hpp"
#include "chat/metrics_scrape.hpp"

#include "apps/chat/server/hooks/hook_signature.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ctime>
#include <map>
#include <set>

namespace strix::test {
namespace {

using namespace std::chrono_literals;

const std::string secret = "e2e-webhook-secret-0123456789abcdef";

template <class F>
bool eventually(F done, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
        if (done()) return true;
        std::this_thread::sleep_for(10ms);
    }
    return done();
}

std::string write_secret(const temp_dir& dir) {
    const std::string path = dir.path() + "/webhook.secret";
    std::ofstream(path) << secret << "\n";
    return path;
}

// The distinct events received (first copy of each id, in arrival order); every request's
// signature must check.
std::vector<nlohmann::json> distinct_events(const hook_receiver& rx) {
    std::vector<nlohmann::json> out;
    std::set<std::string> seen;
    for (const hook_request& q : rx.requests()) {
        EXPECT_TRUE(chat::hook_signature_valid(secret, std::stoll(q.headers.at("x-strix-timestamp")), q.body,
                                               q.headers.at("x-strix-signature"), std::time(nullptr), 300));
        const nlohmann::json batch = nlohmann::json::parse(q.body);  // outlives the loop below
        for (const auto& ev : batch.at("events"))
            if (seen.insert(ev.at("id").get<std::string>()).second) out.push_back(ev);
    }
    return out;
}

// "type user" or "type user seq", per room id (0: user events).
std::map<std::uint64_t, std::vector<std::string>> by_room(const std::vector<nlohmann::json>& events) {
    std::map<std::uint64_t, std::vector<std::string>> out;
    for (const auto& ev : events) {
        const std::uint64_t room = ev.contains("room") ? ev["room"]["id"].get<std::uint64_t>() : 0;
        std::string line = ev["type"].get<std::string>();
        if (ev.contains("user")) line += " " + ev["user"]["name"].get<std::string>();
        if (ev.contains("seq"))
            line += " " + std::to_string(ev["seq"].get<std::uint64_t>()) + " " + ev["text"].get<std::string>();
        out[room].push_back(line);
    }
    return out;
}

TEST(ServerWebhooks, ReceiverDownFiveSecondsThenBackGetsEveryEventInOrderPerRoom) {
    temp_dir dir;
    hook_receiver rx([](const hook_request&) { return hook_response{}; });
    rx.start();
    const std::uint16_t port = rx.port();
    rx.stop();  // down from the start
    const auto down_at = std::chrono::steady_clock::now();
    server_process srv("sqlite:" + dir.path() + "/chat.db", dir.path() + "/server.log", 2,
                       {"--webhook-url", rx.url(), "--webhook-secret", write_secret(dir), "--webhook-messages",
                        "support-*", "--webhook-backoff-ms", "50", "--webhook-backoff-max-ms", "400"});
    ASSERT_TRUE(srv.ready()) << srv.log();
    std::uint64_t support = 0, general = 0;
    {
        chat_client a(srv.port()), b(srv.port()), c(srv.port());
        a.login("ann");
        b.login("ben");
        support = a.create("support-1");
        general = b.create("general");
        for (int i = 1; i <= 3; ++i) {
            a.send_chat("help " + std::to_string(i));
            a.expect_chat();
        }
        b.send_chat("not sent as a webhook");
        b.expect_chat();
        c.login("cat");
        c.join(support);
        c.send_leave();
        c.expect(proto::msg_type::leave_room_res);
        b.send_leave();  // the last member: general is deleted
        b.expect(proto::msg_type::leave_room_res);
        a.send_chat("help 4");
    }  // the clients disconnect: user.offline for each
    std::this_thread::sleep_until(down_at + 5s);
    EXPECT_TRUE(rx.requests().empty());
    rx.start(port);  // back
    // 3 online + 3 offline, support-1: created, joined, 4 messages, cat joined and left;
    // general: created, joined, left, deleted.
    ASSERT_TRUE(eventually([&] { return distinct_events(rx).size() == 6 + 8 + 4; }, 10s))
        << distinct_events(rx).size() << " events in " << rx.requests().size()
        << " requests: " << (rx.requests().empty() ? std::string() : rx.requests().front().body) << "\n"
        << srv.log();
    auto rooms = by_room(distinct_events(rx));
    EXPECT_EQ(rooms[support],
              (std::vector<std::string>{"room.created ann", "member.joined ann", "message.stored ann 1 help 1",
                                        "message.stored ann 2 help 2", "message.stored ann 3 help 3",
                                        "member.joined cat", "member.left cat", "message.stored ann 4 help 4"}));
    EXPECT_EQ(rooms[general],
              (std::vector<std::string>{"room.created ben", "member.joined ben", "member.left ben", "room.deleted"}));
    std::multiset<std::string> users(rooms[0].begin(), rooms[0].end());
    EXPECT_EQ(users, (std::multiset<std::string>{"user.online ann", "user.online ben", "user.online cat",
                                                 "user.offline ann", "user.offline ben", "user.offline cat"}));
    EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST(ServerWebhooks, ReceiverThatNeverAnswersFillsTheQueueAndDropsAreCounted) {
    temp_dir dir;
    hook_receiver rx([](const hook_request&) { return hook_response{.hang = true}; });
    rx.start();
    const std::uint16_t metrics = free_port();
    server_process srv("sqlite:" + dir.path() + "/chat.db", dir.path() + "/server.log", 2,
                       {"--webhook-url", rx.url(), "--webhook-secret", write_secret(dir), "--webhook-queue", "8",
                        "--webhook-batch", "2", "--webhook-timeout-ms", "60000", "--webhook-drain-ms", "200",
                        "--metrics-port", std::to_string(metrics)});
    ASSERT_TRUE(srv.ready()) << srv.log();
    {
        chat_client a(srv.port());
        a.login("ann");
        for (int i = 0; i < 10; ++i) {
            a.create("room-" + std::to_string(i));  // room.created + member.joined
            a.send_leave();                          // member.left + room.deleted
            a.expect(proto::msg_type::leave_room_res);
        }
    }
    // 1 + 40 + 1 events, 8 of them held (2 in flight, 6 waiting), the rest dropped.
    ASSERT_TRUE(eventually(
        [&] { return metric_value(http_get(metrics, "/metrics"), "strix_webhook_events_dropped_total") == 42 - 8; },
        5s))
        << http_get(metrics, "/metrics");
    const std::string m = http_get(metrics, "/metrics");
    EXPECT_EQ(metric_value(m, "strix_webhook_events_queued_total"), 8);
    EXPECT_EQ(metric_value(m, "strix_webhook_queue_depth"), 8);
    EXPECT_EQ(metric_value(m, "strix_webhook_events_delivered_total"), 0);
    // The first batch, never answered (the receiver may finish reading it after the counters moved).
    EXPECT_TRUE(eventually([&] { return rx.requests().size() == 1u; }, 5s)) << rx.requests().size();
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(srv.stop(), 0) << srv.log();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);  // the drain time bounds the shutdown
    EXPECT_NE(srv.log().find("webhooks: 8 events left undelivered at shutdown"), std::string::npos) << srv.log();
}

TEST(ServerWebhooks, UrlWithoutSecretRefusesToStart) {
    temp_dir dir;
    server_process srv("sqlite:" + dir.path() + "/chat.db", dir.path() + "/server.log", 1,
                       {"--webhook-url", "http://127.0.0.1:9/hook"});
    EXPECT_FALSE(srv.ready());
    EXPECT_NE(srv.log().find("--webhook-secret"), std::string::npos) << srv.log();
}

}  // namespace
}  // namespace strix::test
