#pragma once
// Private: unpredictable bytes for WebSocket keys. Sec-WebSocket-Key comes straight from
// OpenSSL's RAND_bytes (once per connection); masking keys (one per client frame) from a
// per-thread generator seeded by it, cheap enough to run per frame.

#include <cstddef>
#include <span>

namespace strix::detail {

/// Fills out from OpenSSL's CSPRNG. Any thread.
void ws_random_bytes(std::span<std::byte> out) noexcept;

/// A fresh 4-byte masking key. Any thread.
void ws_mask_key(std::byte (&key)[4]) noexcept;

}  // namespace strix::detail
