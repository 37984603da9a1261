// jwt_keys (jwt.hpp): a --jwt-key file read into OpenSSL keys: an HMAC secret, PEM public keys,
// or a JWK / JWKS.

#include "jwt.hpp"

#include "jwt_text.hpp"

#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace strix::chat {
namespace {

using json = nlohmann::json;

constexpr std::size_t min_hmac_secret = 32;  // RFC 7518 3.2: a key at least as long as the hash
constexpr int min_rsa_bits = 2048;
constexpr std::size_t max_key_file = 1 << 20;

std::shared_ptr<EVP_PKEY> own(EVP_PKEY* k) { return std::shared_ptr<EVP_PKEY>(k, &EVP_PKEY_free); }

[[noreturn]] void bad(const std::string& origin, const std::string& what) {
    throw std::runtime_error("--jwt-key " + origin + ": " + what);
}

// A PEM public key's type, checked for the algorithms a token may use with it.
jwt_keys::kind kind_of(EVP_PKEY* k, const std::string& origin) {
    if (EVP_PKEY_is_a(k, "RSA")) {
        if (EVP_PKEY_get_bits(k) < min_rsa_bits)
            bad(origin, "an RSA key of " + std::to_string(EVP_PKEY_get_bits(k)) + " bits (RS256 wants 2048 or more)");
        return jwt_keys::kind::rsa;
    }
    if (EVP_PKEY_is_a(k, "ED25519")) return jwt_keys::kind::ed25519;
    if (EVP_PKEY_is_a(k, "EC")) {
        char group[64] = {};
        std::size_t len = 0;
        if (EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &len) != 1 ||
            std::string_view(group) != "prime256v1")
            bad(origin, std::string("an EC key on curve ") + group + " (ES256 wants P-256)");
        return jwt_keys::kind::ec_p256;
    }
    bad(origin, "a public key of an unsupported type (RSA, P-256 or Ed25519 are)");
}

std::vector<jwt_keys::key> parse_pem(std::string_view text, const std::string& origin) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())),
                                                  &BIO_free);
    std::vector<jwt_keys::key> out;
    while (EVP_PKEY* k = PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr)) {
        auto held = own(k);
        out.push_back({kind_of(k, origin), {}, {}, std::move(held)});
    }
    if (out.empty()) bad(origin, "no PEM public key (\"-----BEGIN PUBLIC KEY-----\") could be read");
    return out;
}

std::string member(const json& jwk, const char* name, const std::string& origin) {
    const auto it = jwk.find(name);
    if (it == jwk.end() || !it->is_string()) bad(origin, std::string("a JWK without \"") + name + "\"");
    return it->get<std::string>();
}

std::string decoded_member(const json& jwk, const char* name, const std::string& origin) {
    std::string out;
    if (!base64url_decode(member(jwk, name, origin), out))
        bad(origin, std::string("a JWK whose \"") + name + "\" is not base64url");
    return out;
}

std::shared_ptr<EVP_PKEY> from_params(const char* type, OSSL_PARAM_BLD* bld, const std::string& origin) {
    std::unique_ptr<OSSL_PARAM, decltype(&OSSL_PARAM_free)> params(OSSL_PARAM_BLD_to_param(bld), &OSSL_PARAM_free);
    std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr),
                                                                    &EVP_PKEY_CTX_free);
    EVP_PKEY* k = nullptr;
    if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
        EVP_PKEY_fromdata(ctx.get(), &k, EVP_PKEY_PUBLIC_KEY, params.get()) != 1)
        bad(origin, std::string("a ") + type + " JWK OpenSSL does not accept");
    return own(k);
}

jwt_keys::key parse_jwk(const json& jwk, const std::string& origin) {
    if (!jwk.is_object()) bad(origin, "a JWK that is not a JSON object");
    jwt_keys::key k;
    if (const auto kid = jwk.find("kid"); kid != jwk.end() && kid->is_string()) k.kid = kid->get<std::string>();
    const std::string kty = member(jwk, "kty", origin);
    std::unique_ptr<OSSL_PARAM_BLD, decltype(&OSSL_PARAM_BLD_free)> bld(OSSL_PARAM_BLD_new(), &OSSL_PARAM_BLD_free);
    if (kty == "oct") {
        k.type = jwt_keys::kind::hmac;
        k.secret = decoded_member(jwk, "k", origin);
        if (k.secret.size() < min_hmac_secret) bad(origin, "an oct JWK shorter than 32 bytes");
    } else if (kty == "RSA") {
        const std::string n = decoded_member(jwk, "n", origin), e = decoded_member(jwk, "e", origin);
        std::unique_ptr<BIGNUM, decltype(&BN_free)> bn(BN_bin2bn(reinterpret_cast<const unsigned char*>(n.data()),
                                                                 static_cast<int>(n.size()), nullptr),
                                                       &BN_free);
        std::unique_ptr<BIGNUM, decltype(&BN_free)> be(BN_bin2bn(reinterpret_cast<const unsigned char*>(e.data()),
                                                                 static_cast<int>(e.size()), nullptr),
                                                       &BN_free);
        OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn.get());
        OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, be.get());
        k.pkey = from_params("RSA", bld.get(), origin);
        k.type = kind_of(k.pkey.get(), origin);
    } else if (kty == "EC") {
        if (member(jwk, "crv", origin) != "P-256") bad(origin, "an EC JWK not on P-256");
        const std::string x = decoded_member(jwk, "x", origin), y = decoded_member(jwk, "y", origin);
        if (x.size() != 32 || y.size() != 32) bad(origin, "a P-256 JWK whose x or y is not 32 bytes");
        const std::string point = "\x04" + x + y;  // uncompressed
        OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0);
        OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size());
        k.pkey = from_params("EC", bld.get(), origin);
        k.type = jwt_keys::kind::ec_p256;
    } else if (kty == "OKP") {
        if (member(jwk, "crv", origin) != "Ed25519") bad(origin, "an OKP JWK not on Ed25519");
        const std::string x = decoded_member(jwk, "x", origin);
        EVP_PKEY* raw = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                                    reinterpret_cast<const unsigned char*>(x.data()), x.size());
        if (!raw) bad(origin, "an Ed25519 JWK whose x is not a public key");
        k.pkey = own(raw);
        k.type = jwt_keys::kind::ed25519;
    } else {
        bad(origin, "a JWK of kty \"" + kty + "\" (oct, RSA, EC or OKP are supported)");
    }
    return k;
}

std::vector<jwt_keys::key> parse_json(std::string_view text, const std::string& origin) {
    const json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded()) bad(origin, "not valid JSON (a JWK or a JWKS was expected)");
    std::vector<jwt_keys::key> out;
    if (const auto keys = doc.find("keys"); keys != doc.end()) {
        if (!keys->is_array() || keys->empty()) bad(origin, "a JWKS whose \"keys\" is not a non-empty array");
        for (const json& jwk : *keys) out.push_back(parse_jwk(jwk, origin));
    } else {
        out.push_back(parse_jwk(doc, origin));
    }
    return out;
}

std::string_view alg_of(jwt_keys::kind k) noexcept {
    switch (k) {
        case jwt_keys::kind::hmac: return "HS256";
        case jwt_keys::kind::rsa: return "RS256";
        case jwt_keys::kind::ec_p256: return "ES256";
        case jwt_keys::kind::ed25519: return "EdDSA";
    }
    return "?";
}

}  // namespace

std::shared_ptr<const jwt_keys> jwt_keys::load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("--jwt-key " + path + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    if (s.size() > max_key_file) bad(path, "larger than 1 MiB");
    return parse(s, path);
}

std::shared_ptr<const jwt_keys> jwt_keys::parse(std::string_view text, const std::string& origin) {
    auto out = std::make_shared<jwt_keys>();
    const std::size_t first = text.find_first_not_of(" \t\r\n");
    const std::string_view body = first == std::string_view::npos ? std::string_view{} : text.substr(first);
    if (body.starts_with("-----BEGIN")) {
        out->keys_ = parse_pem(text, origin);
    } else if (body.starts_with("{")) {
        out->keys_ = parse_json(text, origin);
    } else {
        // An HS256 secret: the file's bytes, less the trailing newline an editor adds.
        std::string_view secret = text;
        while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.remove_suffix(1);
        if (secret.size() < min_hmac_secret)
            bad(origin, "an HS256 secret of " + std::to_string(secret.size()) +
                            " bytes (at least 32: e.g. `openssl rand -hex 32 > FILE`)");
        out->keys_.push_back({kind::hmac, {}, std::string(secret), nullptr});
    }
    return out;
}

std::string jwt_keys::describe() const {
    std::string out = std::to_string(keys_.size()) + (keys_.size() == 1 ? " key:" : " keys:");
    for (std::size_t i = 0; i < keys_.size(); ++i) {
        out += (i == 0 ? " " : ", ") + std::string(alg_of(keys_[i].type));
        if (!keys_[i].kid.empty()) out += " (kid " + keys_[i].kid + ")";
    }
    return out;
}

jwt_auth::jwt_auth(std::string key_file, jwt_rules rules)
    : key_file_(std::move(key_file)), rules_(std::move(rules)), keys_(jwt_keys::load(key_file_)) {}

std::string jwt_auth::reload() {
    try {
        keys_.store(jwt_keys::load(key_file_));
        return {};
    } catch (const std::exception& e) {
        return e.what();
    }
}

jwt_verdict jwt_auth::verify(std::string_view token, std::int64_t now_s) const {
    const std::shared_ptr<const jwt_keys> keys = keys_.load();
    return verify_jwt(token, *keys, rules_, now_s);
}

}  // namespace strix::chat
