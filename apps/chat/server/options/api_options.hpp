#pragma once
// api_options: strix-chat-server's server API (docs/api.md): --api-port, --api-keys FILE and the
// per-key rate limit. Part of chat_options (same config-file keys as the long option names).

#include <cstddef>
#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace strix::chat {

struct chat_options;

struct api_options {
    bool enabled = false;         // --api-port was given and is not 0
    std::uint16_t port = 0;       // --api-port
    std::string keys_file;        // --api-keys FILE: one key per line, optionally followed by a name
    double rate = 50.0;           // --api-rate: requests per second per key (token bucket refill)
    double burst = 100.0;         // --api-burst: requests a key may make at once
    std::size_t max_body = 64 * 1024;  // --api-max-body: larger request bodies get 413
};

/// Adds the options above to the server's command line. Main thread.
void add_api_options(CLI::App& app, api_options& a);

/// Empty when valid, else one sentence naming the problem and the fix: keys are required, ports
/// must differ, and plain HTTP (bearer keys in clear) only on a loopback --host unless
/// --tls-cert or --insecure-plaintext. Any thread.
std::string validate_api(const chat_options& o);

}  // namespace strix::chat
