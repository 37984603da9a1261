#pragma once
// Metrics: per-shard counters, gauges and histograms, each declared once, next to what it counts,
// with its Prometheus name, help and labels. A metric_group is one shard's set of them:
//
//     struct net_counters : strix::metric_group {
//         strix::counter reads{*this, "strix_io_reads_total", "read system calls that returned data"};
//         strix::gauge active{*this, "strix_sessions_active", "sessions open"};
//     };
//
//     bump(counters.reads);              // on the owning shard: the increment site
//     registry.add(counters);            // once per shard instance (metrics_registry.hpp); a
//     registry.render();                 // scrape sums each metric over the shards' instances
//
// Single writer: only the owning shard writes a cell, with a relaxed load and a relaxed store
// (two plain movs on x86: no locked instruction, no atomic read-modify-write). Any thread reads,
// with relaxed loads: a scrape sees every value as of some recent moment, and values of one group
// are not a consistent cut.
//
// A group records where its cells are as offsets from itself, so copying a group (a derived
// struct of cells) gives a snapshot that describes itself too: server::stats() sums the shards'
// net_counters into one such copy with merge().

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace strix {

enum class metric_kind : std::uint8_t { counter, gauge, histogram };

/// How a gauge's per-shard values combine into one: added up (open sessions) or the largest
/// (the longest loop turn of any shard).
enum class merge_by : std::uint8_t { sum, max };

/// What a metric is. Its strings are not copied: give literals (or storage that outlives every
/// group and registry that sees them).
struct metric_info {
    std::string_view name;    // [a-zA-Z_:][a-zA-Z0-9_:]*; counters end in _total by convention
    std::string_view help;
    metric_kind kind = metric_kind::counter;
    // Constant labels in exposition syntax without the braces: source="mesh",dir="in". Metrics
    // of one name with different labels are the series of one family (one # HELP, one # TYPE).
    std::string_view labels;
    merge_by merge = merge_by::sum;  // gauges
    // Histograms: upper bounds of the buckets, ascending, in observed units, in static storage;
    // an observation v falls in the first bucket with v <= bound (or above all of them). scale is
    // the observed units per rendered unit: 1e9 observes nanoseconds and renders seconds.
    std::span<const std::uint64_t> bounds;
    double scale = 1;
};

class metric_group;

/// A monotonically increasing count, written by one shard.
class counter {
public:
    counter() noexcept = default;
    /// Declares this counter in g (its enclosing struct). Aborts on an invalid name or labels.
    counter(metric_group& g, std::string_view name, std::string_view help, std::string_view labels = {});
    counter(const counter& o) noexcept : v_(o.value()) {}
    counter& operator=(const counter& o) noexcept {
        v_.store(o.value(), std::memory_order_relaxed);
        return *this;
    }

    /// Adds n. The owning shard only: a relaxed load and store, no locked instruction.
    void add(std::uint64_t n = 1) noexcept {
        v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    /// The count now. Any thread.
    std::uint64_t value() const noexcept { return v_.load(std::memory_order_relaxed); }
    operator std::uint64_t() const noexcept { return value(); }

private:
    std::atomic<std::uint64_t> v_{0};
};

/// A level (open sessions, bytes queued), written by one shard; never below zero on its shard.
class gauge {
public:
    gauge() noexcept = default;
    /// Declares this gauge in g. Aborts on an invalid name or labels.
    gauge(metric_group& g, std::string_view name, std::string_view help, merge_by merge = merge_by::sum,
          std::string_view labels = {});
    gauge(const gauge& o) noexcept : v_(o.value()) {}
    gauge& operator=(const gauge& o) noexcept {
        set(o.value());
        return *this;
    }

    /// Writers: the owning shard only (relaxed load and store).
    void set(std::uint64_t v) noexcept { v_.store(v, std::memory_order_relaxed); }
    void add(std::uint64_t n = 1) noexcept { set(value() + n); }
    void sub(std::uint64_t n = 1) noexcept { set(value() - n); }
    /// Sets v if it is above the value now (a high-water mark).
    void raise_to(std::uint64_t v) noexcept {
        if (v > value()) set(v);
    }
    /// The level now. Any thread.
    std::uint64_t value() const noexcept { return v_.load(std::memory_order_relaxed); }
    operator std::uint64_t() const noexcept { return value(); }

private:
    std::atomic<std::uint64_t> v_{0};
};

/// Observations counted in fixed buckets, with their sum, written by one shard.
class histogram {
public:
    /// An undeclared histogram (a snapshot to merge() into, or a test's).
    explicit histogram(std::span<const std::uint64_t> bounds, double scale = 1);
    /// Declares this histogram in g; bounds and scale as in metric_info. Aborts on an invalid
    /// name or labels, or bounds that do not ascend.
    histogram(metric_group& g, std::string_view name, std::string_view help, std::span<const std::uint64_t> bounds,
              double scale = 1, std::string_view labels = {});
    histogram(const histogram& o);
    /// Aborts unless o has the same bounds.
    histogram& operator=(const histogram& o);

    /// Counts v in its bucket and adds it to the sum. The owning shard only: a short scan of
    /// the bounds, two relaxed load-store pairs.
    void observe(std::uint64_t v) noexcept {
        std::size_t i = 0;
        while (i < bounds_.size() && v > bounds_[i]) ++i;
        add_to(counts_[i], 1);
        add_to(sum_, v);
    }

    std::span<const std::uint64_t> bounds() const noexcept { return bounds_; }
    double scale() const noexcept { return scale_; }
    /// Observations in bucket i alone (not cumulative); i == bounds().size() is the bucket above
    /// every bound. Any thread.
    std::uint64_t bucket(std::size_t i) const noexcept { return counts_[i].load(std::memory_order_relaxed); }
    /// Observations in all buckets, and their sum. Any thread.
    std::uint64_t count() const noexcept;
    std::uint64_t sum() const noexcept { return sum_.load(std::memory_order_relaxed); }

    /// Adds o's buckets and sum to this one's (same bounds, else aborts). The writer of this one.
    void merge(const histogram& o) noexcept;

private:
    static void add_to(std::atomic<std::uint64_t>& a, std::uint64_t n) noexcept {
        a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }

    std::span<const std::uint64_t> bounds_;
    double scale_ = 1;
    std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;  // bounds_.size() + 1
    std::atomic<std::uint64_t> sum_{0};
};

/// One shard's set of declared metrics: derive a struct from it and declare the cells as its
/// members (`counter x{*this, name, help}`). The cells must be members of the derived struct:
/// the group finds them by their offset from itself.
class metric_group {
public:
    struct entry {
        metric_info info;
        std::ptrdiff_t offset;  // of the cell from this group
    };

    metric_group() = default;
    // Copies (of the derived struct) keep the entries: the offsets hold for them too.
    metric_group(const metric_group&) = default;
    metric_group& operator=(const metric_group&) = default;

    /// The declared metrics, in declaration order. Any thread (fixed once constructed).
    std::span<const entry> entries() const noexcept { return entries_; }

    /// The cell an entry describes. Any thread may read it.
    const counter& counter_at(const entry& e) const noexcept { return *static_cast<const counter*>(at(e)); }
    const gauge& gauge_at(const entry& e) const noexcept { return *static_cast<const gauge*>(at(e)); }
    const histogram& histogram_at(const entry& e) const noexcept { return *static_cast<const histogram*>(at(e)); }

    /// Adds o's values to this group's: counters and histograms add up, gauges add up or keep
    /// the larger value (their merge_by). o must declare the same metrics (the same struct),
    /// else this aborts. The writer of this group (a snapshot's owner); o may be written by its
    /// shard meanwhile.
    void merge(const metric_group& o) noexcept;

private:
    friend class counter;
    friend class gauge;
    friend class histogram;
    void declare(const void* cell, const metric_info& info);
    const void* at(const entry& e) const noexcept { return reinterpret_cast<const char*>(this) + e.offset; }
    void* at(const entry& e) noexcept { return reinterpret_cast<char*>(this) + e.offset; }

    std::vector<entry> entries_;
};

/// Increments a single-writer counter or gauge (the increment site). Owning shard only.
inline void bump(counter& c, std::uint64_t n = 1) noexcept { c.add(n); }
inline void bump(gauge& g, std::uint64_t n = 1) noexcept { g.add(n); }
/// Sets a single-writer gauge. Owning shard only.
inline void set_gauge(gauge& g, std::uint64_t v) noexcept { g.set(v); }

namespace detail {
/// Checks a metric's name and labels; aborts with a message naming it when they are invalid.
void check_metric_info(const metric_info& info) noexcept;
}  // namespace detail

}  // namespace strix
