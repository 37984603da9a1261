// chat_hooks (chat_hooks.hpp): building the hooks, presence counting, metrics.

#include "chat_hooks.hpp"

#include <strix/core/log.hpp>

namespace strix::chat {

chat_hooks::chat_hooks(const hook_options& o, unsigned shards, std::size_t max_text)
    : options_(o), presence_(shards == 0 ? 1 : shards) {
    const std::string secret = read_hook_secret(o.secret_file);
    if (o.webhooks()) {
        sink_ = std::make_unique<webhook_sink>(webhook_config(o, secret));
        log(log_level::info, "webhooks to {} (queue {}, message.stored for rooms matching '{}')", o.webhook_url,
            o.queue, o.messages_pattern.empty() ? std::string("none") : o.messages_pattern);
    }
    if (o.publish()) {
        publish_ = std::make_unique<publish_hook>(publish_config(o, secret, max_text));
        log(log_level::info, "publish hook {} ({} ms, fail-{})", o.publish_url, o.publish_timeout_ms,
            o.publish_failure);
    }
}

chat_hooks::~chat_hooks() { stop(); }

void chat_hooks::session_up(std::uint64_t account, const std::string& name) {
    if (!sink_) return;
    account_sessions& a = presence_[presence_shard(account)][account];
    if (a.sessions++ != 0) return;
    a.name = name;
    webhook_event ev;
    ev.kind = webhook_kind::user_online;
    ev.user = account;
    ev.user_name = name;
    sink_->push(std::move(ev));
}

void chat_hooks::session_down(std::uint64_t account) {
    if (!sink_) return;
    auto& map = presence_[presence_shard(account)];
    auto it = map.find(account);
    if (it == map.end()) return;
    if (--it->second.sessions != 0) return;
    webhook_event ev;
    ev.kind = webhook_kind::user_offline;
    ev.user = account;
    ev.user_name = std::move(it->second.name);
    map.erase(it);
    sink_->push(std::move(ev));
}

std::uint64_t chat_hooks::stop() {
    if (publish_) publish_->stop();
    if (!sink_) return 0;
    const std::uint64_t left = sink_->stop();
    const webhook_stats s = sink_->stats();
    if (left != 0 || s.dropped != 0)
        log(log_level::warn, "webhooks: {} events left undelivered at shutdown (--webhook-drain-ms), {} dropped in all",
            left, s.dropped);
    return left;
}

void chat_hooks::register_metrics(metrics_registry& r, std::vector<metrics_registry::registration>& regs) {
    if (webhook_sink* s = sink_.get()) {
        regs.push_back(r.add_counter("strix_webhook_events_queued_total", "webhook events accepted into the queue",
                                     [s] { return s->stats().queued; }));
        regs.push_back(r.add_counter("strix_webhook_events_delivered_total",
                                     "webhook events the receiver acknowledged (2xx)",
                                     [s] { return s->stats().delivered; }));
        regs.push_back(r.add_counter("strix_webhook_events_dropped_total",
                                     "webhook events dropped: the queue was full, or left at shutdown",
                                     [s] { return s->stats().dropped; }));
        regs.push_back(
            r.add_counter("strix_webhook_posts_total", "webhook POSTs made", [s] { return s->stats().posts; }));
        regs.push_back(r.add_counter("strix_webhook_posts_retried_total", "webhook POSTs that repeated a failed batch",
                                     [s] { return s->stats().retried; }));
        regs.push_back(r.add_counter("strix_webhook_posts_failed_total",
                                     "webhook POSTs without a 2xx answer (refused, timed out, non-2xx)",
                                     [s] { return s->stats().failed; }));
        regs.push_back(r.add_gauge("strix_webhook_queue_depth", "webhook events waiting or in flight",
                                   [s] { return s->stats().depth; }));
    }
    if (publish_hook* p = publish_.get()) {
        regs.push_back(r.add_counter("strix_publish_hook_calls_total", "chat messages submitted to the publish hook",
                                     [p] { return p->stats().calls; }));
        regs.push_back(r.add_counter("strix_publish_hook_accepted_total", "messages the publish hook accepted",
                                     [p] { return p->stats().accepted; }));
        regs.push_back(r.add_counter("strix_publish_hook_rejected_total", "messages the publish hook rejected",
                                     [p] { return p->stats().rejected; }));
        regs.push_back(r.add_counter("strix_publish_hook_rewritten_total", "messages the publish hook rewrote",
                                     [p] { return p->stats().rewritten; }));
        regs.push_back(r.add_counter("strix_publish_hook_failures_total",
                                     "publish hook calls without a verdict (then --publish-hook-failure decides)",
                                     [p] { return p->stats().failures; }));
        regs.push_back(r.add_counter("strix_publish_hook_timeouts_total",
                                     "publish hook calls past --publish-hook-timeout-ms",
                                     [p] { return p->stats().timeouts; }));
    }
}

}  // namespace strix::chat
