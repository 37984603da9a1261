#pragma once
// jwt_options: JWT logins (docs/protocol.md, "JWT logins"): --jwt-key FILE and the checks of a
// token's claims, and which logins the server takes (--logins). Part of chat_options (same
// config-file keys as the long option names).

#include <chrono>
#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace strix::chat {

/// Which credentials a login_req may carry.
enum class login_methods : std::uint8_t {
    password,  // name + password (or a resume token): the server's own accounts
    jwt,       // only tokens the application signed
    both,
};

struct jwt_options {
    std::string key_file;   // --jwt-key: empty = JWT logins off
    std::string audience;   // --jwt-audience: aud must hold it (empty: not checked)
    std::string issuer;     // --jwt-issuer: iss must equal it (empty: not checked)
    std::chrono::seconds leeway{30};  // --jwt-leeway: clock skew allowed on exp, nbf, iat
    // --jwt-grace: after a session's token expires, how long it has to send refresh_req.
    std::chrono::seconds grace{60};
    // --logins: default password without --jwt-key, jwt with it (a deployment that brings its
    // own identities has no passwords to guess unless it asks for both).
    login_methods logins = login_methods::password;
    bool logins_set = false;

    bool enabled() const noexcept { return !key_file.empty(); }
    bool passwords() const noexcept { return logins != login_methods::jwt; }
};

/// Adds the options above to the server's command line. Main thread.
void add_jwt_options(CLI::App& app, jwt_options& j);

/// Settles --logins' default once parsed; empty when valid, else one sentence naming the problem
/// and the fix. Main thread.
std::string settle_jwt(jwt_options& j);

}  // namespace strix::chat
