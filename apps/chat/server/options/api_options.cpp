#include "api_options.hpp"

#include "chat_options.hpp"

#include <CLI/CLI.hpp>

#include <arpa/inet.h>

#include <cmath>

namespace strix::chat {

void add_api_options(CLI::App& app, api_options& a) {
    app.add_option_function<std::uint16_t>(
           "--api-port",
           [&a](const std::uint16_t& port) {
               a.enabled = port != 0;
               a.port = port;
           },
           "the server API (HTTP/1.1 + JSON, docs/api.md) on this port of --host, with TLS when --tls-cert is "
           "given; needs --api-keys (0 or absent: off)")
        ->type_name("PORT");
    app.add_option("--api-keys", a.keys_file,
                   "the server API's bearer keys: one per line, optionally followed by a name for logs and metrics "
                   "(# starts a comment)")
        ->type_name("FILE");
    app.add_option("--api-rate", a.rate, "server API requests per second per key")->capture_default_str();
    app.add_option("--api-burst", a.burst, "server API requests a key may make at once")->capture_default_str();
    app.add_option("--api-max-body", a.max_body, "largest server API request body in bytes (larger: 413)")
        ->capture_default_str();
}

std::string validate_api(const chat_options& o) {
    const api_options& a = o.api;
    if (!a.enabled) return {};
    if (a.keys_file.empty())
        return "--api-port needs --api-keys FILE: the keys that may call the API, one per line (docs/api.md)";
    if (!(a.rate > 0) || !std::isfinite(a.rate)) return "--api-rate must be a positive number of requests per second";
    if (!(a.burst >= 1) || !std::isfinite(a.burst)) return "--api-burst must be at least 1";
    if (a.max_body < 1024 || a.max_body > 64 * 1024 * 1024)
        return "--api-max-body must be between 1024 and 67108864 bytes";
    if (a.port == o.server.port || a.port == o.metrics_port || (o.ws.enabled && a.port == o.ws.port))
        return "--api-port must differ from --port, --ws-port and --metrics-port";
    // Bearer keys travel in every request: plain HTTP only where nobody else can listen.
    in_addr a4{};
    in6_addr a6{};
    const std::string& host = o.server.host;
    const bool numeric = ::inet_pton(AF_INET, host.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &a6) == 1;
    const bool beyond = host == "*" || (numeric && !is_loopback_host(host));
    if (beyond && o.tls.cert_file.empty() && !o.insecure_plaintext)
        return "--host " + host +
               " is reachable from other machines and plain HTTP would carry the API keys in clear: give "
               "--tls-cert FILE --tls-key FILE (the API port then serves HTTPS), listen on 127.0.0.1, or pass "
               "--insecure-plaintext";
    return {};
}

}  // namespace strix::chat
