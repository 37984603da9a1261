#pragma once
// base64url without padding (RFC 7515 section 2), as JWTs and JWKs spell binary values.

#include <string>
#include <string_view>

namespace strix::chat {

/// Decodes `in` into `out`; false on any character outside the alphabet, padding, or a length
/// no encoding has. Any thread.
bool base64url_decode(std::string_view in, std::string& out);

}  // namespace strix::chat
