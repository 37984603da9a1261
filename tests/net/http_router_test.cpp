// strix::http's router and query helpers on their own: patterns with {params}, 404 and 405,
// HEAD on GET routes, percent-decoding of parameters and query strings.
#include <strix/net/http_router.hpp>

#include <gtest/gtest.h>

#include <stdexcept>

using namespace strix;

namespace {

http::request make(std::string method, std::string target) {
    http::request r;
    r.method = std::move(method);
    r.target = std::move(target);
    return r;
}

http::router api() {
    http::router r;
    r.add("GET", "/api/v1/rooms", {});
    r.add("POST", "/api/v1/rooms", {});
    r.add("GET", "/api/v1/rooms/{room_id}", {});
    r.add("GET", "/api/v1/rooms/{room_id}/history", {});
    r.add("POST", "/api/v1/rooms/{room_id}/messages", {});
    return r;
}

TEST(http_router, matches_literal_and_parameter_segments) {
    const http::router r = api();
    auto req = make("GET", "/api/v1/rooms/42/history?after_seq=5");
    const auto m = r.match(req);
    EXPECT_EQ(m.route, 3);
    EXPECT_EQ(req.route, "/api/v1/rooms/{room_id}/history");
    EXPECT_EQ(req.param("room_id"), "42");
    EXPECT_EQ(req.param("nope"), "");
    auto list = make("POST", "/api/v1/rooms");
    EXPECT_EQ(r.match(list).route, 1);
}

TEST(http_router, parameters_are_percent_decoded_and_never_empty) {
    const http::router r = api();
    auto req = make("GET", "/api/v1/rooms/a%2Fb%20c");
    EXPECT_EQ(r.match(req).route, 2);
    EXPECT_EQ(req.param("room_id"), "a/b c");
    auto empty = make("GET", "/api/v1/rooms//history");
    EXPECT_EQ(r.match(empty).status, 404);
    auto bad = make("GET", "/api/v1/rooms/%zz");
    EXPECT_EQ(r.match(bad).status, 404);
}

TEST(http_router, wrong_method_is_405_with_the_allowed_ones) {
    const http::router r = api();
    auto req = make("DELETE", "/api/v1/rooms");
    const auto m = r.match(req);
    EXPECT_EQ(m.route, -1);
    EXPECT_EQ(m.status, 405);
    EXPECT_EQ(m.allow, "GET, HEAD, POST");
    auto nf = make("GET", "/api/v2/rooms");
    EXPECT_EQ(r.match(nf).status, 404);
    auto trailing = make("GET", "/api/v1/rooms/");
    EXPECT_EQ(r.match(trailing).status, 404);
}

TEST(http_router, head_uses_the_get_route) {
    const http::router r = api();
    auto req = make("HEAD", "/api/v1/rooms/7");
    EXPECT_EQ(r.match(req).route, 2);
}

TEST(http_router, refuses_malformed_patterns) {
    http::router r;
    EXPECT_THROW(r.add("GET", "rooms", {}), std::invalid_argument);
    EXPECT_THROW(r.add("GET", "/rooms/{id", {}), std::invalid_argument);
    EXPECT_THROW(r.add("GET", "/rooms/{}", {}), std::invalid_argument);
    EXPECT_THROW(r.add("GET", "/rooms/x{id}", {}), std::invalid_argument);
}

TEST(http_query, parses_and_decodes_pairs) {
    const auto q = http::parse_query("after_seq=10&limit=5&name=a+b%21&flag&&empty=");
    ASSERT_TRUE(q.has_value());
    ASSERT_EQ(q->size(), 5u);
    EXPECT_EQ(http::query_value(*q, "after_seq"), "10");
    EXPECT_EQ(http::query_value(*q, "name"), "a b!");
    EXPECT_EQ(http::query_value(*q, "flag"), "");
    EXPECT_EQ(http::query_value(*q, "empty"), "");
    EXPECT_FALSE(http::query_value(*q, "missing").has_value());
    EXPECT_FALSE(http::parse_query("a=%4").has_value());
    EXPECT_FALSE(http::parse_query("a=%g0").has_value());
}

TEST(http_query, percent_decode_keeps_plus_outside_queries) {
    EXPECT_EQ(http::percent_decode("a+b%2B"), "a+b+");
    EXPECT_EQ(http::percent_decode("a+b", true), "a b");
    EXPECT_EQ(http::percent_decode("%00"), std::string(1, '\0'));
    EXPECT_FALSE(http::percent_decode("%").has_value());
}

TEST(http_request, path_query_and_headers) {
    http::request r = make("GET", "/a/b?x=1#frag");
    r.headers = {{"Content-Type", "application/json"}, {"X-Twice", "1"}, {"x-twice", "2"}};
    EXPECT_EQ(r.path(), "/a/b");
    EXPECT_EQ(r.query(), "x=1");
    EXPECT_EQ(r.header("content-type"), "application/json");
    EXPECT_EQ(r.header("X-TWICE"), "1");
    EXPECT_EQ(r.header("missing"), "");
    EXPECT_EQ(make("GET", "/plain").query(), "");
}

TEST(http_response, json_error_escapes_its_reason) {
    const http::response r = http::json_error(413, "too \"big\"\n");
    EXPECT_EQ(r.status, 413);
    EXPECT_EQ(r.body, "{\"error\":\"payload_too_large\",\"reason\":\"too \\\"big\\\"\\u000a\"}");
    EXPECT_EQ(http::status_text(429), "Too Many Requests");
    EXPECT_EQ(http::status_text(799), "Unknown");
}

}  // namespace
