// verify_jwt (jwt.hpp): a compact JWS (header.payload.signature) checked in this order, the
// cheap refusals first: shape and size, header (alg, kid, crit), the key, the signature, then
// the claims, which are only trusted once the signature holds.

#include "jwt.hpp"

#include "jwt_text.hpp"

#include "apps/chat/server/net/names.hpp"
#include "apps/chat/storage/sodium_init.hpp"

#include <nlohmann/json.hpp>
#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sodium.h>

#include <array>

namespace strix::chat {
namespace {

using json = nlohmann::json;

jwt_verdict refuse(jwt_refusal r, std::string reason) { return {std::nullopt, r, std::move(reason)}; }

std::optional<jwt_keys::kind> kind_for_alg(std::string_view alg) {
    if (alg == "HS256") return jwt_keys::kind::hmac;
    if (alg == "RS256") return jwt_keys::kind::rsa;
    if (alg == "ES256") return jwt_keys::kind::ec_p256;
    if (alg == "EdDSA") return jwt_keys::kind::ed25519;
    return std::nullopt;
}

bool verify_hmac(const jwt_keys::key& k, std::string_view signed_part, std::string_view sig) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
    unsigned len = 0;
    if (!HMAC(EVP_sha256(), k.secret.data(), static_cast<int>(k.secret.size()),
              reinterpret_cast<const unsigned char*>(signed_part.data()), signed_part.size(), mac.data(), &len))
        return false;
    return sig.size() == len && CRYPTO_memcmp(mac.data(), sig.data(), len) == 0;
}

// JWS carries an ES256 signature as r || s, 32 bytes each; OpenSSL verifies DER.
std::string es256_der(std::string_view sig) {
    if (sig.size() != 64) return {};
    std::unique_ptr<ECDSA_SIG, decltype(&ECDSA_SIG_free)> s(ECDSA_SIG_new(), &ECDSA_SIG_free);
    const auto* p = reinterpret_cast<const unsigned char*>(sig.data());
    BIGNUM* r = BN_bin2bn(p, 32, nullptr);
    BIGNUM* ss = BN_bin2bn(p + 32, 32, nullptr);
    if (!s || !r || !ss || ECDSA_SIG_set0(s.get(), r, ss) != 1) {
        BN_free(r);
        BN_free(ss);
        return {};
    }
    unsigned char* der = nullptr;
    const int len = i2d_ECDSA_SIG(s.get(), &der);
    if (len <= 0) return {};
    std::string out(reinterpret_cast<const char*>(der), static_cast<std::size_t>(len));
    OPENSSL_free(der);
    return out;
}

bool verify_public(const jwt_keys::key& k, std::string_view signed_part, std::string_view sig) {
    std::string der;
    if (k.type == jwt_keys::kind::ec_p256) {
        der = es256_der(sig);
        if (der.empty()) return false;
        sig = der;
    }
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    // Ed25519 hashes inside the algorithm: no digest named.
    const EVP_MD* md = k.type == jwt_keys::kind::ed25519 ? nullptr : EVP_sha256();
    if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, md, nullptr, k.pkey.get()) != 1) return false;
    return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                            reinterpret_cast<const unsigned char*>(signed_part.data()), signed_part.size()) == 1;
}

std::optional<json> json_part(std::string_view b64) {
    std::string text;
    if (!base64url_decode(b64, text)) return std::nullopt;
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    return j;
}

// A NumericDate claim: absent (nullopt, ok), a number of seconds within +-1e15 (its value, a
// fraction dropped), or anything else (bad). The bound is checked before the conversion: a float
// past int64's range (1e24) or an unsigned past INT64_MAX has no value to convert to.
bool numeric_date(const json& claims, const char* name, std::optional<std::int64_t>& out) {
    constexpr std::int64_t bound = 1'000'000'000'000'000;
    const auto it = claims.find(name);
    if (it == claims.end()) return true;
    if (it->is_number_float()) {
        const double v = it->get<double>();
        if (!(v > -static_cast<double>(bound) && v < static_cast<double>(bound))) return false;
        out = static_cast<std::int64_t>(v);
        return true;
    }
    if (it->is_number_unsigned()) {
        if (it->get<std::uint64_t>() >= static_cast<std::uint64_t>(bound)) return false;
        out = static_cast<std::int64_t>(it->get<std::uint64_t>());
        return true;
    }
    if (!it->is_number_integer()) return false;
    const std::int64_t v = it->get<std::int64_t>();
    if (v <= -bound || v >= bound) return false;
    out = v;
    return true;
}

bool audience_holds(const json& claims, const std::string& want) {
    const auto it = claims.find("aud");
    if (it == claims.end()) return false;
    if (it->is_string()) return it->get<std::string>() == want;
    if (!it->is_array()) return false;
    for (const json& a : *it)
        if (a.is_string() && a.get<std::string>() == want) return true;
    return false;
}

jwt_verdict check_claims(const json& c, const jwt_rules& rules, std::int64_t now) {
    std::optional<std::int64_t> exp, nbf, iat;
    if (!numeric_date(c, "exp", exp) || !numeric_date(c, "nbf", nbf) || !numeric_date(c, "iat", iat))
        return refuse(jwt_refusal::malformed, "exp, nbf and iat are numbers of seconds since the epoch, within +-1e15");
    const auto sub = c.find("sub");
    if (sub == c.end() || !sub->is_string()) return refuse(jwt_refusal::missing_claim, "the token has no sub");
    if (!exp) return refuse(jwt_refusal::missing_claim, "the token has no exp (this server wants tokens that expire)");
    const std::int64_t leeway = rules.leeway.count();
    if (*exp + leeway <= now) return refuse(jwt_refusal::expired, "the token expired");
    if (nbf && *nbf - leeway > now) return refuse(jwt_refusal::not_yet_valid, "the token is not valid yet (nbf)");
    if (iat && *iat - leeway > now) return refuse(jwt_refusal::not_yet_valid, "the token was issued in the future");
    if (!rules.audience.empty() && !audience_holds(c, rules.audience))
        return refuse(jwt_refusal::wrong_audience, "the token is not for this audience (aud)");
    if (!rules.issuer.empty()) {
        const auto iss = c.find("iss");
        if (iss == c.end() || !iss->is_string() || iss->get<std::string>() != rules.issuer)
            return refuse(jwt_refusal::wrong_issuer, "the token is from another issuer (iss)");
    }
    jwt_claims out;
    out.sub = sub->get<std::string>();
    if (!valid_account_name(out.sub))
        return refuse(jwt_refusal::bad_subject, "sub is not an account name (1-64 bytes of A-Z a-z 0-9 _ . - @ : |)");
    out.exp = *exp;
    if (const auto name = c.find("name"); name != c.end()) {
        if (!name->is_string() || name->get<std::string>().size() > 128)
            return refuse(jwt_refusal::malformed, "name is a string of at most 128 bytes");
        out.name = name->get<std::string>();
    }
    if (const auto rooms = c.find("rooms"); rooms != c.end()) {
        if (!rooms->is_array() || rooms->size() > 1024)
            return refuse(jwt_refusal::malformed, "rooms is an array of at most 1024 room ids or names");
        out.rooms.emplace();
        for (const json& r : *rooms) {
            if (r.is_string()) {
                out.rooms->push_back(r.get<std::string>());
            } else if (r.is_number_unsigned()) {
                out.rooms->push_back(std::to_string(r.get<std::uint64_t>()));
            } else {
                return refuse(jwt_refusal::malformed, "rooms holds room ids (numbers) or room names (strings)");
            }
        }
    }
    return {std::move(out), jwt_refusal::malformed, {}};
}

}  // namespace

bool base64url_decode(std::string_view in, std::string& out) {
    storage_detail::ensure_sodium();
    if (in.size() % 4 == 1) return false;
    out.resize(in.size() * 3 / 4 + 3);
    std::size_t len = 0;
    const char* end = nullptr;
    if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), in.data(), in.size(), nullptr, &len,
                          &end, sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        end != in.data() + in.size())
        return false;
    out.resize(len);
    return true;
}

std::string_view jwt_refusal_name(jwt_refusal r) noexcept {
    static constexpr std::array<std::string_view, jwt_refusal_count> names = {
        "malformed",     "alg_none", "alg_mismatch", "unknown_key",   "bad_signature", "expired",
        "not_yet_valid", "audience", "issuer",       "missing_claim", "bad_subject"};
    const auto i = static_cast<std::size_t>(r);
    return i < names.size() ? names[i] : "?";
}

jwt_verdict verify_jwt(std::string_view token, const jwt_keys& keys, const jwt_rules& rules, std::int64_t now_s) {
    if (token.size() > rules.max_token)
        return refuse(jwt_refusal::malformed, "the token is longer than " + std::to_string(rules.max_token) + " bytes");
    const std::size_t dot1 = token.find('.');
    const std::size_t dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
    if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos)
        return refuse(jwt_refusal::malformed, "a JWT is three base64url parts joined by dots");
    const std::optional<json> header = json_part(token.substr(0, dot1));
    if (!header) return refuse(jwt_refusal::malformed, "the header is not base64url JSON");
    const auto alg_it = header->find("alg");
    if (alg_it == header->end() || !alg_it->is_string()) return refuse(jwt_refusal::malformed, "the header has no alg");
    const std::string alg = alg_it->get<std::string>();
    if (alg == "none" || alg == "None" || alg == "NONE")
        return refuse(jwt_refusal::alg_none, "unsigned tokens (alg none) are refused");
    if (header->contains("crit"))
        return refuse(jwt_refusal::malformed, "the header's crit extensions are not understood");
    const std::optional<jwt_keys::kind> want = kind_for_alg(alg);
    if (!want)
        return refuse(jwt_refusal::alg_mismatch, "alg " + alg + " is not supported (HS256, RS256, ES256, EdDSA)");
    std::string kid;
    if (const auto k = header->find("kid"); k != header->end()) {
        if (!k->is_string()) return refuse(jwt_refusal::malformed, "kid is a string");
        kid = k->get<std::string>();
    }
    std::string sig;
    if (!base64url_decode(token.substr(dot2 + 1), sig))
        return refuse(jwt_refusal::malformed, "the signature is not base64url");
    const std::string_view signed_part = token.substr(0, dot2);
    bool kid_known = kid.empty(), alg_known = false, verified = false;
    for (const jwt_keys::key& k : keys.keys()) {
        if (!kid.empty() && !k.kid.empty() && k.kid != kid) continue;
        if (!kid.empty() && k.kid == kid) kid_known = true;
        if (k.type != *want) continue;
        alg_known = true;
        if (k.type == jwt_keys::kind::hmac ? verify_hmac(k, signed_part, sig) : verify_public(k, signed_part, sig)) {
            verified = true;
            break;
        }
    }
    if (!kid_known && !alg_known) return refuse(jwt_refusal::unknown_key, "no key has kid " + kid);
    if (!alg_known) return refuse(jwt_refusal::alg_mismatch, "no key of this server is for alg " + alg);
    if (!verified) return refuse(jwt_refusal::bad_signature, "the signature does not verify");
    const std::optional<json> claims = json_part(token.substr(dot1 + 1, dot2 - dot1 - 1));
    if (!claims) return refuse(jwt_refusal::malformed, "the payload is not base64url JSON");
    return check_claims(*claims, rules, now_s);
}

}  // namespace strix::chat
