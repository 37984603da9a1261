#pragma once
// token_bucket: per-session rate limit for chat messages. Holds up to `burst` tokens, refilled at
// `rate` tokens per second; each message takes one. Plain state, owned by one shard.
//
// The rate and burst are the server's, the same for every session: a rate_limit held once and
// passed to each take, so a bucket is its tokens and its last refill (16 bytes, where carrying
// the limit too made 32; three per session, at a million sessions 48 MB).

#include <algorithm>
#include <chrono>

namespace strix::chat {

/// A bucket's refill rate (tokens per second) and its size.
struct rate_limit {
    double rate = 0.0;
    double burst = 0.0;
};

class token_bucket {
public:
    using clock = std::chrono::steady_clock;

    /// A full bucket under `limit`. Any thread (then owned by one).
    explicit token_bucket(const rate_limit& limit, clock::time_point now = clock::now()) noexcept
        : tokens_(limit.burst), last_(now.time_since_epoch().count()) {}

    /// Takes one token if there is one; false means over the limit. `limit` is the one the
    /// bucket was made with. Owning thread only.
    bool try_take(const rate_limit& limit, clock::time_point now = clock::now()) noexcept {
        const clock::rep at = now.time_since_epoch().count();
        std::chrono::duration<double> dt = clock::duration(at - last_);
        last_ = at;
        tokens_ = std::min(limit.burst, tokens_ + std::max(0.0, dt.count()) * limit.rate);
        if (tokens_ < 1.0) return false;
        tokens_ -= 1.0;
        return true;
    }

private:
    double tokens_;
    clock::rep last_;
};

}  // namespace strix::chat
