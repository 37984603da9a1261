// Fuzz target: JWT logins' verification (apps/chat/server/login/jwt_verify.cpp) and key files
// (jwt_keys.cpp), the parts of a JWT login that read what a client or a key file sends.
//
// Input: [mode u8][bytes...]
//   mode % 3 == 0: the bytes are a token, verified against a JWKS of an HS256 secret, a P-256
//                  and an Ed25519 key;
//   mode % 3 == 1: the bytes, split at the first 0x00, are a header and a payload (any bytes)
//                  signed with the HS256 secret, so the signature holds and the claims are read;
//   mode % 3 == 2: the bytes are a --jwt-key file.
//
// Checked:
//   - verification never throws, and a token it accepts has a sub that is an account name, an
//     exp later than now minus the leeway, and a refusal reason empty; a refusal has a reason;
//   - a token whose signature was made with the secret, under a header asking for HS256 and the
//     secret's kid (or none), is never refused as bad_signature (the HMAC over the exact bytes holds);
//   - a key file either loads (then describe() names every key) or throws std::runtime_error.
#include "fuzz_support.hpp"

#include "apps/chat/server/login/jwt.hpp"
#include "apps/chat/server/net/names.hpp"

#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sodium.h>

#include <stdexcept>
#include <string>

using namespace strix::chat;

namespace {

const std::string secret = "jwt-fuzz-secret-0123456789abcdef0123";
constexpr std::int64_t now = 1'800'000'000;

std::string b64url(std::string_view in) {
    std::string out(sodium_base64_ENCODED_LEN(in.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING), '\0');
    sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(in.data()), in.size(),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    out.resize(out.find('\0'));
    return out;
}

// The JWKS the tokens are checked against: the secret and two public keys made once.
const jwt_keys& keys() {
    static const std::shared_ptr<const jwt_keys> k = [] {
        auto x = [](EVP_PKEY* p) {
            unsigned char raw[65];
            std::size_t len = sizeof raw;
            EVP_PKEY_get_raw_public_key(p, raw, &len);
            return b64url(std::string_view(reinterpret_cast<char*>(raw), len));
        };
        EVP_PKEY* ed = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
        EVP_PKEY* ec = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
        unsigned char point[65];
        std::size_t len = 0;
        EVP_PKEY_get_octet_string_param(ec, "pub", point, sizeof point, &len);
        const std::string jwks = R"({"keys":[{"kty":"oct","kid":"h","k":")" + b64url(secret) +
                                 R"("},{"kty":"OKP","crv":"Ed25519","kid":"d","x":")" + x(ed) +
                                 R"("},{"kty":"EC","crv":"P-256","kid":"e","x":")" +
                                 b64url(std::string_view(reinterpret_cast<char*>(point) + 1, 32)) + R"(","y":")" +
                                 b64url(std::string_view(reinterpret_cast<char*>(point) + 33, 32)) + R"("}]})";
        EVP_PKEY_free(ed);
        EVP_PKEY_free(ec);
        return jwt_keys::parse(jwks, "fuzz");
    }();
    return *k;
}

bool asks_for_the_secret(std::string_view header) {
    const nlohmann::json h = nlohmann::json::parse(header, nullptr, false);
    if (h.is_discarded() || !h.is_object() || h.contains("crit")) return false;
    const auto alg = h.find("alg");
    if (alg == h.end() || !alg->is_string() || alg->get<std::string>() != "HS256") return false;
    const auto kid = h.find("kid");
    return kid == h.end() || (kid->is_string() && (kid->get<std::string>().empty() || kid->get<std::string>() == "h"));
}

void check(const jwt_verdict& v, const jwt_rules& rules) {
    if (v.claims) {
        STRIX_FUZZ_CHECK(valid_account_name(v.claims->sub));
        STRIX_FUZZ_CHECK(v.claims->exp + rules.leeway.count() > now);
    } else {
        STRIX_FUZZ_CHECK(!v.reason.empty());
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
    jwt_rules rules;
    rules.audience = data[0] & 8 ? "chat" : "";
    rules.issuer = data[0] & 16 ? "app" : "";
    switch (data[0] % 3) {
        case 0: check(verify_jwt(in, keys(), rules, now), rules); break;
        case 1: {
            const std::size_t cut = in.find('\0');
            const std::string head = b64url(in.substr(0, cut));
            const std::string body = b64url(cut == std::string_view::npos ? std::string_view{} : in.substr(cut + 1));
            const std::string signing = head + "." + body;
            unsigned char mac[EVP_MAX_MD_SIZE];
            unsigned len = 0;
            HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
                 reinterpret_cast<const unsigned char*>(signing.data()), signing.size(), mac, &len);
            const jwt_verdict v =
                verify_jwt(signing + "." + b64url(std::string_view(reinterpret_cast<char*>(mac), len)), keys(), rules,
                           now);
            check(v, rules);
            // When the header is a JSON object that asks for HS256 with the secret's kid (or none)
            // and no crit, the secret is the key tried, and its HMAC over the exact bytes holds:
            // never a bad signature. (Another alg tries another key, which refuses the HMAC.)
            if (!v.claims && asks_for_the_secret(in.substr(0, cut)))
                STRIX_FUZZ_CHECK(v.refusal != jwt_refusal::bad_signature);
            break;
        }
        default:
            try {
                const auto k = jwt_keys::parse(in, "fuzz");
                STRIX_FUZZ_CHECK(!k->keys().empty());
                STRIX_FUZZ_CHECK(!k->describe().empty());
            } catch (const std::runtime_error&) {
            }
            break;
    }
    return 0;
}
