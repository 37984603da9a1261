#pragma once
// Private: the HTTP/1.1 pieces of the WebSocket upgrade (RFC 6455 section 4): parsing a request
// or response head, the Sec-WebSocket-Accept digest, header token lists, and the replies.

#include <strix/net/ws_protocol.hpp>

#include <string>
#include <string_view>

namespace strix::detail {

/// A parsed head: for a request, a = method, b = target, c = version; for a response, a =
/// version, b = status code, c = reason. Views into the bytes given to parse_http_head.
struct http_head {
    std::string_view a, b, c;
    std::vector<std::pair<std::string_view, std::string_view>> headers;
    std::string_view header(std::string_view name) const noexcept;
};

/// Parses a head ending with the empty line; false when it is malformed (no request or status
/// line, a header line without a colon, obsolete line folding, bytes below 0x20 other than tab).
bool parse_http_head(std::string_view text, http_head& out);

/// Whether a comma-separated header value holds token (case-insensitive), e.g. "keep-alive,
/// Upgrade" holds "upgrade".
bool header_has_token(std::string_view value, std::string_view token) noexcept;

bool iequals(std::string_view a, std::string_view b) noexcept;

/// base64(SHA-1(key + the RFC's GUID)).
std::string ws_accept_key(std::string_view key);

/// A fresh Sec-WebSocket-Key: 16 random bytes in base64.
std::string ws_new_key();

/// Whether key is base64 of exactly 16 bytes (24 characters ending "==").
bool ws_key_valid(std::string_view key) noexcept;

/// "HTTP/1.1 <status> <reason>" with Content-Length and Connection: close, plus extra headers.
std::string http_reply(const http_response& r, bool head_only = false);

/// The reason phrase of the statuses strix sends.
std::string_view http_reason(int status) noexcept;

}  // namespace strix::detail
