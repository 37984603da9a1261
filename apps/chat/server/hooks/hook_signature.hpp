#pragma once
// hook_signature: how strix-chat-server signs what it POSTs to a webhook receiver or a publish
// hook (docs/webhooks.md, "Signature"). The signed text is "<timestamp>.<body>", the MAC is
// HMAC-SHA256 keyed with the --webhook-secret file's bytes, written as lowercase hex in the
// X-Strix-Signature header as "v1=<hex>"; X-Strix-Timestamp carries the timestamp (Unix seconds)
// so that a receiver can refuse a replayed request older than a few minutes.

#include <cstdint>
#include <string>
#include <string_view>

namespace strix::chat {

/// The header names (lowercase on the wire is equally valid: HTTP header names are
/// case-insensitive).
inline constexpr const char* hook_timestamp_header = "X-Strix-Timestamp";
inline constexpr const char* hook_signature_header = "X-Strix-Signature";

/// "v1=" and the hex HMAC-SHA256 of "<timestamp>.<body>" under `secret` (OpenSSL). Any thread.
std::string hook_signature(std::string_view secret, std::int64_t timestamp, std::string_view body);

/// Whether `signature` is hook_signature(secret, timestamp, body), compared in constant time, and
/// `timestamp` is within `tolerance_s` seconds of `now` (either way). What a receiver does;
/// the tests use it. Any thread.
bool hook_signature_valid(std::string_view secret, std::int64_t timestamp, std::string_view body,
                          std::string_view signature, std::int64_t now, std::int64_t tolerance_s);

}  // namespace strix::chat
