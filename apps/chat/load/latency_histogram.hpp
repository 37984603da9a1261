#pragma once
// latency_histogram: a log-linear histogram of nanosecond latencies (HdrHistogram's layout, written
// small). Values below 256 ns get a bucket each; above that every power of two is split into 128
// equal buckets, so a percentile is off by at most 1/128 (0.8 %) of its value. Values from 2^40 ns
// (~18 minutes) up land in the last bucket.
//
//   index: [0 .. 255]          one bucket per ns
//          [256 + 128*(e-8) ..] octave [2^e, 2^(e+1)), e = 8..39, 128 buckets of 2^(e-7) ns
//
// Besides the buckets it keeps exact count, sum, min and max, and the exact counts of the Chat
// server portfolio's latency bands (<=100 us, <=500 us, <=1 ms, <=5 ms, <=50 ms, >50 ms). Merging
// two histograms is a bucket-wise sum, so per-thread and per-interval histograms add up to exact
// totals.

#include <array>
#include <bit>
#include <cstdint>

namespace strix::chat {

class latency_histogram {
public:
    static constexpr int linear_bits = 8;  // 256 exact buckets, then 128 per octave
    static constexpr int max_exponent = 40;
    static constexpr std::size_t bucket_count =
        (std::size_t{1} << linear_bits) + (max_exponent - linear_bits) * (std::size_t{1} << (linear_bits - 1));
    /// Upper limits of the Chat server portfolio's bands; a seventh band counts everything above 50 ms.
    static constexpr std::array<std::uint64_t, 5> band_limits_ns = {100'000, 500'000, 1'000'000, 5'000'000, 50'000'000};
    static constexpr std::size_t band_count = band_limits_ns.size() + 1;

    /// Counts one latency of `ns` nanoseconds. Owner thread only.
    void record(std::uint64_t ns) noexcept {
        ++buckets_[index_of(ns)];
        ++count_;
        sum_ += ns;
        if (ns < min_) min_ = ns;
        if (ns > max_) max_ = ns;
        std::size_t b = 0;
        while (b < band_limits_ns.size() && ns > band_limits_ns[b]) ++b;
        ++bands_[b];
    }

    /// Adds every count of `o` to this one. Owner thread only (o must not change meanwhile).
    void merge(const latency_histogram& o) noexcept {
        for (std::size_t i = 0; i < bucket_count; ++i) buckets_[i] += o.buckets_[i];
        for (std::size_t i = 0; i < band_count; ++i) bands_[i] += o.bands_[i];
        count_ += o.count_;
        sum_ += o.sum_;
        if (o.min_ < min_) min_ = o.min_;
        if (o.max_ > max_) max_ = o.max_;
    }

    /// Forgets every value. Owner thread only.
    void reset() noexcept { *this = latency_histogram{}; }

    /// Number of values recorded. Owner thread only.
    std::uint64_t count() const noexcept { return count_; }
    /// Smallest value, 0 when empty. Owner thread only.
    std::uint64_t min_ns() const noexcept { return count_ == 0 ? 0 : min_; }
    /// Largest value, 0 when empty. Owner thread only.
    std::uint64_t max_ns() const noexcept { return max_; }
    /// Exact arithmetic mean, 0 when empty. Owner thread only.
    double mean_ns() const noexcept {
        return count_ == 0 ? 0.0 : static_cast<double>(sum_) / static_cast<double>(count_);
    }

    /// The smallest bucket value v such that at least p percent of the values are <= v (within
    /// the bucket resolution; clamped to [min, max]). p in [0, 100]; 0 when empty.
    /// Owner thread only.
    std::uint64_t percentile_ns(double p) const noexcept {
        if (count_ == 0) return 0;
        if (p <= 0) return min_;
        if (p >= 100) return max_;
        // The rank of the value asked for, 1-based, rounded up (p99 of 100 values is the 99th).
        auto rank = static_cast<std::uint64_t>(p / 100.0 * static_cast<double>(count_));
        if (static_cast<double>(rank) < p / 100.0 * static_cast<double>(count_)) ++rank;
        if (rank == 0) rank = 1;
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < bucket_count; ++i) {
            seen += buckets_[i];
            if (seen >= rank) {
                std::uint64_t v = highest_in(i);
                if (v > max_) v = max_;
                if (v < min_) v = min_;
                return v;
            }
        }
        return max_;
    }

    /// Exact counts per band: <=100 us, <=500 us, <=1 ms, <=5 ms, <=50 ms, >50 ms.
    /// Owner thread only.
    const std::array<std::uint64_t, band_count>& bands() const noexcept { return bands_; }

    /// The bucket `ns` falls in. Pure.
    static constexpr std::size_t index_of(std::uint64_t ns) noexcept {
        constexpr std::uint64_t linear = std::uint64_t{1} << linear_bits;
        if (ns < linear) return static_cast<std::size_t>(ns);
        const int e = 63 - std::countl_zero(ns);
        if (e >= max_exponent) return bucket_count - 1;
        const int shift = e - (linear_bits - 1);
        const std::uint64_t top = ns >> shift;  // in [128, 256)
        return static_cast<std::size_t>(linear + static_cast<std::uint64_t>(e - linear_bits) * (linear / 2) +
                                        (top - linear / 2));
    }

    /// The largest value that falls in bucket i. Pure.
    static constexpr std::uint64_t highest_in(std::size_t i) noexcept {
        constexpr std::size_t linear = std::size_t{1} << linear_bits;
        if (i < linear) return i;
        const std::size_t k = i - linear;
        const int e = static_cast<int>(k / (linear / 2)) + linear_bits;
        const std::uint64_t top = (k % (linear / 2)) + linear / 2;
        const int shift = e - (linear_bits - 1);
        return ((top + 1) << shift) - 1;
    }

private:
    std::array<std::uint64_t, bucket_count> buckets_{};
    std::array<std::uint64_t, band_count> bands_{};
    std::uint64_t count_ = 0;
    std::uint64_t sum_ = 0;
    std::uint64_t min_ = ~std::uint64_t{0};
    std::uint64_t max_ = 0;
};

}  // namespace strix::chat
