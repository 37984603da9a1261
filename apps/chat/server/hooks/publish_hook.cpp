// publish_hook (publish_hook.hpp): the workers, the request's JSON and the answer's reading.

#include "publish_hook.hpp"

#include "hook_http.hpp"
#include "webhook_event.hpp"

#include <nlohmann/json.hpp>

#include <pthread.h>

namespace strix::chat {
namespace {

// An answer longer than this is no verdict (a rewrite is at most max_text bytes of JSON string).
constexpr std::size_t max_answer = 64 * 1024;

}  // namespace

publish_hook::publish_hook(publish_hook_config cfg) : cfg_(std::move(cfg)), boot_(hook_random_id()) {
    const unsigned n = cfg_.workers == 0 ? 1 : cfg_.workers;
    workers_.reserve(n);
    for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this] { run(); });
}

publish_hook::~publish_hook() { stop(); }

publish_verdict publish_hook::failure(std::string why) const {
    publish_verdict v;
    v.hook_failed = true;
    v.act = cfg_.fail_open ? publish_verdict::action::accept : publish_verdict::action::reject;
    v.reason = std::move(why);
    return v;
}

void publish_hook::submit(publish_request req, completion done) {
    calls_.fetch_add(1, std::memory_order_relaxed);
    {
        std::lock_guard lk(mu_);
        if (!stopping_ && queue_.size() < cfg_.queue) {
            queue_.push_back(job{std::move(req), std::move(done), std::chrono::steady_clock::now() + cfg_.timeout});
            cv_.notify_one();
            return;
        }
    }
    publish_verdict v = failure("the publish hook is overloaded; retry later");
    count(v);
    done(std::move(v));
}

void publish_hook::stop() {
    {
        std::lock_guard lk(mu_);
        if (stopping_) return;
        stopping_ = true;
    }
    abort_.store(true);
    cv_.notify_all();
    for (auto& t : workers_) t.join();
    // The workers are gone: nobody else touches the queue.
    for (job& j : queue_) {
        publish_verdict v = failure("the server is stopping");
        count(v);
        j.done(std::move(v));
    }
    queue_.clear();
}

publish_hook_stats publish_hook::stats() const {
    publish_hook_stats s;
    s.calls = calls_.load(std::memory_order_relaxed);
    s.accepted = accepted_.load(std::memory_order_relaxed);
    s.rejected = rejected_.load(std::memory_order_relaxed);
    s.rewritten = rewritten_.load(std::memory_order_relaxed);
    s.failures = failures_.load(std::memory_order_relaxed);
    s.timeouts = timeouts_.load(std::memory_order_relaxed);
    return s;
}

void publish_hook::run() {
    pthread_setname_np(pthread_self(), "strix-pubhook");
    hook_http http;
    for (;;) {
        job j;
        {
            std::unique_lock lk(mu_);
            cv_.wait(lk, [this] { return !queue_.empty() || stopping_; });
            if (stopping_) return;  // stop() answers what is left
            j = std::move(queue_.front());
            queue_.pop_front();
        }
        publish_verdict v = ask(http, j);
        count(v);
        j.done(std::move(v));
    }
}

publish_verdict publish_hook::ask(hook_http& http, const job& j) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(j.deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
        timeouts_.fetch_add(1, std::memory_order_relaxed);
        return failure("the publish hook did not answer in time");
    }
    nlohmann::json body = {{"id", boot_ + "-p" + std::to_string(next_id_.fetch_add(1) + 1)},
                           {"time", webhook_now_ms()},
                           {"type", "message.publish"},
                           {"room", {{"id", j.req.room}, {"name", j.req.room_name}}},
                           {"user", {{"id", j.req.user}, {"name", j.req.user_name}}},
                           {"text", j.req.text}};
    const std::string text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const hook_http::result r = http.post(cfg_.url, text, cfg_.secret, left, &abort_, max_answer);
    if (r.status == 0) {
        // curl says "Operation timed out" for both the connect and the transfer limits.
        if (r.error.find("timed out") != std::string::npos) {
            timeouts_.fetch_add(1, std::memory_order_relaxed);
            return failure("the publish hook did not answer in time");
        }
        return failure("the publish hook is unreachable");
    }
    if (!r.ok()) return failure("the publish hook answered HTTP " + std::to_string(r.status));
    return parse_answer(r.body);
}

publish_verdict publish_hook::parse_answer(const std::string& body) const {
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("action") || !j["action"].is_string())
        return failure("the publish hook's answer is not {\"action\": ...}");
    const std::string action = j["action"].get<std::string>();
    publish_verdict v;
    if (action == "accept") return v;
    if (action == "reject") {
        v.act = publish_verdict::action::reject;
        v.reason = j.contains("reason") && j["reason"].is_string() ? j["reason"].get<std::string>()
                                                                   : std::string("refused by the application");
        return v;
    }
    if (action == "rewrite") {
        if (!j.contains("text") || !j["text"].is_string()) return failure("the publish hook's rewrite has no text");
        v.act = publish_verdict::action::rewrite;
        v.text = j["text"].get<std::string>();
        if (v.text.empty() || v.text.size() > cfg_.max_text)
            return failure("the publish hook's rewrite is empty or longer than a message may be");
        return v;
    }
    return failure("the publish hook's action is not accept, reject or rewrite");
}

void publish_hook::count(const publish_verdict& v) {
    if (v.hook_failed) {
        failures_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    switch (v.act) {
        case publish_verdict::action::accept: accepted_.fetch_add(1, std::memory_order_relaxed); break;
        case publish_verdict::action::reject: rejected_.fetch_add(1, std::memory_order_relaxed); break;
        case publish_verdict::action::rewrite: rewritten_.fetch_add(1, std::memory_order_relaxed); break;
    }
}

}  // namespace strix::chat
