#pragma once
// Tokens for the JWT tests: keys made with OpenSSL, tokens signed the way an application's
// backend would (RFC 7515 compact form), and the key files --jwt-key reads (a secret, PEM, JWKS).

#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <sodium.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace strix::test::jwt {

using json = nlohmann::json;
using pkey_ptr = std::shared_ptr<EVP_PKEY>;

inline std::string b64url(std::string_view bytes) {
    std::string out(sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
    sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    out.resize(out.find('\0'));
    return out;
}

inline std::int64_t now_s() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

/// "RSA" (2048 bits), "EC" (P-256) or "ED25519".
inline pkey_ptr make_key(const std::string& type) {
    EVP_PKEY* k = type == "RSA"  ? EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048))
                  : type == "EC" ? EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")
                                 : EVP_PKEY_Q_keygen(nullptr, nullptr, type.c_str());
    if (!k) throw std::runtime_error("keygen failed: " + type);
    return pkey_ptr(k, &EVP_PKEY_free);
}

inline std::string public_pem(const pkey_ptr& k) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
    PEM_write_bio_PUBKEY(bio.get(), k.get());
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(n));
}

inline std::string bn_param(const pkey_ptr& k, const char* name) {
    BIGNUM* bn = nullptr;
    EVP_PKEY_get_bn_param(k.get(), name, &bn);
    std::string out(static_cast<std::size_t>(BN_num_bytes(bn)), '\0');
    BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
    BN_free(bn);
    return out;
}

/// The public half of `k` as a JWK.
inline json public_jwk(const pkey_ptr& k, const std::string& kid) {
    json j{{"kid", kid}};
    if (EVP_PKEY_is_a(k.get(), "RSA")) {
        j["kty"] = "RSA";
        j["n"] = b64url(bn_param(k, OSSL_PKEY_PARAM_RSA_N));
        j["e"] = b64url(bn_param(k, OSSL_PKEY_PARAM_RSA_E));
    } else if (EVP_PKEY_is_a(k.get(), "EC")) {
        unsigned char point[65];
        std::size_t len = 0;
        EVP_PKEY_get_octet_string_param(k.get(), OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point, &len);
        j["kty"] = "EC";
        j["crv"] = "P-256";
        j["x"] = b64url(std::string_view(reinterpret_cast<char*>(point) + 1, 32));
        j["y"] = b64url(std::string_view(reinterpret_cast<char*>(point) + 33, 32));
    } else {
        unsigned char raw[32];
        std::size_t len = sizeof raw;
        EVP_PKEY_get_raw_public_key(k.get(), raw, &len);
        j["kty"] = "OKP";
        j["crv"] = "Ed25519";
        j["x"] = b64url(std::string_view(reinterpret_cast<char*>(raw), len));
    }
    return j;
}

inline std::string hmac_sha256(std::string_view secret, std::string_view data) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
         reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &len);
    return std::string(reinterpret_cast<char*>(mac), len);
}

inline std::string sign_with(const pkey_ptr& k, std::string_view data) {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    const bool ed = EVP_PKEY_is_a(k.get(), "ED25519");
    EVP_DigestSignInit(ctx.get(), nullptr, ed ? nullptr : EVP_sha256(), nullptr, k.get());
    std::size_t len = 0;
    EVP_DigestSign(ctx.get(), nullptr, &len, reinterpret_cast<const unsigned char*>(data.data()), data.size());
    std::string sig(len, '\0');
    EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                   reinterpret_cast<const unsigned char*>(data.data()), data.size());
    sig.resize(len);
    if (!EVP_PKEY_is_a(k.get(), "EC")) return sig;
    // DER to JWS's r || s.
    const auto* p = reinterpret_cast<const unsigned char*>(sig.data());
    ECDSA_SIG* es = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
    std::string out(64, '\0');
    BN_bn2binpad(ECDSA_SIG_get0_r(es), reinterpret_cast<unsigned char*>(out.data()), 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(es), reinterpret_cast<unsigned char*>(out.data()) + 32, 32);
    ECDSA_SIG_free(es);
    return out;
}

/// header.payload, to be signed.
inline std::string signing_input(const json& header, const json& claims) {
    return b64url(header.dump()) + "." + b64url(claims.dump());
}

inline std::string hs256(std::string_view secret, const json& claims, json header = {{"alg", "HS256"}}) {
    const std::string in = signing_input(header, claims);
    return in + "." + b64url(hmac_sha256(secret, in));
}

/// alg from the key: RS256, ES256 or EdDSA.
inline std::string signed_by(const pkey_ptr& k, const json& claims, const std::string& kid = {}) {
    json header{{"alg", EVP_PKEY_is_a(k.get(), "RSA") ? "RS256" : EVP_PKEY_is_a(k.get(), "EC") ? "ES256" : "EdDSA"}};
    if (!kid.empty()) header["kid"] = kid;
    const std::string in = signing_input(header, claims);
    return in + "." + b64url(sign_with(k, in));
}

/// Claims valid for an hour from now.
inline json claims_for(const std::string& sub, std::int64_t ttl_s = 3600) {
    return json{{"sub", sub}, {"exp", now_s() + ttl_s}, {"iat", now_s()}};
}

}  // namespace strix::test::jwt
