#pragma once
// http::router: routes requests by method and path pattern to handlers, for http::protocol.
//
//     strix::http::router r;
//     r.add("GET", "/api/v1/rooms/{room_id}/history", [](strix::http::request& req, strix::http::responder res) {
//         auto room = req.param("room_id");                      // percent-decoded
//         auto q = strix::http::parse_query(req.query());        // after_seq=10&limit=50
//         ...
//     });
//     strix::http::protocol proto(r.handler(), opts);             // or call r.dispatch yourself
//
// A pattern is a path of literal segments and {name} segments; a {name} matches one whole
// non-empty segment. No path matches: 404. The path matches with other methods only: 405 with an
// Allow header. HEAD is served by the GET route (the protocol drops the body). Errors are
// http::json_error bodies, or what on_error builds.
// Thread contract: built on one thread, then used read-only (one router may serve every shard).

#include <strix/net/http_server.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strix::http {

class router {
public:
    using route_fn = std::function<void(request& req, responder res)>;
    /// Builds the answer for a routing failure (404 or 405; reason says which path or methods).
    using error_fn = std::function<response(int status, std::string_view reason)>;

    /// Adds a route. Throws std::invalid_argument for a pattern that does not start with '/' or
    /// has an unclosed or empty {}. The building thread, before serving.
    void add(std::string_view method, std::string_view pattern, route_fn fn);
    /// Replaces the 404/405 bodies (default: json_error).
    void on_error(error_fn fn) { on_error_ = std::move(fn); }

    /// What matching found: the route's index (into routes()), or the status to answer.
    struct match_result {
        int route = -1;     // >= 0: matched
        int status = 404;   // when not matched: 404 or 405
        std::string allow;  // for 405: the methods the path has ("GET, POST")
    };
    /// Matches method and path, filling req.params and req.route on success. Any thread.
    match_result match(request& req) const;

    /// Routes req: the route's handler, or the 404/405 answer. The request's shard.
    void dispatch(request& req, responder res) const;
    /// A handler_fn calling dispatch on this router (which must outlive it).
    handler_fn handler() const {
        return [this](request& req, responder res) { dispatch(req, std::move(res)); };
    }

    struct route {
        std::string method;
        std::string pattern;
        std::vector<std::string> segments;  // "{name}" kept as is
        route_fn fn;
    };
    const std::vector<route>& routes() const noexcept { return routes_; }

private:
    std::vector<route> routes_;
    error_fn on_error_;
};

/// Percent-decodes s ("%2F" -> "/"; with plus_as_space, '+' -> ' ' as in a query string).
/// nullopt for a malformed escape ("%G1", "%4"). Any thread.
std::optional<std::string> percent_decode(std::string_view s, bool plus_as_space = false);

/// The pairs of a query string ("a=1&b=x%20y&c" -> {a,1} {b,"x y"} {c,""}), decoded, in order;
/// empty pieces skipped. nullopt when an escape is malformed. Any thread.
std::optional<std::vector<std::pair<std::string, std::string>>> parse_query(std::string_view q);

/// The first value of `name` in pairs from parse_query, or nullopt. Any thread.
std::optional<std::string_view> query_value(const std::vector<std::pair<std::string, std::string>>& pairs,
                                            std::string_view name) noexcept;

}  // namespace strix::http
