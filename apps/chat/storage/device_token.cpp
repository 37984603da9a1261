#include "apps/chat/storage/device_token.hpp"

#include "apps/chat/storage/sodium_init.hpp"

#include <sodium.h>

#include <cstring>

namespace strix::chat {

static_assert(crypto_generichash_BYTES == 32, "device_token_hash holds a 32-byte BLAKE2b digest");

device_token make_device_token() {
    storage_detail::ensure_sodium();
    device_token t;
    ::randombytes_buf(t.bytes.data(), t.bytes.size());
    return t;
}

device_token_hash hash_device_token(const device_token& token) {
    storage_detail::ensure_sodium();
    device_token_hash h;
    ::crypto_generichash(reinterpret_cast<unsigned char*>(h.bytes.data()), h.bytes.size(),
                         reinterpret_cast<const unsigned char*>(token.bytes.data()), token.bytes.size(), nullptr, 0);
    return h;
}

bool device_token_from(std::span<const std::byte> bytes, device_token& out) noexcept {
    if (bytes.size() != out.bytes.size()) return false;
    std::memcpy(out.bytes.data(), bytes.data(), bytes.size());
    return true;
}

std::string to_hex(std::span<const std::byte> bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (std::byte b : bytes) {
        const auto v = static_cast<unsigned>(b);
        out += digits[v >> 4];
        out += digits[v & 0xf];
    }
    return out;
}

}  // namespace strix::chat
