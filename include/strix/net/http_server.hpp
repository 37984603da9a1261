#pragma once
// http_server: HTTP/1.1 for any strix server. http::protocol is the session_handler of a server
// (one per shard); requests are parsed by nodejs's http_parser (libhttp-parser) and handed,
// whole and checked, to the application's handler, which answers through a responder at once or
// later (after a database worker replied) on the session's shard:
//
//   socket -> session (raw framer) -> http_parser: head, body (Content-Length or chunked)
//          -> handler(request&, responder)                  ... responder.send(response)
//          -> responses queued in request order -> session::send -> the turn's gather write
//
// Keep-alive and pipelining: the requests of a connection are parsed as they arrive and handed
// over at once, each with a slot in the connection's response queue; a response goes out when
// every earlier one has, so answers keep the requests' order however late each comes. Past
// options::max_pipelined unanswered requests the connection stops reading until one is answered.
//
// Limits, each checked before memory is committed, each answered once and the connection closed
// after the answers owed before it:
//   request head over max_head bytes              431 Request Header Fields Too Large
//   body over max_body (Content-Length or chunks) 413 Content Too Large
//   head not complete head_timeout after its first byte (slowloris), or the body not
//   body_timeout after the head                   408 Request Timeout
//   malformed request, bad chunk, HTTP/2 preface  400 Bad Request
//   unknown method                                501 Not Implemented
//   HTTP major version other than 1               505 HTTP Version Not Supported
//   nothing asked for keepalive_timeout           closed quietly
// Connection caps, TLS, slow readers (max_queued, stall_timeout) and the close linger are the
// server's own (server_config), as on every other port.
//
//     strix::server_config cfg{.port = 8080};
//     strix::http::options ho;
//     ho.apply(cfg);                                   // raw framing, read sizes
//     strix::server srv(eng, cfg, [&](strix::shard&) {
//         return std::make_unique<strix::http::protocol>(
//             [](strix::http::request& req, strix::http::responder res) {
//                 res.send({.status = 200, .content_type = "text/plain", .body = "hello\n"});
//             }, ho);
//     });
//
// HEAD is answered like GET without the body. Expect: 100-continue gets its interim response when
// the body is within max_body and no earlier answer is still owed. Upgrade and CONNECT requests
// get their answer and then the connection closes (this server speaks nothing but HTTP/1.1).
// Thread contract: a protocol, its sessions and the responders of their requests belong to one
// shard; a worker thread hands its result back with shard::post and answers there.

#include <strix/core/intrusive_ptr.hpp>
#include <strix/net/session.hpp>
#include <strix/net/session_handler.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strix {

struct server_config;
struct session_group_config;

namespace http {

/// One parsed request. The handler may move anything out of it (the body, for a worker).
struct request {
    std::string method;  // "GET", as http_parser names it
    std::string target;  // "/api/v1/rooms?limit=5", as sent
    std::vector<std::pair<std::string, std::string>> headers;  // in order, names as sent
    std::string body;                                          // de-chunked
    unsigned version_minor = 1;                                // HTTP/1.x
    bool keep_alive = true;  // the connection stays open after the answer (HTTP/1.1 default)
    // Set by a router: the pattern that matched ("/api/v1/rooms/{room_id}") and its parameters,
    // percent-decoded.
    std::string_view route;
    std::vector<std::pair<std::string, std::string>> params;

    /// The target up to '?' (raw, not decoded). Any thread.
    std::string_view path() const noexcept;
    /// The target after '?' (raw), empty when none. Any thread.
    std::string_view query() const noexcept;
    /// The first value of header `name` (case-insensitive), empty when absent. Any thread.
    std::string_view header(std::string_view name) const noexcept;
    /// A router parameter by name, empty when absent. Any thread.
    std::string_view param(std::string_view name) const noexcept;
};

/// An answer. Content-Length and, when the connection is to close, Connection: close are added.
struct response {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Retry-After, Allow, ...)
};

/// {"error": "<status as snake_case, e.g. payload_too_large>", "reason": reason} with that status:
/// the body of every error this module answers itself. Any thread.
response json_error(int status, std::string_view reason);

/// `s` as the inside of a JSON string (quotes, backslashes and control characters escaped).
/// Any thread.
std::string json_escape(std::string_view s);

/// The status line's reason phrase for `status` ("Not Found"); "Unknown" for codes it does not
/// know. Any thread.
std::string_view status_text(int status) noexcept;

namespace detail {
struct connection_state;
}  // namespace detail

/// The one answer owed to one request. Move-only; answering twice is ignored. A responder dropped
/// unanswered answers 500 (the connection never hangs on a lost request). Every function, the
/// destructor included, on the session's shard only; a worker posts back there to answer.
class responder {
public:
    responder() noexcept = default;
    responder(responder&& o) noexcept : sess_(std::move(o.sess_)), seq_(o.seq_) {}
    responder& operator=(responder&& o) noexcept;
    responder(const responder&) = delete;
    responder& operator=(const responder&) = delete;
    ~responder();

    /// Queues the answer; it goes out once the answers to every earlier request of the connection
    /// have. Nothing when the connection closed meanwhile. The session's shard.
    void send(response r);
    /// Whether an answer is still owed.
    explicit operator bool() const noexcept { return static_cast<bool>(sess_); }
    /// The connection's peer ("10.0.0.1:5000"), empty once answered. The session's shard.
    std::string_view peer() const noexcept;
    /// The connection, or nullptr once answered. The session's shard.
    session* connection() const noexcept { return sess_.get(); }

private:
    friend class protocol;
    responder(session_ptr s, std::uint64_t seq) noexcept : sess_(std::move(s)), seq_(seq) {}
    session_ptr sess_;
    std::uint64_t seq_ = 0;
};

/// What the application implements: called on the session's shard for every complete request.
/// The request is valid during the call (move out what an asynchronous answer needs).
using handler_fn = std::function<void(request& req, responder res)>;

struct options {
    std::size_t max_head = 16 * 1024;       // request line and headers; above: 431
    std::size_t max_body = 1024 * 1024;     // body (Content-Length, or the chunks' sum); above: 413
    std::size_t max_pipelined = 32;         // requests handed over and not yet answered; above: reading waits
    std::uint32_t read_size = 16 * 1024;    // bytes handed to the parser per read
    std::chrono::milliseconds head_timeout{10000};       // head incomplete this long after its first byte: 408
    std::chrono::milliseconds body_timeout{30000};       // body incomplete this long after the head: 408
    std::chrono::milliseconds keepalive_timeout{60000};  // nothing asked and nothing owed this long: closed
    std::string server_name = "strix";                  // the Server header; empty = none

    /// Sets cfg's framing (raw: the parser keeps the state) and read sizes; timeouts are this
    /// module's own (the session's idle and frame timeouts are left off). The owning thread.
    void apply(server_config& cfg) const;
    /// The same for a session group.
    void apply(session_group_config& cfg) const;
};

/// Counters of one shard's protocol (single writer: the shard; read anywhere as a snapshot).
struct protocol_stats {
    std::atomic<std::uint64_t> requests{0};       // complete requests handed to the handler
    std::atomic<std::uint64_t> bad_requests{0};   // 400, 501, 505 answered by the parser layer
    std::atomic<std::uint64_t> too_large{0};      // 413 and 431
    std::atomic<std::uint64_t> timeouts{0};       // 408
    std::atomic<std::uint64_t> idle_closed{0};    // keep-alive connections closed for idleness
    std::atomic<std::uint64_t> unanswered{0};     // responders dropped without an answer (500)
    std::atomic<std::uint64_t> read_waits{0};     // reading stopped at max_pipelined
};

/// The HTTP/1.1 session_handler: one per shard (server factory) or per group.
class protocol final : public session_handler {
public:
    /// handler is called for every request on the session's shard. The owning thread.
    protocol(handler_fn handler, options opts);
    ~protocol() override;

    const options& config() const noexcept { return opts_; }
    /// Any thread (a snapshot).
    const protocol_stats& stats() const noexcept { return stats_; }

    // session_handler: the session's shard calls these.
    void on_open(session& s) override;
    void on_frame(session& s, std::span<const std::byte> bytes) override;
    void on_close(session& s, std::error_code ec) override;

    /// The answer to request `seq` of s (dropped: a responder destroyed unanswered, 500). For the
    /// responder; the session's shard.
    void complete(session& s, std::uint64_t seq, response r, bool dropped);
    /// The connection's head, body or keep-alive deadline passed. For its timer; the shard.
    void timer_fired(session& s);

private:
    void parse(session& s, detail::connection_state& c, std::span<const char> data);
    void dispatch(session& s, detail::connection_state& c);
    void on_head(session& s, detail::connection_state& c);
    void fail(session& s, detail::connection_state& c, int status, std::string_view reason);
    void flush(session& s, detail::connection_state& c);
    void resume(session& s, detail::connection_state& c);
    void update_timer(session& s, detail::connection_state& c);
    std::string serialize(const response& r, bool head_only, bool close, unsigned version_minor) const;

    handler_fn handler_;
    const options opts_;
    protocol_stats stats_;
};

}  // namespace http
}  // namespace strix
