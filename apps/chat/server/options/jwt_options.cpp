#include "jwt_options.hpp"

#include <CLI/CLI.hpp>

#include <map>

namespace strix::chat {

void add_jwt_options(CLI::App& app, jwt_options& j) {
    app.add_option("--jwt-key", j.key_file,
                   "JWT logins: the key tokens are verified with: an HS256 secret (>= 32 bytes), PEM public keys "
                   "(RS256, ES256, EdDSA) or a JWK/JWKS file; reloaded on SIGHUP")
        ->type_name("FILE");
    app.add_option("--jwt-audience", j.audience, "JWT logins: a token's aud must contain this (default: not checked)")
        ->type_name("AUD");
    app.add_option("--jwt-issuer", j.issuer, "JWT logins: a token's iss must be this (default: not checked)")
        ->type_name("ISS");
    app.add_option_function<std::int64_t>(
           "--jwt-leeway", [&j](const std::int64_t& s) { j.leeway = std::chrono::seconds(s); },
           "JWT logins: clock skew allowed on exp, nbf and iat, in seconds (default 30)")
        ->check(CLI::Range(0, 3600))
        ->type_name("SECONDS");
    app.add_option_function<std::int64_t>(
           "--jwt-grace", [&j](const std::int64_t& s) { j.grace = std::chrono::seconds(s); },
           "JWT logins: a session whose token expired is closed this long after, unless it sends refresh_req "
           "(default 60)")
        ->check(CLI::Range(0, 86400))
        ->type_name("SECONDS");
    static const std::map<std::string, login_methods> methods = {{"password", login_methods::password},
                                                                 {"jwt", login_methods::jwt},
                                                                 {"both", login_methods::both}};
    app.add_option_function<std::string>(
           "--logins",
           [&j](const std::string& m) {
               j.logins = methods.at(m);
               j.logins_set = true;
           },
           "which logins are taken: password, jwt or both (default: password, or jwt with --jwt-key)")
        ->check(CLI::IsMember({"password", "jwt", "both"}))
        ->type_name("METHODS");
}

std::string settle_jwt(jwt_options& j) {
    if (!j.logins_set) j.logins = j.enabled() ? login_methods::jwt : login_methods::password;
    if (j.logins != login_methods::password && !j.enabled())
        return "--logins jwt or both needs --jwt-key FILE (the key tokens are verified with)";
    return {};
}

}  // namespace strix::chat
