#pragma once
// token_bucket: per-session rate limit for chat messages. Holds up to `burst` tokens, refilled at
// `rate` tokens per second; each message takes one. Plain state, owned by one shard.

#include <algorithm>
#include <chrono>

namespace strix::chat {

class token_bucket {
public:
    using clock = std::chrono::steady_clock;

    /// A full bucket. Any thread (then owned by one).
    token_bucket(double rate, double burst, clock::time_point now = clock::now()) noexcept
        : rate_(rate), burst_(burst), tokens_(burst), last_(now) {}

    /// Takes one token if there is one; false means over the limit. Owning thread only.
    bool try_take(clock::time_point now = clock::now()) noexcept {
        std::chrono::duration<double> dt = now - last_;
        last_ = now;
        tokens_ = std::min(burst_, tokens_ + std::max(0.0, dt.count()) * rate_);
        if (tokens_ < 1.0) return false;
        tokens_ -= 1.0;
        return true;
    }

private:
    double rate_;
    double burst_;
    double tokens_;
    clock::time_point last_;
};

}  // namespace strix::chat
