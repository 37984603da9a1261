#pragma once
// resp_framer: where one Redis reply (RESP2) ends in a session's receive ring, so the Redis
// client's handler gets whole top-level replies, one per frame, and hands each to hiredis's
// reader (resp_reader.hpp) to build the reply tree.
//
//   *3\r\n $7\r\nmessage\r\n $6\r\nchat:1\r\n $5\r\nhello\r\n      one frame: an array of 3 bulks
//   ^ header lines are scanned; bulk bodies are skipped by their announced length
//
// The scan allocates nothing and trusts no length: an array count or bulk length is turned into
// a lower bound on the reply's size *before* anything is buffered or allocated, so the session
// refuses "*2000000000\r\n" or "$999999999\r\n" with frame_too_large while the bytes that would
// make it are still unsent. (hiredis 0.14 itself would calloc() an array of the announced count
// as soon as it saw the header.) Arrays nest at most resp_max_depth deep, hiredis's own limit.
//
// Stateless like every framer: an incomplete reply is scanned again from its start when more
// bytes arrive. The scan costs per element (bulk bodies are jumped over), and the replies the
// chat cluster reads are short, so the rescans stay cheap.

#include <strix/net/framer.hpp>

#include <cstddef>

namespace strix::chat {

/// Nesting depth hiredis 0.14's reader accepts (it refuses depth > 7).
inline constexpr int resp_max_depth = 7;

/// The RESP2 framer (one static instance, shared by every session on every shard). Malformed
/// replies (an unknown type byte, a bad length, a missing CRLF after a bulk) are
/// net_errc::bad_frame; nesting past resp_max_depth too.
const framer& resp_framer() noexcept;

}  // namespace strix::chat
