#pragma once
// webhook_sink: the webhook sender (docs/webhooks.md). Shards push events into a bounded queue
// and return at once; one dedicated thread takes them out in batches, in the order pushed, and
// POSTs each batch, signed, to --webhook-url until the receiver answers 2xx:
//
//   shard ─push─> [ bounded FIFO ] ─sender thread─> POST {"id","time","events":[...]} ─> receiver
//                  full: dropped                     non-2xx / no answer: the same batch again
//                                                    after a backoff (doubling, capped)
//
// At least once: a batch leaves the queue only on a 2xx (a receiver that stored it but whose
// answer was lost gets it again, same ids). In order: one sender, one batch in flight, and a
// failed batch is retried before anything behind it, so no event overtakes an earlier one (per
// room, and globally). Shutdown (stop()) gives what is queued the drain time to go out; what
// is left then is counted as dropped.

#include "webhook_event.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strix::chat {

struct webhook_sink_config {
    std::string url;
    std::string secret;                       // the HMAC key (hook_signature.hpp)
    std::size_t queue = 10000;                // events waiting or in flight; beyond: dropped
    std::size_t batch = 100;                  // events per POST at most
    std::chrono::milliseconds timeout{5000};  // one POST, connecting included
    std::chrono::milliseconds backoff{250};   // the first retry's wait, doubled per failure...
    std::chrono::milliseconds backoff_max{30000};  // ...up to this
    std::chrono::milliseconds drain{5000};    // stop(): how long queued events may still go out
};

/// Counters since start. queued: events accepted by push(); delivered: events in a batch the
/// receiver answered 2xx; dropped: events refused by a full queue or left at shutdown;
/// posts: POSTs made; retried: POSTs that repeated a failed batch; failed: POSTs that got no 2xx;
/// depth: events waiting or in flight now.
struct webhook_stats {
    std::uint64_t queued = 0;
    std::uint64_t delivered = 0;
    std::uint64_t dropped = 0;
    std::uint64_t posts = 0;
    std::uint64_t retried = 0;
    std::uint64_t failed = 0;
    std::uint64_t depth = 0;
};

class webhook_sink {
public:
    /// Starts the sender thread. Any thread (the server builds it before the shards run).
    explicit webhook_sink(webhook_sink_config cfg);
    /// stop(), if not done.
    ~webhook_sink();
    webhook_sink(const webhook_sink&) = delete;
    webhook_sink& operator=(const webhook_sink&) = delete;

    /// Queues ev (stamped now when its time is 0). Never waits for the network: a lock held only
    /// to append. False when the queue is full or the sink stopped (counted as dropped). Any
    /// thread, shards included.
    bool push(webhook_event ev);

    /// Sends what is queued for up to the drain time, then abandons the rest (counted as
    /// dropped, a POST in flight included) and joins the thread. Returns the events dropped
    /// at shutdown. Not on a shard (it waits); once.
    std::uint64_t stop();

    /// Any thread.
    webhook_stats stats() const;
    const webhook_sink_config& config() const noexcept { return cfg_; }

private:
    void run();
    std::string batch_body(const std::vector<webhook_event>& batch);
    // POSTs body until a 2xx (true) or until stop()'s drain time is over (false).
    bool deliver(class hook_http& http, const std::string& body);
    void record_failure(long status, const std::string& error);

    const webhook_sink_config cfg_;
    const std::string boot_;  // random per process: ids unique across restarts
    std::uint64_t next_id_ = 0;  // sender thread only

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::condition_variable idle_cv_;  // the sender thread finished (queue empty after stop)
    std::deque<webhook_event> queue_;  // guarded by mu_
    std::size_t in_flight_ = 0;        // guarded by mu_: the batch being posted
    bool stopping_ = false;            // guarded by mu_
    bool finished_ = false;            // guarded by mu_
    std::atomic<bool> abort_{false};   // the drain time is over: end the POST in flight
    std::atomic<bool> stopped_{false};
    std::uint64_t shutdown_dropped_ = 0;  // sender thread, read after join
    bool failing_ = false;                // sender thread: logged the current outage

    std::atomic<std::uint64_t> queued_{0}, delivered_{0}, dropped_{0}, posts_{0}, retried_{0}, failed_{0};
    std::thread thread_;  // last: starts once everything above exists
};

}  // namespace strix::chat
