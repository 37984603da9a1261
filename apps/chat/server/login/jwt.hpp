#pragma once
// JWT logins: the keys a server trusts (--jwt-key FILE) and the check of a token an application
// signed for one of its users (docs/protocol.md, "JWT logins"; RFC 7519, RFC 7515, RFC 7518).
//
//   --jwt-key FILE:  an HS256 secret (the file's bytes, at least 32, trailing newline dropped)
//                    one or more PEM public keys (RSA >= 2048 bits: RS256; P-256: ES256;
//                    Ed25519: EdDSA)
//                    a JWK or a JWKS ({"keys": [...]}: kty oct, RSA, EC P-256, OKP Ed25519;
//                    a token's `kid` picks the key with that kid)
//
// A key's type decides its one algorithm: a token whose `alg` does not match any key is refused
// (alg_mismatch), which is what stops key confusion (an HS256 token "signed" with the RSA public
// key's bytes) and `alg: none`.
//
// Verified with OpenSSL's EVP: libjwt in Debian bookworm (1.10) has neither EdDSA nor JWKS, and
// OpenSSL is already there for TLS; JSON by nlohmann-json, base64url by libsodium.

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

typedef struct evp_pkey_st EVP_PKEY;

namespace strix::chat {

/// Why a token was refused; each counted (strix_jwt_refused_total{reason}).
enum class jwt_refusal : std::uint8_t {
    malformed,       // not three base64url parts of JSON, too long, or a claim of the wrong type
    alg_none,        // alg "none": an unsigned token
    alg_mismatch,    // an alg no configured key is for (key confusion), or an unsupported one
    unknown_key,     // a kid no configured key has
    bad_signature,
    expired,         // exp + leeway <= now
    not_yet_valid,   // nbf or iat - leeway > now
    wrong_audience,  // --jwt-audience set and not in aud
    wrong_issuer,    // --jwt-issuer set and iss differs
    missing_claim,   // no sub or no exp
    bad_subject,     // sub is not an account name (valid_account_name, names.hpp)
};
inline constexpr std::size_t jwt_refusal_count = 11;
std::string_view jwt_refusal_name(jwt_refusal r) noexcept;

/// What a verified token says.
struct jwt_claims {
    std::string sub;                                 // the account's name
    std::string name;                                // display name ("" when absent)
    std::int64_t exp = 0;                            // Unix seconds
    std::optional<std::vector<std::string>> rooms;   // the rooms it may join or create; absent: any
};

struct jwt_rules {
    std::string audience;  // empty: aud not checked
    std::string issuer;    // empty: iss not checked
    std::chrono::seconds leeway{30};
    std::size_t max_token = 8192;  // bytes; longer is malformed (checked before decoding)
};

/// The keys of one --jwt-key file, immutable once loaded (a reload makes a new set).
class jwt_keys {
public:
    enum class kind : std::uint8_t { hmac, rsa, ec_p256, ed25519 };
    struct key {
        kind type = kind::hmac;
        std::string kid;      // empty: matches a token without kid, or any when the token has none
        std::string secret;   // hmac
        std::shared_ptr<EVP_PKEY> pkey;  // the others
    };

    /// Reads and parses `path`. Throws std::runtime_error saying what is wrong with it. Blocking
    /// (reads a file): never on a shard thread.
    static std::shared_ptr<const jwt_keys> load(const std::string& path);
    /// Parses a file's contents (load's second half; tests call it directly).
    static std::shared_ptr<const jwt_keys> parse(std::string_view text, const std::string& origin);

    const std::vector<key>& keys() const noexcept { return keys_; }
    /// "2 keys: RS256 (kid a), EdDSA" for the log.
    std::string describe() const;

private:
    std::vector<key> keys_;
};

struct jwt_verdict {
    std::optional<jwt_claims> claims;  // set: valid
    jwt_refusal refusal = jwt_refusal::malformed;
    std::string reason;  // for the error_res and the log
};

/// Checks `token` against `keys` and `rules` at `now_s` (Unix seconds). CPU only (an RSA or
/// ECDSA verify costs tens of microseconds): run it off the shards. Any thread.
jwt_verdict verify_jwt(std::string_view token, const jwt_keys& keys, const jwt_rules& rules, std::int64_t now_s);

/// The server's key set and rules: verified against from any thread, the keys swapped whole by
/// reload (SIGHUP), so a verification holds the set it started with.
class jwt_auth {
public:
    /// Loads `key_file`; throws std::runtime_error when it cannot. Main thread (reads a file).
    jwt_auth(std::string key_file, jwt_rules rules);

    /// Reads the file again; on failure keeps the keys it had. Returns the error ("" when
    /// reloaded). Main thread (reads a file), while others verify.
    std::string reload();

    /// verify_jwt with the current keys. Any thread.
    jwt_verdict verify(std::string_view token, std::int64_t now_s) const;

    const jwt_rules& rules() const noexcept { return rules_; }
    std::string describe() const { return keys_.load()->describe(); }

private:
    std::string key_file_;
    jwt_rules rules_;
    std::atomic<std::shared_ptr<const jwt_keys>> keys_;
};

}  // namespace strix::chat
