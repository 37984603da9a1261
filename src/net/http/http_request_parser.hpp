#pragma once
// request_parser: the parser layer of strix::http, nodejs's http_parser (libhttp-parser) behind a
// pull interface with strix's limits. Bytes go in as they arrive, in pieces of any size; out come
// events, one at a time, each at the exact byte it happened at:
//
//   feed(bytes) -> {used, head}     a request's head is complete (request() has method, target,
//                                   headers; the body follows): time to check Expect, start the
//                                   body's deadline
//               -> {used, message}  the request is complete: take() it
//               -> {used, more}     everything given was consumed; nothing complete yet
//               -> {used, error}    error_status() (400, 413, 431, 501, 505) and error_reason();
//                                   the stream cannot be resynchronised: answer, then close
//
// Limits are checked before anything is stored: the head's bytes as they are parsed (431), the
// body's announced length at the head (413), each chunk's size before its data (413).
// No sockets, no clock: the fuzz target drives it with arbitrary bytes.

#include <strix/net/http_server.hpp>

#include <http_parser.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace strix::http::detail {

struct parser_limits {
    std::size_t max_head = 16 * 1024;
    std::size_t max_body = 1024 * 1024;
};

enum class parse_event : std::uint8_t { more, head, message, error };

struct parse_result {
    std::size_t used = 0;
    parse_event event = parse_event::more;
};

class request_parser {
public:
    explicit request_parser(parser_limits limits) noexcept;
    request_parser(const request_parser&) = delete;
    request_parser& operator=(const request_parser&) = delete;

    /// Parses from the front of data up to the next event. After error, feeds nothing more.
    parse_result feed(std::span<const char> data);

    /// The request being parsed (head fields complete after a `head` event).
    const request& current() const noexcept { return req_; }
    /// After a `message` event: the request, moved out; the parser is ready for the next one.
    request take();

    /// Bytes of a request have arrived and its head is not complete yet.
    bool in_head() const noexcept { return in_message_ && !head_done_; }
    /// The head is complete and the body is not.
    bool in_body() const noexcept { return in_message_ && head_done_; }
    /// The request asked for "Expect: 100-continue" (valid after `head`).
    bool expects_continue() const noexcept { return expect_continue_; }
    /// Upgrade or CONNECT: after this request the stream is no longer HTTP (valid after `message`).
    bool upgrade() const noexcept { return upgrade_; }

    int error_status() const noexcept { return error_status_; }
    std::string_view error_reason() const noexcept { return error_reason_; }

private:
    static int on_message_begin(http_parser* p);
    static int on_url(http_parser* p, const char* at, std::size_t n);
    static int on_header_field(http_parser* p, const char* at, std::size_t n);
    static int on_header_value(http_parser* p, const char* at, std::size_t n);
    static int on_headers_complete(http_parser* p);
    static int on_body(http_parser* p, const char* at, std::size_t n);
    static int on_chunk_header(http_parser* p);
    static int on_message_complete(http_parser* p);
    static const http_parser_settings settings;

    int refuse(int status, std::string_view reason) noexcept;  // from a callback: stops the parser
    bool head_room(std::size_t n) noexcept;                    // n more stored head bytes fit
    void map_error();

    http_parser parser_;
    parser_limits limits_;
    request req_;
    parse_event pending_ = parse_event::more;  // what the callback that paused the parser saw
    std::size_t head_bytes_ = 0;               // bytes parsed since the head began (431 check)
    std::size_t head_stored_ = 0;              // bytes stored from this head (url, names, values)
    bool in_message_ = false;
    bool head_done_ = false;
    bool field_open_ = false;  // the last header callback was a name (a value comes next)
    bool expect_continue_ = false;
    bool upgrade_ = false;
    int error_status_ = 0;
    std::string error_reason_;
};

}  // namespace strix::http::detail
