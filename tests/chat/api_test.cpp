// The server API (--api-port, docs/api.md) of strix-chat-server as a child process: keys and the
// refusals around them (401, 429 with Retry-After), routing errors, the OpenAPI document, the
// rooms' read endpoints against what chat clients did, and the per-endpoint metrics.
#include "chat_fixture.hpp"
#include "metrics_scrape.hpp"

#include <support/http_client.hpp>
#include <support/test_certs.hpp>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

namespace strix::test {
namespace {

using nlohmann::json;

const std::string key = "0123456789abcdef-test-key";

class api_test : public chat_test {
protected:
    /// A server with the API on a free port and one key ("backend"), plus `extra` options.
    std::unique_ptr<server_process> start_api(std::vector<std::string> extra = {}) {
        const std::string keys = dir_.path() + "/keys";
        std::ofstream(keys) << "# the test's key\n" << key << " backend\n";
        std::vector<std::string> args{"--api-port", std::to_string(free_port()), "--api-keys", keys};
        args.insert(args.end(), extra.begin(), extra.end());
        auto s = start(2, args);
        // "server API http://127.0.0.1:PORT/api/v1/" (https with TLS)
        const std::string log = s->log();
        auto pos = log.find("server API http");
        if (pos != std::string::npos) pos = log.find("://127.0.0.1:", pos);
        EXPECT_NE(pos, std::string::npos) << log;
        if (pos != std::string::npos) api_port_ = static_cast<std::uint16_t>(std::stoi(log.substr(pos + 13)));
        return s;
    }

    /// GET path with the key; the reply, and its body parsed (null when not JSON).
    http_reply call(const std::string& path, json* body = nullptr, const std::string& auth = "Bearer " + key) {
        http_client c(api_port_);
        c.send(get(path, auth.empty() ? "" : "Authorization: " + auth + "\r\n"));
        http_reply r = c.read();
        if (body) *body = json::parse(r.body, nullptr, false);
        return r;
    }

    std::uint16_t api_port_ = 0;
};

TEST_P(api_test, refuses_to_start_without_keys) {
    temp_dir d;
    server_process s(db_url_, d.path() + "/log", 1, {"--api-port", std::to_string(free_port())});
    EXPECT_FALSE(s.ready());
    EXPECT_NE(s.log().find("--api-port needs --api-keys FILE"), std::string::npos) << s.log();
    const std::string empty = d.path() + "/empty";
    std::ofstream(empty) << "# no key here\n";
    server_process t(db_url_, d.path() + "/log2", 1, {"--api-port", std::to_string(free_port()), "--api-keys", empty});
    EXPECT_FALSE(t.ready());
    EXPECT_NE(t.log().find("holds no key"), std::string::npos) << t.log();
}

TEST_P(api_test, keys_are_required_and_checked) {
    auto s = start_api();
    json body;
    const http_reply none = call("/api/v1/rooms", &body, "");
    EXPECT_EQ(none.status, 401);
    EXPECT_TRUE(none.has_header("WWW-Authenticate: Bearer"));
    EXPECT_EQ(body["error"], "unauthorized");
    EXPECT_EQ(call("/api/v1/rooms", nullptr, "Bearer " + key + "x").status, 401);
    EXPECT_EQ(call("/api/v1/rooms", nullptr, "Bearer " + key.substr(1)).status, 401);
    EXPECT_EQ(call("/api/v1/rooms", nullptr, "Basic " + key).status, 401);
    EXPECT_EQ(call("/api/v1/rooms", nullptr, "bearer " + key).status, 200);  // the scheme is case-insensitive
    // The document is public; unknown paths and methods are told apart.
    const http_reply doc = call("/api/v1/openapi.json", &body, "");
    EXPECT_EQ(doc.status, 200);
    EXPECT_EQ(body["openapi"], "3.0.3");
    EXPECT_TRUE(body["paths"].contains("/api/v1/rooms/{room_id}/history"));
    // The document served is docs/openapi.json as it is now (the build embeds it).
    EXPECT_EQ(doc.body, read_file(std::string(STRIX_SOURCE_DIR) + "/docs/openapi.json"));
    EXPECT_EQ(call("/api/v1/nothing", &body).status, 404);
    EXPECT_EQ(body["error"], "not_found");
    stop_cleanly(*s);
}

TEST_P(api_test, rate_limit_per_key_answers_429_with_retry_after) {
    const std::uint16_t metrics = free_port();
    auto s = start_api({"--api-rate", "0.5", "--api-burst", "2", "--metrics-port", std::to_string(metrics)});
    http_client c(api_port_);
    const std::string req = get("/api/v1/rooms", "Authorization: Bearer " + key + "\r\n");
    ASSERT_TRUE(c.send(req + req + req));  // one connection, pipelined: the third is over the burst
    EXPECT_EQ(c.read().status, 200);
    EXPECT_EQ(c.read().status, 200);
    const http_reply over = c.read();
    EXPECT_EQ(over.status, 429);
    EXPECT_TRUE(over.has_header("Retry-After: 2\r\n")) << over.head;
    // The bucket is the key's, not the connection's.
    EXPECT_EQ(call("/api/v1/rooms").status, 429);
    const std::string text = http_get(metrics, "/metrics");
    EXPECT_EQ(metric_value(text, "strix_api_rate_limited_total"), 2) << text;
    EXPECT_EQ(metric_value(text, "strix_api_requests_total{endpoint=\"GET /api/v1/rooms\"}"), 2) << text;
    stop_cleanly(*s);
}

TEST_P(api_test, rooms_members_and_history_as_chat_clients_left_them) {
    const std::uint16_t metrics = free_port();
    auto s = start_api({"--metrics-port", std::to_string(metrics)});
    chat_client alice(s->port()), bob(s->port());
    ASSERT_NE(alice.login("alice"), 0u);
    ASSERT_NE(bob.login("bob"), 0u);
    const std::uint64_t room = alice.create("lobby");
    ASSERT_NE(room, 0u);
    bob.join(room);
    for (int i = 1; i <= 3; ++i) {
        ASSERT_TRUE(alice.send_chat("line " + std::to_string(i)));
        // Its own copy is the acknowledgement (bob's member_joined may come first).
        bool acked = false;
        while (!acked) {
            auto f = alice.recv();
            ASSERT_TRUE(f.has_value());
            acked = f->type == proto::msg_type::chat_msg;
        }
    }
    bob.close();  // bob stays a member, offline

    json body;
    ASSERT_TRUE(eventually([&] {
        call("/api/v1/rooms/" + std::to_string(room), &body);
        return body.is_object() && body["members"].size() == 2 && body["members"][1]["online"] == false;
    })) << body.dump();
    EXPECT_EQ(body["name"], "lobby");
    EXPECT_EQ(body["kind"], "group");
    EXPECT_EQ(body["last_seq"], 3);
    EXPECT_EQ(body["members"][0]["name"], "alice");
    EXPECT_EQ(body["members"][0]["online"], true);
    EXPECT_EQ(body["members"][0]["role"], "owner");
    EXPECT_EQ(body["members"][1]["name"], "bob");

    ASSERT_EQ(call("/api/v1/rooms", &body).status, 200);
    ASSERT_EQ(body["rooms"].size(), 1u) << body.dump();
    EXPECT_EQ(body["rooms"][0]["id"], room);
    EXPECT_EQ(body["rooms"][0]["members"], 2);
    EXPECT_EQ(body["rooms"][0]["online"], 1);

    const std::string hist = "/api/v1/rooms/" + std::to_string(room) + "/history";
    ASSERT_EQ(call(hist, &body).status, 200);
    ASSERT_EQ(body["messages"].size(), 3u) << body.dump();
    EXPECT_EQ(body["messages"][0]["text"], "line 1");
    EXPECT_EQ(body["messages"][2]["seq"], 3);
    EXPECT_EQ(body["messages"][2]["sender"], "alice");
    EXPECT_EQ(body["more"], false);
    EXPECT_EQ(body["newest"], 3);
    ASSERT_EQ(call(hist + "?after_seq=1&limit=1", &body).status, 200);
    ASSERT_EQ(body["messages"].size(), 1u);
    EXPECT_EQ(body["messages"][0]["seq"], 2);
    EXPECT_EQ(body["more"], true);

    EXPECT_EQ(call(hist + "?limit=0", &body).status, 400);
    EXPECT_EQ(call(hist + "?after_seq=1&before_seq=3").status, 400);
    EXPECT_EQ(call(hist + "?after_seq=x").status, 400);
    EXPECT_EQ(call("/api/v1/rooms/abc").status, 400);
    EXPECT_EQ(call("/api/v1/rooms/999999/history", &body).status, 404);
    EXPECT_EQ(body["error"], "unknown_room");

    const std::string text = http_get(metrics, "/metrics");
    EXPECT_EQ(metric_value(text, "strix_api_requests_total{endpoint=\"GET /api/v1/rooms/{room_id}/history\"}"), 6)
        << text;
    EXPECT_EQ(metric_value(text, "strix_api_errors_total{endpoint=\"GET /api/v1/rooms/{room_id}/history\"}"), 4)
        << text;
    EXPECT_GE(metric_value(text, "strix_api_request_microseconds_total{endpoint=\"GET /api/v1/rooms\"}"), 1) << text;
    stop_cleanly(*s);
}

TEST_P(api_test, oversized_body_is_413_and_garbage_400) {
    auto s = start_api({"--api-max-body", "1024"});
    {
        http_client c(api_port_);
        ASSERT_TRUE(c.send("POST /api/v1/rooms HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n"));
        const http_reply r = c.read();
        EXPECT_EQ(r.status, 413);
        EXPECT_NE(r.body.find("\"error\":\"payload_too_large\""), std::string::npos) << r.body;
    }
    {
        http_client c(api_port_);
        ASSERT_TRUE(c.send("GET /api/v1/rooms HTTP/1.1\r\nBroken\r\n\r\n"));
        EXPECT_EQ(c.read().status, 400);
    }
    stop_cleanly(*s);
}

// HTTPS with the chat port's certificate, driven by curl (a client that is not ours), on
// keep-alive: two requests, one connection.
TEST_P(api_test, serves_https_with_the_chat_certificate_to_curl) {
    if (std::system("curl --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no curl";
    test_certs certs;
    auto s = start_api({"--tls-cert", certs.cert, "--tls-key", certs.key});
    const std::string log = s->log();
    const std::string marker = "server API https://127.0.0.1:";
    const auto pos = log.find(marker);
    ASSERT_NE(pos, std::string::npos) << log;
    const std::string port = std::to_string(std::stoi(log.substr(pos + marker.size())));
    const std::string url = "https://127.0.0.1:" + port + "/api/v1/rooms";
    const std::string cmd = "curl -sS --cacert " + certs.ca + " -H 'Authorization: Bearer " + key + "' " + url + " " +
                            url + " -w ' %{http_code} %{num_connects}\\n' 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[512];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    EXPECT_EQ(::pclose(p), 0) << out;
    // Both answered 200; the second reused the first's connection (0 new connects).
    EXPECT_EQ(out, "{\"rooms\":[]} 200 1\n{\"rooms\":[]} 200 0\n") << out;
    stop_cleanly(*s);
}

INSTANTIATE_TEST_SUITE_P(backends, api_test, ::testing::Values(backend::sqlite, backend::postgres), backend_name);

}  // namespace
}  // namespace strix::test
