// strix::http's server over real sockets: keep-alive, pipelining with answers that come late and
// out of order, each limit and timeout, Connection: close, HEAD, malformed input, the connection
// cap, and a client that is not ours (python3's http.client).
#include "http_fixture.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

using namespace strix;
using namespace strix::test;
using namespace std::chrono_literals;

namespace {

http::options quick_timeouts() {
    http::options o;
    o.head_timeout = 300ms;
    o.body_timeout = 300ms;
    o.keepalive_timeout = 400ms;
    return o;
}

TEST(http_server, keep_alive_serves_several_requests_on_one_connection) {
    http_fixture f;
    http_client c(f.port());
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(c.send(get("/hello")));
        const http_reply r = c.read();
        EXPECT_EQ(r.status, 200);
        EXPECT_EQ(r.body, "hello");
        EXPECT_FALSE(r.has_header("Connection: close"));
    }
    EXPECT_EQ(f.stats().requests.load(), 3u);
}

TEST(http_server, pipelined_answers_keep_request_order_when_late_ones_come_last) {
    http_fixture f;
    http_client c(f.port());
    // One write: a slow answer, an immediate one, a faster late one, another immediate one.
    ASSERT_TRUE(
        c.send(get("/late?ms=300&tag=first") + get("/hello") + get("/late?ms=50&tag=third") + get("/echo-target?x=4")));
    EXPECT_EQ(c.read().body, "first");
    EXPECT_EQ(c.read().body, "hello");
    EXPECT_EQ(c.read().body, "third");
    EXPECT_EQ(c.read().body, "/echo-target?x=4");
}

TEST(http_server, connection_close_is_honoured_and_later_requests_ignored) {
    http_fixture f;
    http_client c(f.port());
    ASSERT_TRUE(c.send(get("/hello", "Connection: close\r\n") + get("/echo-target")));
    const http_reply r = c.read();
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(r.has_header("Connection: close"));
    EXPECT_TRUE(c.closed_within(2s));
    EXPECT_EQ(f.stats().requests.load(), 1u);
}

TEST(http_server, http10_closes_unless_keep_alive_asked) {
    http_fixture f;
    {
        http_client c(f.port());
        ASSERT_TRUE(c.send("GET /hello HTTP/1.0\r\n\r\n"));
        EXPECT_EQ(c.read().status, 200);
        EXPECT_TRUE(c.closed_within(2s));
    }
    http_client c(f.port());
    ASSERT_TRUE(c.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    const http_reply r = c.read();
    EXPECT_TRUE(r.has_header("Connection: keep-alive"));
    ASSERT_TRUE(c.send(get("/hello")));
    EXPECT_EQ(c.read().body, "hello");
}

TEST(http_server, head_gets_the_get_answer_without_its_body) {
    http_fixture f;
    http_client c(f.port());
    ASSERT_TRUE(c.send("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n" + get("/hello")));
    const http_reply head = c.read(true);
    EXPECT_EQ(head.status, 200);
    EXPECT_TRUE(head.has_header("Content-Length: 5\r\n"));
    EXPECT_EQ(c.read().body, "hello");  // the next answer starts right after the head
}

TEST(http_server, routing_errors_are_json_with_allow) {
    http_fixture f;
    http_client c(f.port());
    ASSERT_TRUE(c.send(get("/nowhere") + "DELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
    const http_reply nf = c.read();
    EXPECT_EQ(nf.status, 404);
    EXPECT_EQ(nf.body.rfind("{\"error\":\"not_found\",\"reason\":", 0), 0u) << nf.body;
    const http_reply na = c.read();
    EXPECT_EQ(na.status, 405);
    EXPECT_TRUE(na.has_header("Allow: GET, HEAD\r\n")) << na.head;
}

TEST(http_server, malformed_requests_get_an_error_and_a_close) {
    struct bad {
        std::string bytes;
        int status;
    };
    const std::vector<bad> cases = {
        {"GARBAGE\r\n\r\n", 501},
        {"FROB /x HTTP/1.1\r\n\r\n", 501},
        {"GET /x HTTP/2.0\r\nHost: t\r\n\r\n", 505},
        {"GET /x HTTP/1.1\r\nBad Header\r\n\r\n", 400},
        {"GET /x HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
        {"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
        {"GET /x HTTP/1.1\r\nContent-Length: -3\r\n\r\n", 400},
    };
    http_fixture f;
    for (const bad& b : cases) {
        http_client c(f.port());
        ASSERT_TRUE(c.send(b.bytes));
        const http_reply r = c.read();
        EXPECT_EQ(r.status, b.status) << b.bytes;
        EXPECT_TRUE(r.has_header("Connection: close")) << b.bytes;
        EXPECT_TRUE(c.closed_within(2s)) << b.bytes;
    }
    EXPECT_GE(f.stats().bad_requests.load(), cases.size());
}

TEST(http_server, answers_owed_before_a_bad_request_go_out_first) {
    http_fixture f;
    http_client c(f.port());
    ASSERT_TRUE(c.send(get("/late?ms=100&tag=owed") + "GET /x HTTP/1.1\r\nBad Header\r\n\r\n"));
    EXPECT_EQ(c.read().body, "owed");
    EXPECT_EQ(c.read().status, 400);
    EXPECT_TRUE(c.closed_within(2s));
}

TEST(http_server, head_over_the_limit_is_431_and_long_target_414) {
    http::options o;
    o.max_head = 1024;
    http_fixture f(o);
    {
        http_client c(f.port());
        ASSERT_TRUE(c.send("GET /hello HTTP/1.1\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n"));
        EXPECT_EQ(c.read().status, 431);
        EXPECT_TRUE(c.closed_within(2s));
    }
    {
        // Many small headers: each fits, their sum does not.
        http_client c(f.port());
        std::string req = "GET /hello HTTP/1.1\r\n";
        for (int i = 0; i < 200; ++i) req += "X-" + std::to_string(i) + ": v\r\n";
        ASSERT_TRUE(c.send(req + "\r\n"));
        EXPECT_EQ(c.read().status, 431);
    }
    {
        http_client c(f.port());
        ASSERT_TRUE(c.send("GET /" + std::string(2000, 'p') + " HTTP/1.1\r\n\r\n"));
        EXPECT_EQ(c.read().status, 414);
    }
    {
        // Blank lines between requests count too: an endless stream of them is refused.
        http_client c(f.port());
        ASSERT_TRUE(c.send(std::string(4000, '\n')));
        EXPECT_EQ(c.read().status, 431);
    }
    EXPECT_EQ(f.stats().too_large.load(), 4u);
}

TEST(http_server, body_over_the_limit_is_413_before_it_is_sent) {
    http::options o;
    o.max_body = 1000;
    http_fixture f(o);
    {
        // Refused on the announced length alone: the body is never sent.
        http_client c(f.port());
        ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000000\r\n\r\n"));
        const http_reply r = c.read();
        EXPECT_EQ(r.status, 413);
        EXPECT_NE(r.body.find("payload_too_large"), std::string::npos) << r.body;
        EXPECT_TRUE(c.closed_within(2s));
    }
    {
        // Chunked: refused at the chunk that would pass the limit.
        http_client c(f.port());
        ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n200\r\n" + std::string(512, 'a') +
                           "\r\n200\r\n"));
        EXPECT_EQ(c.read().status, 413);
    }
    {
        // Within the limit, chunked bodies are put together.
        http_client c(f.port());
        ASSERT_TRUE(
            c.send("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n" +
                   std::string("POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nxyz")));
        EXPECT_EQ(c.read().body, "abcdefg");
        EXPECT_EQ(c.read().body, "xyz");
    }
}

TEST(http_server, expect_100_continue_gets_its_interim_answer) {
    http_fixture f;
    http_client c(f.port());
    ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"));
    const http_reply interim = c.read();
    EXPECT_EQ(interim.status, 100);
    ASSERT_TRUE(c.send("body"));
    EXPECT_EQ(c.read().body, "body");
}

TEST(http_server, reading_waits_at_max_pipelined_then_catches_up) {
    http::options o;
    o.max_pipelined = 2;
    http_fixture f(o);
    http_client c(f.port());
    std::string burst;
    for (int i = 0; i < 5; ++i) burst += get("/held");
    ASSERT_TRUE(c.send(burst));
    ASSERT_TRUE(eventually([&] { return f.seen_held() == 2; }));
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(f.seen_held(), 2);  // the other three wait unparsed
    EXPECT_GE(f.stats().read_waits.load(), 1u);
    // Each answer makes room for one more request (the two answered were owed; the next two are parsed).
    f.release_held();
    ASSERT_TRUE(eventually([&] { return f.seen_held() == 4; }));
    f.release_held();
    ASSERT_TRUE(eventually([&] { return f.seen_held() == 5; }));
    f.release_held();
    for (int i = 0; i < 5; ++i) EXPECT_EQ(c.read().status, 200) << i;
    EXPECT_EQ(f.seen_held(), 5);
}

TEST(http_server, slow_head_gets_408_and_slow_body_too) {
    http_fixture f(quick_timeouts());
    {
        http_client c(f.port());
        ASSERT_TRUE(c.send("GET /hello HTTP/1.1\r\nHost: t\r\n"));  // never finished
        const http_reply r = c.read();
        EXPECT_EQ(r.status, 408);
        EXPECT_TRUE(c.closed_within(2s));
    }
    {
        // A byte now and then does not extend the head's deadline (slowloris).
        http_client c(f.port());
        const auto start = std::chrono::steady_clock::now();
        for (char ch : std::string("GET /hello HTTP/1.1\r\nX-Slow: abcdefgh")) {
            if (!c.send(std::string(1, ch))) break;
            std::this_thread::sleep_for(40ms);
            if (std::chrono::steady_clock::now() - start > 1s) break;
        }
        EXPECT_EQ(c.read().status, 408);
    }
    {
        http_client c(f.port());
        ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc"));
        EXPECT_EQ(c.read().status, 408);
    }
    EXPECT_EQ(f.stats().timeouts.load(), 3u);
}

TEST(http_server, idle_keep_alive_connection_is_closed_quietly) {
    http_fixture f(quick_timeouts());
    http_client c(f.port());
    ASSERT_TRUE(c.send(get("/hello")));
    EXPECT_EQ(c.read().status, 200);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(c.closed_within(3s));
    EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
    EXPECT_EQ(f.stats().idle_closed.load(), 1u);
    // A connection waiting for a late answer is not idle.
    http_client w(f.port());
    ASSERT_TRUE(w.send(get("/late?ms=700&tag=slow")));
    EXPECT_EQ(w.read().body, "slow");
}

TEST(http_server, dropped_responder_answers_500) {
    http_fixture f;
    http_client c(f.port());
    ASSERT_TRUE(c.send(get("/drop") + get("/hello")));
    const http_reply r = c.read();
    EXPECT_EQ(r.status, 500);
    EXPECT_EQ(c.read().body, "hello");
    EXPECT_EQ(f.stats().unanswered.load(), 1u);
}

TEST(http_server, late_answer_to_a_closed_connection_is_dropped) {
    http_fixture f;
    {
        http_client c(f.port());
        ASSERT_TRUE(c.send(get("/late?ms=100&tag=gone") + get("/late?ms=150&tag=gone2")));
    }  // closed before the answers
    std::this_thread::sleep_for(300ms);
    http_client c(f.port());
    ASSERT_TRUE(c.send(get("/hello")));
    EXPECT_EQ(c.read().body, "hello");
    EXPECT_EQ(f.stats().requests.load(), 3u);
}

TEST(http_server, connection_cap_refuses_beyond_max_sessions) {
    http_fixture f({}, 2);
    http_client a(f.port()), b(f.port());
    ASSERT_TRUE(a.send(get("/hello")) && b.send(get("/hello")));
    EXPECT_EQ(a.read().status, 200);
    EXPECT_EQ(b.read().status, 200);
    http_client third(f.port());
    if (third.ok()) {
        third.send(get("/hello"));
        EXPECT_EQ(third.read().status, 0);  // reset at accept
    }
}

TEST(http_server, random_garbage_never_hangs_a_connection) {
    http_fixture f(quick_timeouts());
    std::mt19937 rng(7);
    for (int i = 0; i < 30; ++i) {
        http_client c(f.port());
        bytes junk = random_bytes(rng, 1 + rng() % 3000);
        if (i % 2 == 0) {
            const std::string prefix = get("/hello");
            junk.insert(junk.begin(), reinterpret_cast<const std::byte*>(prefix.data()),
                        reinterpret_cast<const std::byte*>(prefix.data() + prefix.size()));
        }
        send_all(c.fd(), junk);
        EXPECT_TRUE(wait_closed(c.fd(), 3s)) << i;
    }
    http_client c(f.port());
    ASSERT_TRUE(c.send(get("/hello")));
    EXPECT_EQ(c.read().body, "hello");
}

// A client that is not ours: python3's http.client over one keep-alive connection, a plain GET,
// a POST with a chunked body, a HEAD and a 404.
TEST(http_server, python_http_client_talks_to_it) {
    if (std::system("python3 -c 'import http.client' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
    http_fixture f;
    const std::string script = testing::TempDir() + "/strix_http_client.py";
    std::ofstream(script) << R"(import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
c.request("GET", "/hello"); r = c.getresponse(); assert r.status == 200 and r.read() == b"hello", r.status
c.request("POST", "/echo", body=iter([b"ab", b"cd"]), encode_chunked=True, headers={"Transfer-Encoding": "chunked"})
r = c.getresponse(); assert r.status == 200 and r.read() == b"abcd"
c.request("HEAD", "/hello"); r = c.getresponse(); assert r.status == 200 and r.getheader("Content-Length") == "5"; r.read()
c.request("GET", "/echo-target?q=a%20b"); r = c.getresponse(); assert r.read() == b"/echo-target?q=a%20b"
c.request("GET", "/missing"); r = c.getresponse(); assert r.status == 404 and b"not_found" in r.read()
print("ok")
)";
    const std::string cmd = "python3 " + script + " " + std::to_string(f.port()) + " 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    EXPECT_EQ(::pclose(p), 0) << out;
    EXPECT_EQ(out, "ok\n");
    EXPECT_EQ(f.stats().requests.load(), 5u);
}

}  // namespace
