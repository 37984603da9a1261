#pragma once
// Device tokens (OWASP's "device cookies"): a successful login hands the client a random secret;
// a later login of the same account that presents it is exempt from the per-name lockout that
// guessers without one run into (docs/protocol.md, "Device tokens").
//
//   client holds:    device_token       32 bytes from libsodium's CSPRNG (randombytes_buf)
//   database holds:  device_token_hash  BLAKE2b-256 of the token (crypto_generichash)
//
// A fast hash is right here, unlike for passwords: the token has 256 bits of entropy, so nobody
// can search for it from its hash, and the lookup must stay cheap (it runs before any argon2id).

#include <array>
#include <cstddef>
#include <span>
#include <string>

namespace strix::chat {

inline constexpr std::size_t device_token_size = 32;

/// The secret a client presents. Never stored by the server, never logged.
struct device_token {
    std::array<std::byte, device_token_size> bytes{};
    friend bool operator==(const device_token&, const device_token&) = default;
};

/// What the database keys a token by.
struct device_token_hash {
    std::array<std::byte, 32> bytes{};
    friend bool operator==(const device_token_hash&, const device_token_hash&) = default;
};

/// A fresh token from the CSPRNG. Any thread.
device_token make_device_token();

/// The token's BLAKE2b-256 hash. Any thread.
device_token_hash hash_device_token(const device_token& token);

/// Copies `bytes` into `out` when they are exactly device_token_size long; false (and `out`
/// untouched) otherwise. Any thread.
bool device_token_from(std::span<const std::byte> bytes, device_token& out) noexcept;

/// Lower-case hex of `bytes` (2 digits per byte). Any thread.
std::string to_hex(std::span<const std::byte> bytes);

}  // namespace strix::chat
