// verify_jwt and the --jwt-key files (apps/chat/server/login/jwt.hpp): a token of each algorithm
// verifies against its key, and every way a token can be wrong is refused with its own reason.
#include "jwt_signer.hpp"

#include "apps/chat/server/login/jwt.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

namespace {

using namespace strix::chat;
namespace j = strix::test::jwt;

const std::string secret = "0123456789abcdef0123456789abcdef-test-secret";

std::shared_ptr<const jwt_keys> keys_of(const std::string& text) { return jwt_keys::parse(text, "test"); }

jwt_verdict check(const std::string& token, const jwt_keys& keys, jwt_rules rules = {}) {
    return verify_jwt(token, keys, rules, j::now_s());
}

void expect_refused(const jwt_verdict& v, jwt_refusal want) {
    EXPECT_FALSE(v.claims.has_value());
    EXPECT_EQ(jwt_refusal_name(v.refusal), jwt_refusal_name(want)) << v.reason;
    EXPECT_FALSE(v.reason.empty());
}

TEST(jwt_verify, each_algorithm_verifies_with_its_key_and_gives_the_claims) {
    auto claims = j::claims_for("user-42");
    claims["name"] = "Ada Lovelace";
    claims["rooms"] = {"support", 17};
    {
        const auto v = check(j::hs256(secret, claims), *keys_of(secret + "\n"));
        ASSERT_TRUE(v.claims) << v.reason;
        EXPECT_EQ(v.claims->sub, "user-42");
        EXPECT_EQ(v.claims->name, "Ada Lovelace");
        EXPECT_EQ(v.claims->exp, claims["exp"].get<std::int64_t>());
        ASSERT_TRUE(v.claims->rooms);
        EXPECT_EQ(*v.claims->rooms, (std::vector<std::string>{"support", "17"}));
    }
    for (const char* type : {"RSA", "EC", "ED25519"}) {
        const auto key = j::make_key(type);
        const auto v = check(j::signed_by(key, claims), *keys_of(j::public_pem(key)));
        ASSERT_TRUE(v.claims) << type << ": " << v.reason;
        EXPECT_EQ(v.claims->sub, "user-42");
        // The same token against another key of the type does not verify.
        expect_refused(check(j::signed_by(key, claims), *keys_of(j::public_pem(j::make_key(type)))),
                       jwt_refusal::bad_signature);
    }
}

TEST(jwt_verify, a_jwks_picks_the_key_by_kid) {
    const auto rsa = j::make_key("RSA"), ec = j::make_key("EC"), ed = j::make_key("ED25519");
    const j::json jwks{{"keys",
                        {j::public_jwk(rsa, "r1"),
                         j::public_jwk(ec, "e1"),
                         j::public_jwk(ed, "d1"),
                         {{"kty", "oct"}, {"kid", "h1"}, {"k", j::b64url(secret)}}}}};
    const auto keys = keys_of(jwks.dump());
    EXPECT_EQ(keys->describe(), "4 keys: RS256 (kid r1), ES256 (kid e1), EdDSA (kid d1), HS256 (kid h1)");
    const auto claims = j::claims_for("kid-user");
    EXPECT_TRUE(check(j::signed_by(rsa, claims, "r1"), *keys).claims);
    EXPECT_TRUE(check(j::signed_by(ec, claims, "e1"), *keys).claims);
    EXPECT_TRUE(check(j::signed_by(ed, claims, "d1"), *keys).claims);
    EXPECT_TRUE(check(j::hs256(secret, claims, {{"alg", "HS256"}, {"kid", "h1"}}), *keys).claims);
    EXPECT_TRUE(check(j::signed_by(ed, claims), *keys).claims) << "no kid: every key of the algorithm is tried";
    expect_refused(check(j::signed_by(rsa, claims, "nope"), *keys), jwt_refusal::unknown_key);
    // A kid naming a key of another algorithm is not a way around the signature.
    expect_refused(check(j::signed_by(j::make_key("RSA"), claims, "r1"), *keys), jwt_refusal::bad_signature);
}

// Every refusal the issue lists, and the shapes of malformed tokens.
TEST(jwt_verify, refusals_name_their_reason) {
    const auto hs = keys_of(secret);
    const auto rsa = j::make_key("RSA");
    const auto rs = keys_of(j::public_pem(rsa));
    const auto now = j::now_s();
    auto c = j::claims_for("u1");

    // alg none, with and without a signature part.
    const std::string unsigned_token = j::signing_input({{"alg", "none"}}, c);
    expect_refused(check(unsigned_token + ".", *hs), jwt_refusal::alg_none);
    expect_refused(check(unsigned_token + "." + j::b64url("x"), *rs), jwt_refusal::alg_none);
    // Key confusion: an HS256 token whose "secret" is the server's public key, as text.
    expect_refused(check(j::hs256(j::public_pem(rsa), c), *rs), jwt_refusal::alg_mismatch);
    // An RS256 token where only a secret is configured, and an algorithm nobody supports.
    expect_refused(check(j::signed_by(rsa, c), *hs), jwt_refusal::alg_mismatch);
    expect_refused(check(j::hs256(secret, c, {{"alg", "HS512"}}), *hs), jwt_refusal::alg_mismatch);
    // A signature that does not verify: another secret, a flipped claim.
    expect_refused(check(j::hs256(secret + "x", c), *hs), jwt_refusal::bad_signature);
    {
        std::string t = j::signed_by(rsa, c);
        auto forged = c;
        forged["sub"] = "admin";
        const std::size_t dot1 = t.find('.'), dot2 = t.rfind('.');
        t = t.substr(0, dot1 + 1) + j::b64url(forged.dump()) + t.substr(dot2);
        expect_refused(check(t, *rs), jwt_refusal::bad_signature);
    }
    // Time: leeway 30 s by default.
    c["exp"] = now - 31;
    expect_refused(check(j::hs256(secret, c), *hs), jwt_refusal::expired);
    c["exp"] = now - 10;
    EXPECT_TRUE(check(j::hs256(secret, c), *hs).claims) << "within the leeway";
    jwt_rules strict;
    strict.leeway = std::chrono::seconds(0);
    expect_refused(check(j::hs256(secret, c), *hs, strict), jwt_refusal::expired);
    c = j::claims_for("u1");
    c["nbf"] = now + 60;
    expect_refused(check(j::hs256(secret, c), *hs), jwt_refusal::not_yet_valid);
    c.erase("nbf");
    c["iat"] = now + 60;
    expect_refused(check(j::hs256(secret, c), *hs), jwt_refusal::not_yet_valid);
    // Audience and issuer, when the server sets them.
    c = j::claims_for("u1");
    jwt_rules aud;
    aud.audience = "chat";
    aud.issuer = "https://app.example";
    expect_refused(check(j::hs256(secret, c), *hs, aud), jwt_refusal::wrong_audience);
    c["aud"] = {"billing", "chat"};
    expect_refused(check(j::hs256(secret, c), *hs, aud), jwt_refusal::wrong_issuer);
    c["iss"] = "https://app.example";
    EXPECT_TRUE(check(j::hs256(secret, c), *hs, aud).claims);
    c["aud"] = "billing";
    expect_refused(check(j::hs256(secret, c), *hs, aud), jwt_refusal::wrong_audience);
    // Missing and bad claims.
    c = j::claims_for("u1");
    c.erase("exp");
    expect_refused(check(j::hs256(secret, c), *hs), jwt_refusal::missing_claim);
    c = j::claims_for("u1");
    c.erase("sub");
    expect_refused(check(j::hs256(secret, c), *hs), jwt_refusal::missing_claim);
    expect_refused(check(j::hs256(secret, j::claims_for("has space")), *hs), jwt_refusal::bad_subject);
    expect_refused(check(j::hs256(secret, j::claims_for(std::string(65, 'a'))), *hs), jwt_refusal::bad_subject);
    EXPECT_TRUE(check(j::hs256(secret, j::claims_for("auth0|5f7c8ec7c33c6c004bbafe82")), *hs).claims);
    c = j::claims_for("u1");
    c["exp"] = "tomorrow";
    expect_refused(check(j::hs256(secret, c), *hs), jwt_refusal::malformed);
    // Dates past +-1e15 s are refused before any conversion (1.8e24 as a float was undefined
    // behaviour in the conversion to int64, found by the jwt fuzz target).
    for (const j::json& far :
         {j::json(1.8e24), j::json(1e300), j::json(-1e16), j::json(std::numeric_limits<std::uint64_t>::max()),
          j::json(std::numeric_limits<std::int64_t>::min()), j::json(1'000'000'000'000'000)}) {
        c["exp"] = far;
        expect_refused(check(j::hs256(secret, c), *hs), jwt_refusal::malformed);
        c = j::claims_for("u1");
        c["nbf"] = far;
        expect_refused(check(j::hs256(secret, c), *hs), jwt_refusal::malformed);
        c = j::claims_for("u1");
    }
    c["exp"] = static_cast<double>(now) + 600.5;
    EXPECT_TRUE(check(j::hs256(secret, c), *hs).claims) << "a fraction is dropped";
    c["exp"] = 999'999'999'999'999;
    EXPECT_TRUE(check(j::hs256(secret, c), *hs).claims) << "the largest date taken";
    c = j::claims_for("u1");
    c = j::claims_for("u1");
    c["rooms"] = {true};
    expect_refused(check(j::hs256(secret, c), *hs), jwt_refusal::malformed);
    // Malformed shapes.
    for (const std::string& bad : {std::string(), std::string("abc"), std::string("a.b"), std::string("a.b.c.d"),
                                   std::string("!!.e30.sig"), j::b64url("not json") + ".e30.AAAA"})
        expect_refused(check(bad, *hs), jwt_refusal::malformed);
    expect_refused(check(j::hs256(secret, j::claims_for("u1"), {{"alg", "HS256"}, {"crit", {"exp"}}}), *hs),
                   jwt_refusal::malformed);
    jwt_rules small;
    small.max_token = 64;
    expect_refused(check(j::hs256(secret, j::claims_for("u1")), *hs, small), jwt_refusal::malformed);
}

TEST(jwt_keys, unusable_key_files_say_why) {
    const auto refused = [](const std::string& text, const std::string& says) {
        try {
            (void)jwt_keys::parse(text, "f");
            ADD_FAILURE() << "accepted: " << says;
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    };
    refused("short secret\n", "at least 32");
    refused("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n", "no PEM public key");
    refused(j::public_pem(
                j::pkey_ptr(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(1024)), &EVP_PKEY_free)),
            "1024 bits");
    refused(j::public_pem(j::pkey_ptr(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-384"), &EVP_PKEY_free)), "P-256");
    refused("{\"keys\": []}", "non-empty array");
    refused("{\"kty\": \"oct\", \"k\": \"c2hvcnQ\"}", "shorter than 32");
    refused("{\"kty\": \"EC\", \"crv\": \"P-521\", \"x\": \"AA\", \"y\": \"AA\"}", "P-256");
    refused("{not json", "not valid JSON");
    try {
        (void)jwt_keys::load("/nonexistent/jwt.key");
        ADD_FAILURE() << "a missing file loaded";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot be read"), std::string::npos);
    }
}

// A reload that fails keeps the keys in use; one that works replaces them for the next verify.
TEST(jwt_keys, reload_swaps_the_keys_or_keeps_the_old_ones) {
    const auto path = std::filesystem::temp_directory_path() / ("strix-jwt-" + std::to_string(::getpid()));
    const auto write = [&](const std::string& text) { std::ofstream(path) << text; };
    write(secret);
    jwt_auth auth(path.string(), {});
    const auto token = j::hs256(secret, j::claims_for("u1"));
    EXPECT_TRUE(auth.verify(token, j::now_s()).claims);
    write("too short");
    EXPECT_NE(auth.reload(), "");
    EXPECT_TRUE(auth.verify(token, j::now_s()).claims) << "the old key stays";
    const std::string next = secret + "-rotated";
    write(next);
    EXPECT_EQ(auth.reload(), "");
    expect_refused(auth.verify(token, j::now_s()), jwt_refusal::bad_signature);
    EXPECT_TRUE(auth.verify(j::hs256(next, j::claims_for("u1")), j::now_s()).claims);
    std::filesystem::remove(path);
}

}  // namespace
