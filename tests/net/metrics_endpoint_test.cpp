// The /metrics endpoint of strix::net serving a metrics_registry: the exact HTTP answer, the
// endpoint's own counters, a server's and an engine's metrics summed over shards. Also the HTTP
// head framer and the response rules on their own. (The chat server's scrapes under hostile
// scrapers are in tests/chat/metrics_endpoint_test.cpp.)
#include <strix/core/engine.hpp>
#include <strix/core/metrics_registry.hpp>
#include <strix/net/metrics_endpoint.hpp>
#include <strix/net/server.hpp>
#include <support/echo_fixture.hpp>
#include <support/loopback.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <string>

using namespace strix;
using namespace strix::test;

namespace {

/// GET path from 127.0.0.1:port; the whole response, empty on failure.
std::string http_get(std::uint16_t port, const std::string& path) {
    int fd = connect_tcp(port);
    if (fd < 0) return {};
    const std::string req = "GET " + path + " HTTP/1.0\r\n\r\n";
    send_all(fd, req.data(), req.size());
    std::string out;
    char buf[4096];
    for (;;) {
        const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
        if (r <= 0) break;
        out.append(buf, static_cast<std::size_t>(r));
    }
    ::close(fd);
    return out;
}

std::string body_of(const std::string& response) {
    const auto end = response.find("\r\n\r\n");
    return end == std::string::npos ? std::string() : response.substr(end + 4);
}

struct things : metric_group {
    counter done{*this, "demo_things_total", "things done"};
};

engine_config one_shard() {
    engine_config c;
    c.shards = 1;
    return c;
}

TEST(metrics_endpoint, serves_the_registry_and_counts_its_requests) {
    metrics_registry reg;
    things t;
    bump(t.done, 5);
    auto rt = reg.add(t);
    engine eng(one_shard());
    metrics_endpoint http(eng.at(0), 0, reg);
    eng.start();
    const std::string body =
        "# HELP demo_things_total things done\n"
        "# TYPE demo_things_total counter\n"
        "demo_things_total 5\n"
        "# HELP strix_metrics_requests_total requests to the metrics endpoint before this one\n"
        "# TYPE strix_metrics_requests_total counter\n"
        "strix_metrics_requests_total 0\n"
        "# HELP strix_metrics_timeouts_total metrics connections closed for an incomplete request\n"
        "# TYPE strix_metrics_timeouts_total counter\n"
        "strix_metrics_timeouts_total 0\n";
    EXPECT_EQ(http_get(http.port(), "/metrics"),
              "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
    const std::string second = body_of(http_get(http.port(), "/metrics"));
    EXPECT_NE(second.find("\nstrix_metrics_requests_total 1\n"), std::string::npos) << second;
    EXPECT_EQ(http_get(http.port(), "/").rfind("HTTP/1.0 404 Not Found\r\n", 0), 0u);
    eng.stop();
    eng.join();
}

TEST(metrics_endpoint, a_server_and_its_engine_are_summed_over_shards) {
    metrics_registry reg;
    engine eng(server_fixture::with_shards({}, 2));
    server srv(eng, {}, [](shard&) { return std::make_unique<echo_handler>(); });
    srv.register_metrics(reg);
    eng.register_metrics(reg);
    metrics_endpoint http(eng.at(0), 0, reg);
    srv.start();
    eng.start();
    // Two connections; SO_REUSEPORT spreads them over the shards as it likes, the sums do not care.
    for (int c = 0; c < 2; ++c) {
        int fd = connect_tcp(srv.port());
        ASSERT_GE(fd, 0);
        const bytes f = frame_le32(bytes(10, std::byte{7}));
        for (int i = 0; i < 3; ++i) ASSERT_TRUE(send_all(fd, f));
        bytes back(3 * f.size());
        ASSERT_TRUE(recv_exact(fd, back.data(), back.size()));
        ::close(fd);
    }
    ASSERT_TRUE(eventually([&] { return reg.value("strix_sessions_closed_total") == 2; }));
    const std::string text = body_of(http_get(http.port(), "/metrics"));
    EXPECT_NE(text.find("\nstrix_frames_in_total 6\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\nstrix_connections_accepted_total 2\n"), std::string::npos);
    EXPECT_NE(text.find("\nstrix_session_sends_total 6\n"), std::string::npos);
    EXPECT_NE(text.find("\nstrix_bytes_in_total 84\n"), std::string::npos) << "6 frames of 14 bytes";
    EXPECT_NE(text.find("\nstrix_sessions_active 0\n"), std::string::npos);
    EXPECT_NE(text.find("# TYPE strix_loop_turn_seconds histogram\n"), std::string::npos);
    EXPECT_NE(text.find("\nstrix_loop_turn_seconds_bucket{le=\"+Inf\"} "), std::string::npos);
    EXPECT_NE(text.find("\nstrix_tasks_total{source=\"local\"} "), std::string::npos);
    // The registry's sums are server::stats()'s.
    const net_stats st = srv.stats();
    EXPECT_EQ(reg.value("strix_frames_in_total"), static_cast<long long>(st.frames_in.value()));
    EXPECT_EQ(reg.value("strix_io_reads_total"), static_cast<long long>(st.reads.value()));
    EXPECT_GT(reg.value("strix_loop_turns_total"), 0);
    eng.stop();
    eng.join();
}

TEST(metrics_endpoint, a_shard_counts_the_timers_it_fires) {
    metrics_registry reg;
    engine eng(one_shard());
    eng.register_metrics(reg);
    eng.start();
    const long long before = reg.value("strix_timers_fired_total");
    ASSERT_GE(before, 0);
    std::atomic<int> fired{0};
    timer_node t{[&fired] { fired.fetch_add(1); }};
    eng.run_on(0, [&] { eng.at(0).timers().schedule(t, 1); });
    ASSERT_TRUE(eventually([&] { return fired.load() == 1; }));
    EXPECT_TRUE(eventually([&] { return reg.value("strix_timers_fired_total") >= before + 1; }));
    eng.stop();
    eng.join();
}

frame_cut cut(std::string_view s, std::size_t max = 8192) {
    return http_head_framer().cut(std::span(reinterpret_cast<const std::byte*>(s.data()), s.size()), max);
}

TEST(http_head_framer, cuts_at_the_first_empty_line) {
    EXPECT_EQ(cut("G").size, 0u);
    EXPECT_EQ(cut("GET /metrics HTTP/1.1\r\nHost: x\r\n").size, 0u);
    EXPECT_EQ(cut("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").size, 34u);
    EXPECT_EQ(cut("GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n").size, 18u) << "the first head only";
    EXPECT_EQ(cut("GET / HTTP/1.0\n\n").size, 16u);
    EXPECT_EQ(cut("GET / HTTP/1.0\n\nmore\r\n\r\n").size, 16u);
    EXPECT_FALSE(cut("anything").error);
}

TEST(http_head_framer, a_head_at_the_limit_without_its_end_is_oversized) {
    EXPECT_EQ(cut(std::string(100, 'x'), 100).size, 101u);
    EXPECT_EQ(cut(std::string(99, 'x'), 100).size, 0u);
    EXPECT_EQ(cut(std::string(96, 'x') + "\r\n\r\n", 100).size, 100u);
}

TEST(http_head_framer, responses_depend_on_the_request_line) {
    int renders = 0;
    auto render = [&] {
        ++renders;
        return std::string("m 1\n");
    };
    auto ok = http_response_for("GET /metrics HTTP/1.1\r\n\r\n", render);
    EXPECT_EQ(ok.rfind("HTTP/1.0 200 OK\r\n", 0), 0u);
    EXPECT_NE(ok.find("Content-Length: 4\r\n"), std::string::npos);
    EXPECT_NE(ok.find("Connection: close\r\n\r\nm 1\n"), std::string::npos);
    EXPECT_EQ(http_response_for("GET /metrics?x=1 HTTP/1.1\r\n\r\n", render).rfind("HTTP/1.0 200", 0), 0u);
    EXPECT_EQ(http_response_for("GET /metricsx HTTP/1.1\r\n\r\n", render).rfind("HTTP/1.0 404", 0), 0u);
    EXPECT_EQ(http_response_for("HEAD /metrics HTTP/1.1\r\n\r\n", render).rfind("HTTP/1.0 400", 0), 0u);
    EXPECT_EQ(renders, 2) << "only GET /metrics renders";
}

}  // namespace
