// webhook_sink (webhook_sink.hpp): the bounded queue and the sender thread.

#include "webhook_sink.hpp"

#include "hook_http.hpp"

#include <strix/core/log.hpp>

#include <algorithm>
#include <pthread.h>

namespace strix::chat {
webhook_sink::webhook_sink(webhook_sink_config cfg)
    : cfg_(std::move(cfg)), boot_(hook_random_id()), thread_([this] { run(); }) {}

webhook_sink::~webhook_sink() { stop(); }

bool webhook_sink::push(webhook_event ev) {
    if (ev.time_ms == 0) ev.time_ms = webhook_now_ms();
    {
        std::lock_guard lk(mu_);
        if (stopping_ || queue_.size() + in_flight_ >= cfg_.queue) {
            dropped_.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        queue_.push_back(std::move(ev));
    }
    queued_.fetch_add(1, std::memory_order_relaxed);
    cv_.notify_one();
    return true;
}

std::uint64_t webhook_sink::stop() {
    if (stopped_.exchange(true)) return 0;
    std::unique_lock lk(mu_);
    stopping_ = true;
    cv_.notify_all();
    // The drain time: the sender keeps posting (and retrying) what is queued until it is empty.
    idle_cv_.wait_for(lk, cfg_.drain, [this] { return finished_; });
    abort_.store(true);
    cv_.notify_all();
    lk.unlock();
    thread_.join();
    return shutdown_dropped_;
}

webhook_stats webhook_sink::stats() const {
    webhook_stats s;
    s.queued = queued_.load(std::memory_order_relaxed);
    s.delivered = delivered_.load(std::memory_order_relaxed);
    s.dropped = dropped_.load(std::memory_order_relaxed);
    s.posts = posts_.load(std::memory_order_relaxed);
    s.retried = retried_.load(std::memory_order_relaxed);
    s.failed = failed_.load(std::memory_order_relaxed);
    std::lock_guard lk(mu_);
    s.depth = queue_.size() + in_flight_;
    return s;
}

std::string webhook_sink::batch_body(const std::vector<webhook_event>& batch) {
    // Written by hand around the events' own JSON: each event is dumped once.
    std::string body = R"({"id":")" + boot_ + "-b" + std::to_string(++next_id_) + R"(","time":)" +
                       std::to_string(webhook_now_ms()) + R"(,"events":[)";
    for (std::size_t i = 0; i < batch.size(); ++i) {
        if (i != 0) body += ',';
        body += webhook_event_json(batch[i], boot_ + "-e" + std::to_string(++next_id_));
    }
    body += "]}";
    return body;
}

void webhook_sink::run() {
    pthread_setname_np(pthread_self(), "strix-webhooks");
    hook_http http;
    std::vector<webhook_event> batch;
    for (;;) {
        batch.clear();
        {
            std::unique_lock lk(mu_);
            cv_.wait(lk, [this] { return !queue_.empty() || stopping_; });
            if (queue_.empty() || abort_.load()) break;
            const std::size_t n = std::min(queue_.size(), cfg_.batch);
            for (std::size_t i = 0; i < n; ++i) {
                batch.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
            in_flight_ = n;
        }
        const bool sent = deliver(http, batch_body(batch));
        std::lock_guard lk(mu_);
        in_flight_ = 0;
        if (sent) {
            delivered_.fetch_add(batch.size(), std::memory_order_relaxed);
        } else {
            shutdown_dropped_ += batch.size();
            break;
        }
    }
    std::lock_guard lk(mu_);
    shutdown_dropped_ += queue_.size();
    queue_.clear();
    dropped_.fetch_add(shutdown_dropped_, std::memory_order_relaxed);
    finished_ = true;
    idle_cv_.notify_all();
}

bool webhook_sink::deliver(hook_http& http, const std::string& body) {
    std::chrono::milliseconds wait = cfg_.backoff;
    for (bool first = true;; first = false) {
        if (abort_.load()) return false;
        if (!first) retried_.fetch_add(1, std::memory_order_relaxed);
        posts_.fetch_add(1, std::memory_order_relaxed);
        const hook_http::result r = http.post(cfg_.url, body, cfg_.secret, cfg_.timeout, &abort_);
        if (r.ok()) {
            if (failing_) log(log_level::info, "webhooks: {} answers again", cfg_.url);
            failing_ = false;
            return true;
        }
        if (abort_.load()) {  // the drain time ended this POST: no outage to report
            failed_.fetch_add(1, std::memory_order_relaxed);
            return false;
        }
        record_failure(r.status, r.error);
        // The backoff, cut short by the end of the drain time.
        std::unique_lock lk(mu_);
        if (cv_.wait_for(lk, wait, [this] { return abort_.load(); })) return false;
        wait = std::min(wait * 2, cfg_.backoff_max);
    }
}

void webhook_sink::record_failure(long status, const std::string& error) {
    failed_.fetch_add(1, std::memory_order_relaxed);
    if (failing_) return;  // one line per outage, not per retry
    failing_ = true;
    if (status != 0)
        log(log_level::warn, "webhooks: {} answered HTTP {}; retrying with backoff (up to {} ms)", cfg_.url, status,
            cfg_.backoff_max.count());
    else
        log(log_level::warn, "webhooks: {} unreachable ({}); retrying with backoff (up to {} ms)", cfg_.url, error,
            cfg_.backoff_max.count());
}

}  // namespace strix::chat
