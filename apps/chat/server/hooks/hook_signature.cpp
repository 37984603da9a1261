// hook_signature (hook_signature.hpp): HMAC-SHA256 with OpenSSL's one-shot HMAC().

#include "hook_signature.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdlib>
#include <stdexcept>

namespace strix::chat {

std::string hook_signature(std::string_view secret, std::int64_t timestamp, std::string_view body) {
    std::string text = std::to_string(timestamp);
    text += '.';
    text += body;
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
             reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &len) == nullptr)
        throw std::runtime_error("HMAC-SHA256 failed (OpenSSL)");
    static constexpr char hex[] = "0123456789abcdef";
    std::string out = "v1=";
    out.reserve(3 + 2 * len);
    for (unsigned int i = 0; i < len; ++i) {
        out += hex[mac[i] >> 4];
        out += hex[mac[i] & 0xf];
    }
    return out;
}

bool hook_signature_valid(std::string_view secret, std::int64_t timestamp, std::string_view body,
                          std::string_view signature, std::int64_t now, std::int64_t tolerance_s) {
    if (std::llabs(now - timestamp) > tolerance_s) return false;
    const std::string expected = hook_signature(secret, timestamp, body);
    // Equal lengths first (the length is no secret), then every byte whatever the first difference.
    return signature.size() == expected.size() &&
           CRYPTO_memcmp(signature.data(), expected.data(), expected.size()) == 0;
}

}  // namespace strix::chat
