#pragma once
// What the load tool's WebSocket client (load_ws) and the connection holder (hold_wire) share:
// base64 (the upgrade's Sec-WebSocket-Key, and the holder's JWTs) and the head of a binary frame
// a client sends (RFC 6455, section 5.2).

#include <openssl/evp.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace strix::chat {

/// Standard base64 with padding (OpenSSL's EVP_EncodeBlock).
inline std::string base64(const unsigned char* p, std::size_t n) {
    std::string out(4 * ((n + 2) / 3) + 1, '\0');
    const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), p, static_cast<int>(n));
    out.resize(static_cast<std::size_t>(len));
    return out;
}

/// Writes FIN + binary, the mask bit and the payload length of an n-byte payload into h (the
/// 4-byte mask key goes after it) and returns how many bytes that took (2, 4 or 10).
inline std::size_t ws_client_head(std::byte (&h)[14], std::size_t n) noexcept {
    std::size_t hs = 0;
    h[hs++] = std::byte{0x82};  // FIN, binary
    if (n < 126) {
        h[hs++] = static_cast<std::byte>(0x80 | n);
    } else if (n <= 0xFFFF) {
        h[hs++] = std::byte{0x80 | 126};
        h[hs++] = static_cast<std::byte>(n >> 8);
        h[hs++] = static_cast<std::byte>(n);
    } else {
        h[hs++] = std::byte{0x80 | 127};
        for (int i = 7; i >= 0; --i) h[hs++] = static_cast<std::byte>(static_cast<std::uint64_t>(n) >> (8 * i));
    }
    return hs;
}

}  // namespace strix::chat
