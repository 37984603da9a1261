#pragma once
// publish_hook: asks the application's backend about a chat message before it is stored
// (--publish-hook-url; docs/webhooks.md, "The publish hook"). A shard submits the message with a
// completion callback and goes on; one of the hook's worker threads POSTs it, signed like a
// webhook, and calls the callback with the verdict, which the callback posts back to the
// submitting shard (sharded<>::invoke_on, as a login's database job does):
//
//   shard ─submit(msg, done)─> [ bounded queue ] ─worker─> POST ─> {"action":"accept"}
//                                                                  {"action":"reject","reason":...}
//                                                                  {"action":"rewrite","text":...}
//   done(verdict) on the worker ─invoke_on─> shard: store the message (or its rewrite), or refuse it
//
// The time limit runs from submit(): a message that waited in the queue has less of it. A hook
// that does not answer in time, answers non-2xx or something unreadable has failed, and the
// failure policy decides: closed (the default) refuses the message with a reason, open stores
// it as sent.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strix::chat {

struct publish_hook_config {
    std::string url;
    std::string secret;                       // the HMAC key (hook_signature.hpp)
    std::chrono::milliseconds timeout{500};   // from submit() to the verdict
    bool fail_open = false;                   // --publish-hook-failure open|closed
    unsigned workers = 4;                     // POSTs in flight at once
    std::size_t queue = 1024;                 // messages waiting for a worker; beyond: a failure
    std::size_t max_text = 4096;              // a rewrite longer than this is a failure
};

/// What the backend decided about one message.
struct publish_verdict {
    enum class action : std::uint8_t { accept, reject, rewrite };
    action act = action::accept;
    std::string text;    // rewrite: the text to store instead
    std::string reason;  // reject: why (the backend's words, or the hook's failure)
    bool hook_failed = false;  // no usable answer: `act` is the failure policy's
};

/// The message as the hook hears of it.
struct publish_request {
    std::uint64_t room = 0;
    std::string room_name;
    std::uint64_t user = 0;
    std::string user_name;
    std::string text;
};

/// Counters since start: messages accepted, rejected and rewritten by the backend; failures
/// (timeouts, non-2xx, unreadable answers, queue full), however the policy then decided.
struct publish_hook_stats {
    std::uint64_t calls = 0;
    std::uint64_t accepted = 0;
    std::uint64_t rejected = 0;
    std::uint64_t rewritten = 0;
    std::uint64_t failures = 0;
    std::uint64_t timeouts = 0;
};

class publish_hook {
public:
    using completion = std::function<void(publish_verdict)>;

    /// Starts the workers. Any thread (the server builds it before the shards run).
    explicit publish_hook(publish_hook_config cfg);
    ~publish_hook();  // stop()
    publish_hook(const publish_hook&) = delete;
    publish_hook& operator=(const publish_hook&) = delete;

    /// Queues the question; `done` runs exactly once with the verdict, on a worker thread (or
    /// at once on the calling thread when the queue is full or the hook stopped: a failure
    /// under the policy). Never waits for the network. Any thread, shards included.
    void submit(publish_request req, completion done);

    /// What the failure policy decides for a message the hook could not judge (`why`). Any thread.
    publish_verdict failure(std::string why) const;

    /// Ends the workers; questions still queued get failure("the server is stopping"). Once;
    /// not on a shard (it joins).
    void stop();

    /// Any thread.
    publish_hook_stats stats() const;
    const publish_hook_config& config() const noexcept { return cfg_; }

    /// Reads the backend's answer: the verdict, or a failure when it is not one of the three
    /// documented forms (exposed for the tests). Any thread.
    publish_verdict parse_answer(const std::string& body) const;

private:
    struct job {
        publish_request req;
        completion done;
        std::chrono::steady_clock::time_point deadline;
    };
    void run();
    publish_verdict ask(class hook_http& http, const job& j);
    void count(const publish_verdict& v);

    const publish_hook_config cfg_;
    const std::string boot_;  // the ids' per-process part (hook_random_id)
    std::atomic<std::uint64_t> next_id_{0};
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<job> queue_;  // guarded by mu_
    bool stopping_ = false;  // guarded by mu_
    std::atomic<bool> abort_{false};
    std::atomic<std::uint64_t> calls_{0}, accepted_{0}, rejected_{0}, rewritten_{0}, failures_{0}, timeouts_{0};
    std::vector<std::thread> workers_;  // last
};

}  // namespace strix::chat
