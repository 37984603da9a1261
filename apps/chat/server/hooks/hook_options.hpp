#pragma once
// hook_options: strix-chat-server's webhook and publish hook settings (docs/webhooks.md):
// --webhook-url, --webhook-secret FILE, --webhook-messages PATTERN, the queue, batch, timeout,
// backoff and drain knobs, and --publish-hook-url with its timeout and failure policy. Part of
// chat_options (same config-file keys as the long option names).

#include "publish_hook.hpp"
#include "webhook_sink.hpp"

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace strix::chat {

struct hook_options {
    std::string webhook_url;          // --webhook-url; empty = no webhooks
    std::string secret_file;          // --webhook-secret FILE: the HMAC key for both hooks
    std::string messages_pattern;     // --webhook-messages: message.stored for rooms matching this glob
    std::size_t queue = 10000;        // --webhook-queue
    std::size_t batch = 100;          // --webhook-batch
    std::uint32_t timeout_ms = 5000;  // --webhook-timeout-ms
    std::uint32_t backoff_ms = 250;   // --webhook-backoff-ms
    std::uint32_t backoff_max_ms = 30000;  // --webhook-backoff-max-ms
    std::uint32_t drain_ms = 5000;    // --webhook-drain-ms
    std::string publish_url;          // --publish-hook-url; empty = no publish hook
    std::uint32_t publish_timeout_ms = 500;  // --publish-hook-timeout-ms
    std::string publish_failure = "closed";  // --publish-hook-failure open|closed
    unsigned publish_workers = 4;     // --publish-hook-workers

    bool webhooks() const noexcept { return !webhook_url.empty(); }
    bool publish() const noexcept { return !publish_url.empty(); }
};

/// Adds the options above to the server's command line. Main thread.
void add_hook_options(CLI::App& app, hook_options& h);

/// Empty when valid, else one sentence naming the problem and the fix (a URL without
/// --webhook-secret among them). Reads no file. Any thread.
std::string validate_hooks(const hook_options& h);

/// The --webhook-secret file's contents without trailing line breaks and spaces. Throws
/// std::runtime_error with one sentence when it cannot be read or is shorter than 16 bytes.
/// Blocking: the main thread, at start.
std::string read_hook_secret(const std::string& path);

/// The sender's and the publish hook's settings from the options and the secret. Any thread.
webhook_sink_config webhook_config(const hook_options& h, std::string secret);
publish_hook_config publish_config(const hook_options& h, std::string secret, std::size_t max_text);

/// Whether room `name` matches --webhook-messages (fnmatch glob; never with no pattern). Any thread.
bool webhook_messages_match(const hook_options& h, const std::string& name);

}  // namespace strix::chat
