// hook_options (hook_options.hpp): the command line, its checks and the secret file.

#include "hook_options.hpp"

#include <CLI/CLI.hpp>

#include <fnmatch.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace strix::chat {
namespace {

constexpr std::size_t min_secret = 16;

bool http_url(const std::string& url) { return url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0; }

}  // namespace

void add_hook_options(CLI::App& app, hook_options& h) {
    app.add_option("--webhook-url", h.webhook_url,
                   "POST signed events (user online/offline, rooms, members; docs/webhooks.md) to this http(s) URL")
        ->type_name("URL");
    app.add_option("--webhook-secret", h.secret_file,
                   "file holding the HMAC-SHA256 key that signs webhooks and publish hook calls (16 bytes or more)")
        ->type_name("FILE");
    app.add_option("--webhook-messages", h.messages_pattern,
                   "also send message.stored for rooms whose name matches this glob, e.g. 'support-*' (off without it)")
        ->type_name("PATTERN");
    app.add_option("--webhook-queue", h.queue,
                   "webhook events waiting at most; beyond, new events are dropped (counted)")
        ->capture_default_str();
    app.add_option("--webhook-batch", h.batch, "webhook events per POST at most")->capture_default_str();
    app.add_option("--webhook-timeout-ms", h.timeout_ms, "one webhook POST's time limit, connecting included")
        ->capture_default_str();
    app.add_option("--webhook-backoff-ms", h.backoff_ms, "wait before the first retry of a failed POST (doubles)")
        ->capture_default_str();
    app.add_option("--webhook-backoff-max-ms", h.backoff_max_ms, "the longest wait between retries")
        ->capture_default_str();
    app.add_option("--webhook-drain-ms", h.drain_ms,
                   "at shutdown, queued webhook events get this long to go out; the rest are dropped (counted)")
        ->capture_default_str();
    app.add_option("--publish-hook-url", h.publish_url,
                   "ask this http(s) URL before storing each chat message: accept, reject or rewrite it")
        ->type_name("URL");
    app.add_option("--publish-hook-timeout-ms", h.publish_timeout_ms,
                   "the publish hook's answer must come within this long of the message")
        ->capture_default_str();
    app.add_option("--publish-hook-failure", h.publish_failure,
                   "when the publish hook fails (down, slow, non-2xx): closed refuses the message with a reason, "
                   "open stores it unjudged")
        ->check(CLI::IsMember({"open", "closed"}))
        ->capture_default_str();
    app.add_option("--publish-hook-workers", h.publish_workers, "publish hook calls in flight at once")
        ->capture_default_str();
}

std::string validate_hooks(const hook_options& h) {
    if (!h.webhooks() && !h.publish()) {
        if (!h.messages_pattern.empty()) return "--webhook-messages needs --webhook-url";
        return {};
    }
    if (h.webhooks() && !http_url(h.webhook_url)) return "--webhook-url must be an http:// or https:// URL";
    if (h.publish() && !http_url(h.publish_url)) return "--publish-hook-url must be an http:// or https:// URL";
    if (h.secret_file.empty())
        return "--webhook-url and --publish-hook-url need --webhook-secret FILE (the key receivers check "
               "signatures with; make one with: openssl rand -hex 32 > FILE)";
    if (!h.messages_pattern.empty() && !h.webhooks()) return "--webhook-messages needs --webhook-url";
    if (h.queue == 0 || h.queue > 10'000'000) return "--webhook-queue must be between 1 and 10000000";
    if (h.batch == 0 || h.batch > 10000) return "--webhook-batch must be between 1 and 10000";
    if (h.timeout_ms == 0 || h.timeout_ms > 600'000) return "--webhook-timeout-ms must be between 1 and 600000";
    if (h.backoff_ms == 0 || h.backoff_max_ms < h.backoff_ms)
        return "--webhook-backoff-ms must be positive and at most --webhook-backoff-max-ms";
    if (h.backoff_max_ms > 3'600'000) return "--webhook-backoff-max-ms must be at most 3600000 (an hour)";
    if (h.drain_ms > 600'000) return "--webhook-drain-ms must be at most 600000";
    if (h.publish_timeout_ms == 0 || h.publish_timeout_ms > 60'000)
        return "--publish-hook-timeout-ms must be between 1 and 60000";
    if (h.publish_workers == 0 || h.publish_workers > 256) return "--publish-hook-workers must be between 1 and 256";
    return {};
}

std::string read_hook_secret(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read --webhook-secret " + path + " (check the path and permissions)");
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
    if (s.size() < min_secret)
        throw std::runtime_error("--webhook-secret " + path +
                                 " holds fewer than 16 bytes; make a longer key: openssl rand -hex 32 > " + path);
    return s;
}

webhook_sink_config webhook_config(const hook_options& h, std::string secret) {
    webhook_sink_config c;
    c.url = h.webhook_url;
    c.secret = std::move(secret);
    c.queue = h.queue;
    c.batch = h.batch;
    c.timeout = std::chrono::milliseconds(h.timeout_ms);
    c.backoff = std::chrono::milliseconds(h.backoff_ms);
    c.backoff_max = std::chrono::milliseconds(h.backoff_max_ms);
    c.drain = std::chrono::milliseconds(h.drain_ms);
    return c;
}

publish_hook_config publish_config(const hook_options& h, std::string secret, std::size_t max_text) {
    publish_hook_config c;
    c.url = h.publish_url;
    c.secret = std::move(secret);
    c.timeout = std::chrono::milliseconds(h.publish_timeout_ms);
    c.fail_open = h.publish_failure == "open";
    c.workers = h.publish_workers;
    c.max_text = max_text;
    return c;
}

bool webhook_messages_match(const hook_options& h, const std::string& name) {
    return !h.messages_pattern.empty() && ::fnmatch(h.messages_pattern.c_str(), name.c_str(), 0) == 0;
}

}  // namespace strix::chat
