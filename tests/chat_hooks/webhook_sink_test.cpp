// The webhook sender against a receiver started here: signatures, batches in order, a receiver
// down for a while and then back (every event at least once, in order per room), a receiver that
// never answers (the bounded queue fills, drops are counted), and the drain at shutdown.

#include "chat_hooks/hook_receiver.hpp"

#include "apps/chat/server/hooks/hook_options.hpp"
#include "apps/chat/server/hooks/hook_signature.hpp"
#include "apps/chat/server/hooks/webhook_sink.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <thread>

namespace strix::chat {
namespace {

using namespace std::chrono_literals;
using test::hook_receiver;
using test::hook_request;
using test::hook_response;

const std::string secret = "whsec-example-0123456789";

// Polls `done` for up to `limit`.
template <class F>
bool eventually(F done, std::chrono::milliseconds limit = 10s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
        if (done()) return true;
        std::this_thread::sleep_for(5ms);
    }
    return done();
}

webhook_event member_event(std::uint64_t room, std::uint64_t n) {
    webhook_event ev;
    ev.kind = webhook_kind::member_joined;
    ev.room = room;
    ev.room_name = "room-" + std::to_string(room);
    ev.user = n;
    ev.user_name = "user" + std::to_string(n);
    return ev;
}

webhook_sink_config config_for(const hook_receiver& r) {
    webhook_sink_config c;
    c.url = r.url();
    c.secret = secret;
    c.timeout = 2s;
    c.backoff = 20ms;
    c.backoff_max = 200ms;
    c.drain = 2s;
    return c;
}

// Every event the receiver got, in arrival order (duplicates included), from requests whose
// signature checks out; a request that does not check fails the test.
std::vector<nlohmann::json> received_events(const hook_receiver& r) {
    std::vector<nlohmann::json> out;
    for (const hook_request& q : r.requests()) {
        const std::int64_t ts = std::stoll(q.headers.at("x-strix-timestamp"));
        EXPECT_TRUE(
            hook_signature_valid(secret, ts, q.body, q.headers.at("x-strix-signature"), std::time(nullptr), 300))
            << q.body;
        const auto j = nlohmann::json::parse(q.body);
        for (const auto& ev : j.at("events")) out.push_back(ev);
    }
    return out;
}

TEST(HookSignature, MatchesAnIndependentHmacAndRefusesTampering) {
    // The value Python's hmac module gives for the same key and text (docs/webhooks.md shows the
    // verifier that computes it).
    const std::string body = R"({"id":"x","events":[]})";
    EXPECT_EQ(hook_signature(secret, 1700000000, body),
              "v1=354b2b88ff972684a1e346fd63e74023d194b692a0042553b0db922dba00661f");
    const std::string sig = hook_signature(secret, 1700000000, body);
    EXPECT_TRUE(hook_signature_valid(secret, 1700000000, body, sig, 1700000100, 300));
    EXPECT_FALSE(hook_signature_valid(secret, 1700000000, body + " ", sig, 1700000100, 300));  // body changed
    EXPECT_FALSE(hook_signature_valid("another-secret-0123", 1700000000, body, sig, 1700000100, 300));
    EXPECT_FALSE(hook_signature_valid(secret, 1700000001, body, sig, 1700000100, 300));  // timestamp changed
    EXPECT_FALSE(hook_signature_valid(secret, 1700000000, body, sig, 1700000000 + 301, 300));  // a replay, too old
}

TEST(WebhookSink, DeliversSignedBatchesInOrder) {
    hook_receiver rx([](const hook_request&) { return hook_response{}; });
    rx.start();
    webhook_sink_config c = config_for(rx);
    c.batch = 7;
    webhook_sink sink(c);
    constexpr int n = 60;
    for (int i = 0; i < n; ++i) ASSERT_TRUE(sink.push(member_event(1 + i % 3, i)));
    ASSERT_TRUE(eventually([&] { return sink.stats().delivered == n; }));
    const auto events = received_events(rx);
    ASSERT_EQ(events.size(), static_cast<std::size_t>(n));
    std::set<std::string> ids;
    for (int i = 0; i < n; ++i) {
        EXPECT_EQ(events[i]["user"]["id"], i);  // the order pushed
        EXPECT_EQ(events[i]["type"], "member.joined");
        EXPECT_EQ(events[i]["room"]["id"], 1 + i % 3);
        ids.insert(events[i]["id"].get<std::string>());
    }
    EXPECT_EQ(ids.size(), static_cast<std::size_t>(n));  // every event id unique
    for (const hook_request& q : rx.requests()) EXPECT_LE(nlohmann::json::parse(q.body)["events"].size(), 7u);
    const webhook_stats s = sink.stats();
    EXPECT_EQ(s.queued, static_cast<std::uint64_t>(n));
    EXPECT_EQ(s.dropped, 0u);
    EXPECT_EQ(s.failed, 0u);
    EXPECT_EQ(sink.stop(), 0u);
}

// A receiver that is down (connection refused), then answers 503 for a while, then 200: every
// event arrives at least once, and per room the first arrivals keep the order pushed.
TEST(WebhookSink, ReceiverDownThenBackGetsEveryEventInOrderPerRoom) {
    std::atomic<int> refusals{4};
    hook_receiver rx([&](const hook_request&) {
        if (refusals.fetch_sub(1) > 0) return hook_response{.status = 503};
        return hook_response{};
    });
    rx.start();
    const std::uint16_t port = rx.port();
    rx.stop();  // down: the port is closed
    webhook_sink_config c = config_for(rx);
    c.batch = 5;
    webhook_sink sink(c);
    std::map<std::uint64_t, std::vector<std::uint64_t>> pushed;  // room -> users, in push order
    std::uint64_t n = 0;
    for (; n < 40; ++n) {
        ASSERT_TRUE(sink.push(member_event(10 + n % 4, n)));
        pushed[10 + n % 4].push_back(n);
        std::this_thread::sleep_for(10ms);  // events keep coming while it is down
    }
    EXPECT_TRUE(eventually([&] { return sink.stats().failed >= 3; }));
    EXPECT_EQ(sink.stats().delivered, 0u);
    rx.start(port);  // back, refusing the first few POSTs with 503
    for (; n < 60; ++n) {
        ASSERT_TRUE(sink.push(member_event(10 + n % 4, n)));
        pushed[10 + n % 4].push_back(n);
    }
    ASSERT_TRUE(eventually([&] { return sink.stats().delivered == n; }));
    std::map<std::uint64_t, std::vector<std::uint64_t>> got;
    std::set<std::string> seen;
    for (const auto& ev : received_events(rx)) {
        if (!seen.insert(ev["id"].get<std::string>()).second) continue;  // a redelivery
        got[ev["room"]["id"].get<std::uint64_t>()].push_back(ev["user"]["id"].get<std::uint64_t>());
    }
    EXPECT_EQ(got, pushed);
    const webhook_stats s = sink.stats();
    EXPECT_GE(s.retried, 4u);  // the 503s at least, after the refused connections
    EXPECT_EQ(s.failed, s.retried);  // every failure was retried, and nothing else was
    EXPECT_EQ(s.dropped, 0u);
}

// The receiver takes the first POST and never answers: the queue holds `queue` events (the one
// batch in flight included), everything pushed beyond is refused and counted; at shutdown the
// drain time runs out and the rest is dropped too.
TEST(WebhookSink, ReceiverThatNeverAnswersFillsTheQueueAndDropsAreCounted) {
    hook_receiver rx([](const hook_request&) { return hook_response{.hang = true}; });
    rx.start();
    webhook_sink_config c = config_for(rx);
    c.queue = 20;
    c.batch = 5;
    c.timeout = 30s;  // longer than the test: only the drain's end stops the POST
    c.drain = 300ms;
    webhook_sink sink(c);
    std::uint64_t accepted = 0;
    for (int i = 0; i < 100; ++i) accepted += sink.push(member_event(1, i)) ? 1 : 0;
    EXPECT_EQ(accepted, c.queue);
    webhook_stats s = sink.stats();
    EXPECT_EQ(s.queued, c.queue);
    EXPECT_EQ(s.dropped, 100 - c.queue);
    EXPECT_EQ(s.depth, c.queue);
    ASSERT_TRUE(eventually([&] { return rx.requests().size() == 1; }));
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(sink.stop(), c.queue);  // nothing went out
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);  // the drain time, and the abort within a second or so
    s = sink.stats();
    EXPECT_EQ(s.dropped, 100u);
    EXPECT_EQ(s.delivered, 0u);
    EXPECT_EQ(s.depth, 0u);
    EXPECT_FALSE(sink.push(member_event(1, 0)));  // stopped: refused, counted
    EXPECT_EQ(sink.stats().dropped, 101u);
}

// A receiver that is up: stop() lets what is queued go out within the drain time.
TEST(WebhookSink, StopDrainsWhatIsQueued) {
    hook_receiver rx([](const hook_request&) { return hook_response{.delay = 5ms}; });
    rx.start();
    webhook_sink_config c = config_for(rx);
    c.batch = 2;
    webhook_sink sink(c);
    for (int i = 0; i < 30; ++i) ASSERT_TRUE(sink.push(member_event(1, i)));
    EXPECT_EQ(sink.stop(), 0u);
    EXPECT_EQ(sink.stats().delivered, 30u);
    EXPECT_EQ(received_events(rx).size(), 30u);
}

TEST(WebhookEvent, JsonCarriesTheDocumentedFields) {
    webhook_event ev;
    ev.kind = webhook_kind::message_stored;
    ev.time_ms = 1700000000123;
    ev.room = 257;
    ev.room_name = "support-1";
    ev.user = 9;
    ev.user_name = "ada";
    ev.seq = 42;
    ev.text = "hello \xff";  // not UTF-8: replaced, not thrown
    const auto j = nlohmann::json::parse(webhook_event_json(ev, "abc-e1"));
    EXPECT_EQ(j["id"], "abc-e1");
    EXPECT_EQ(j["type"], "message.stored");
    EXPECT_EQ(j["time"], 1700000000123);
    EXPECT_EQ(j["room"]["id"], 257);
    EXPECT_EQ(j["room"]["name"], "support-1");
    EXPECT_EQ(j["user"]["name"], "ada");
    EXPECT_EQ(j["seq"], 42);
    EXPECT_EQ(j["text"], "hello \xef\xbf\xbd");
    webhook_event online;
    online.kind = webhook_kind::user_online;
    online.user = 9;
    online.user_name = "ada";
    const auto o = nlohmann::json::parse(webhook_event_json(online, "abc-e2"));
    EXPECT_EQ(o["type"], "user.online");
    EXPECT_FALSE(o.contains("room"));
    EXPECT_FALSE(o.contains("text"));
}

TEST(HookOptions, UrlWithoutSecretIsRefusedAndShortSecretsToo) {
    hook_options h;
    EXPECT_EQ(validate_hooks(h), "");
    h.webhook_url = "http://127.0.0.1:1/hook";
    EXPECT_NE(validate_hooks(h).find("--webhook-secret"), std::string::npos);
    h.secret_file = "/nonexistent";
    EXPECT_EQ(validate_hooks(h), "");
    EXPECT_THROW(read_hook_secret("/nonexistent/secret"), std::runtime_error);
    const std::string path = testing::TempDir() + "hook_secret_short";
    std::ofstream(path) << "short\n";
    EXPECT_THROW(read_hook_secret(path), std::runtime_error);
    std::ofstream(path) << secret << "\n";
    EXPECT_EQ(read_hook_secret(path), secret);  // the trailing line break is no part of the key
    h.webhook_url = "ftp://x";
    EXPECT_NE(validate_hooks(h), "");
    h.webhook_url.clear();
    h.messages_pattern = "support-*";
    EXPECT_NE(validate_hooks(h), "");  // a pattern without a URL
    h.webhook_url = "https://example.com/hook";
    EXPECT_EQ(validate_hooks(h), "");
    EXPECT_TRUE(webhook_messages_match(h, "support-7"));
    EXPECT_FALSE(webhook_messages_match(h, "general"));
    h.messages_pattern.clear();
    EXPECT_FALSE(webhook_messages_match(h, "support-7"));  // off by default
}

}  // namespace
}  // namespace strix::chat
