#pragma once
// chat_hooks: the webhook sender and the publish hook as the chat server holds them
// (docs/webhooks.md), and what turns sessions into user.online / user.offline. Built by
// chat_server before the shards run when --webhook-url or --publish-hook-url is given, reached by
// the shards through chat_context::hooks (null without either), stopped after the shards.
//
// Presence is counted per account on one shard, presence_shard(account): a session's shard posts
// +1 at its login and -1 at its close there (FIFO per pair of shards), and the counting shard
// emits user.online on 0 -> 1 and user.offline on 1 -> 0. Two sessions of one account on
// different shards may be seen out of order (one closing as the other logs in), which can give an
// offline/online pair where a single view would see none: the events describe this server's
// sessions, not a user's intent.

#include "hook_options.hpp"
#include "publish_hook.hpp"
#include "webhook_sink.hpp"

#include <strix/core/metrics_registry.hpp>

#include <boost/unordered/unordered_flat_map.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace strix::chat {

class chat_hooks {
public:
    /// Reads the secret file and starts the sender and the publish hook the options ask for.
    /// Throws std::runtime_error with one sentence (an unreadable or short secret). Main thread.
    chat_hooks(const hook_options& o, unsigned shards, std::size_t max_text);
    ~chat_hooks();
    chat_hooks(const chat_hooks&) = delete;
    chat_hooks& operator=(const chat_hooks&) = delete;

    /// The sender (null without --webhook-url) and the publish hook (null without
    /// --publish-hook-url). Any thread.
    webhook_sink* webhooks() noexcept { return sink_.get(); }
    publish_hook* publish() noexcept { return publish_.get(); }

    /// Queues ev when webhooks are on (never waits; a full queue drops and counts it). Any thread.
    void emit(webhook_event ev) {
        if (sink_) sink_->push(std::move(ev));
    }
    /// Whether room `name`'s messages go out as message.stored (--webhook-messages). Any thread.
    bool wants_messages(const std::string& name) const { return sink_ && webhook_messages_match(options_, name); }

    /// The shard that counts `account`'s sessions. Any thread.
    unsigned presence_shard(std::uint64_t account) const noexcept {
        return static_cast<unsigned>(account % presence_.size());
    }
    /// A session of `account` logged in / closed; on shard presence_shard(account) only.
    void session_up(std::uint64_t account, const std::string& name);
    void session_down(std::uint64_t account);

    /// Stops the publish hook, then gives the sender its drain time; returns the webhook events
    /// dropped at shutdown. After the shards stopped; main thread.
    std::uint64_t stop();

    /// The webhook and publish hook counters under /metrics. Main thread, before serving.
    void register_metrics(metrics_registry& r, std::vector<metrics_registry::registration>& regs);

private:
    struct account_sessions {
        unsigned sessions = 0;
        std::string name;
    };
    const hook_options options_;
    std::unique_ptr<webhook_sink> sink_;
    std::unique_ptr<publish_hook> publish_;
    // One map per shard, each touched by its shard only.
    std::vector<boost::unordered_flat_map<std::uint64_t, account_sessions>> presence_;
};

}  // namespace strix::chat
