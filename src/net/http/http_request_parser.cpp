#include "http_request_parser.hpp"

#include <climits>
#include <strings.h>

namespace strix::http::detail {
namespace {

request_parser& self(http_parser* p) noexcept { return *static_cast<request_parser*>(p->data); }

bool iequals(std::string_view a, std::string_view b) noexcept {
    return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

const http_parser_settings request_parser::settings = [] {
    http_parser_settings s;
    http_parser_settings_init(&s);
    s.on_message_begin = &request_parser::on_message_begin;
    s.on_url = &request_parser::on_url;
    s.on_header_field = &request_parser::on_header_field;
    s.on_header_value = &request_parser::on_header_value;
    s.on_headers_complete = &request_parser::on_headers_complete;
    s.on_body = &request_parser::on_body;
    s.on_chunk_header = &request_parser::on_chunk_header;
    s.on_message_complete = &request_parser::on_message_complete;
    return s;
}();

request_parser::request_parser(parser_limits limits) noexcept : limits_(limits) {
    http_parser_init(&parser_, HTTP_REQUEST);
    parser_.data = this;
}

// One execute per event: the callbacks of a head's end and a message's end pause the parser, so
// execute returns exactly there and the caller acts before the next byte is parsed (a second
// request in the same read waits while the first is dispatched).
parse_result request_parser::feed(std::span<const char> data) {
    if (error_status_ != 0) return {0, parse_event::error};
    if (HTTP_PARSER_ERRNO(&parser_) == HPE_PAUSED) http_parser_pause(&parser_, 0);
    if (data.empty()) return {0, parse_event::more};
    const bool in_head_phase = !head_done_;  // between requests or in a head: these bytes are head bytes
    pending_ = parse_event::more;
    const std::size_t used = http_parser_execute(&parser_, &settings, data.data(), data.size());
    const auto err = HTTP_PARSER_ERRNO(&parser_);
    if (err != HPE_OK && err != HPE_PAUSED) {
        map_error();
        return {used, parse_event::error};
    }
    if (in_head_phase) {
        // Counted here as well as in the callbacks: whitespace and line ends are stored nowhere
        // but are bytes a slow or hostile client makes us parse.
        head_bytes_ += used;
        if (head_bytes_ > limits_.max_head) {
            refuse(431, "request head too large");
            return {used, parse_event::error};
        }
    }
    return {used, pending_};
}

request request_parser::take() {
    request r = std::move(req_);
    if (upgrade_) r.keep_alive = false;  // the bytes after it are another protocol's
    upgrade_ = false;
    req_ = request{};
    in_message_ = false;
    head_done_ = false;
    field_open_ = false;
    expect_continue_ = false;
    head_bytes_ = 0;
    head_stored_ = 0;
    return r;
}

int request_parser::refuse(int status, std::string_view reason) noexcept {
    if (error_status_ == 0) {
        error_status_ = status;
        error_reason_.assign(reason);
    }
    return -1;
}

bool request_parser::head_room(std::size_t n) noexcept {
    if (n > limits_.max_head - std::min(head_stored_, limits_.max_head)) return false;
    head_stored_ += n;
    return true;
}

void request_parser::map_error() {
    if (error_status_ != 0) return;  // a callback refused: its status stands
    const auto err = HTTP_PARSER_ERRNO(&parser_);
    switch (err) {
        case HPE_HEADER_OVERFLOW: refuse(431, "request head too large"); break;
        case HPE_INVALID_METHOD: refuse(501, "unknown method"); break;
        case HPE_UNEXPECTED_CONTENT_LENGTH: refuse(400, "both Content-Length and Transfer-Encoding"); break;
        case HPE_INVALID_TRANSFER_ENCODING: refuse(501, "unsupported Transfer-Encoding (only chunked)"); break;
        default: refuse(400, std::string("malformed request: ") + http_errno_description(err)); break;
    }
}

int request_parser::on_message_begin(http_parser* p) {
    self(p).in_message_ = true;
    return 0;
}

int request_parser::on_url(http_parser* p, const char* at, std::size_t n) {
    request_parser& r = self(p);
    if (!r.head_room(n)) return r.refuse(414, "request target too long");
    r.req_.target.append(at, n);
    return 0;
}

int request_parser::on_header_field(http_parser* p, const char* at, std::size_t n) {
    request_parser& r = self(p);
    if (r.head_done_) return 0;  // a chunked body's trailer: not kept
    // A new field also costs its ": " and CRLF (a name split over two reads is one field).
    if (!r.head_room(n + (r.field_open_ ? 0 : 4))) return r.refuse(431, "request head too large");
    if (!r.field_open_) r.req_.headers.emplace_back();
    r.field_open_ = true;
    r.req_.headers.back().first.append(at, n);
    return 0;
}

int request_parser::on_header_value(http_parser* p, const char* at, std::size_t n) {
    request_parser& r = self(p);
    if (r.head_done_) return 0;
    if (!r.head_room(n)) return r.refuse(431, "request head too large");
    r.field_open_ = false;
    r.req_.headers.back().second.append(at, n);
    return 0;
}

int request_parser::on_headers_complete(http_parser* p) {
    request_parser& r = self(p);
    r.head_done_ = true;
    if (p->http_major != 1) return r.refuse(505, "only HTTP/1.0 and HTTP/1.1");
    r.req_.method = http_method_str(static_cast<http_method>(p->method));
    r.req_.version_minor = p->http_minor;
    r.req_.keep_alive = http_should_keep_alive(p) != 0;
    const bool chunked = (p->flags & F_CHUNKED) != 0;
    if (!chunked && p->content_length != ULLONG_MAX) {
        if (p->content_length > r.limits_.max_body) return r.refuse(413, "request body too large");
        r.req_.body.reserve(static_cast<std::size_t>(p->content_length));
    }
    if (iequals(r.req_.header("Expect"), "100-continue")) r.expect_continue_ = true;
    r.upgrade_ = p->upgrade != 0 || p->method == HTTP_CONNECT;
    r.pending_ = parse_event::head;
    http_parser_pause(p, 1);
    return 0;
}

int request_parser::on_body(http_parser* p, const char* at, std::size_t n) {
    request_parser& r = self(p);
    if (n > r.limits_.max_body - r.req_.body.size()) return r.refuse(413, "request body too large");
    r.req_.body.append(at, n);
    return 0;
}

// A chunk's size is known before its data: refused here, before a byte of it is stored.
int request_parser::on_chunk_header(http_parser* p) {
    request_parser& r = self(p);
    if (p->content_length > r.limits_.max_body - r.req_.body.size()) return r.refuse(413, "request body too large");
    return 0;
}

int request_parser::on_message_complete(http_parser* p) {
    request_parser& r = self(p);
    r.pending_ = parse_event::message;
    http_parser_pause(p, 1);
    return 0;
}

}  // namespace strix::http::detail
