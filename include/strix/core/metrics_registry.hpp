#pragma once
// metrics_registry: the metrics a process exposes, rendered in the Prometheus text exposition
// format (version 0.0.4). Registered are metric groups (metrics.hpp: one shard's instance each,
// so a metric has one cell per shard) and metrics read by a callable at scrape (a queue depth
// another object already knows). A scrape sums each series over its cells:
//
//     # HELP strix_io_reads_total read system calls that returned data
//     # TYPE strix_io_reads_total counter
//     strix_io_reads_total 1234                          <- shard 0's cell + shard 1's + ...
//     # HELP strix_tasks_total tasks run, by where they were posted from
//     # TYPE strix_tasks_total counter
//     strix_tasks_total{source="local"} 10               <- one family, one series per labels
//     strix_tasks_total{source="mesh"} 7
//     # TYPE strix_loop_turn_seconds histogram
//     strix_loop_turn_seconds_bucket{le="5e-05"} 90      <- cumulative, as Prometheus wants
//     strix_loop_turn_seconds_bucket{le="+Inf"} 100
//     strix_loop_turn_seconds_sum 0.0123
//     strix_loop_turn_seconds_count 100
//
// Families come in the order their first metric was registered, series in the order their
// first cell was. Gauges merge over shards by their merge_by (sum or max).
//
// Threads: every function may be called from any thread; a mutex orders them (registrations are
// rare, scrapes are seconds apart; the shards writing the cells never take it). A registration
// removes its metrics when it is destroyed, so drop it before what it points at goes away; the
// registry must outlive every registration (it aborts when destroyed with some still alive).

#include <strix/core/metrics.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace strix {

class metrics_registry {
public:
    /// Keeps what one add() registered in the registry; destroying (or reset()) removes it.
    class registration {
    public:
        registration() noexcept = default;
        registration(registration&& o) noexcept : reg_(o.reg_), id_(o.id_) { o.reg_ = nullptr; }
        registration& operator=(registration&& o) noexcept;
        ~registration() { reset(); }
        /// Removes the metrics now (waits for a scrape in progress). Any thread.
        void reset() noexcept;
        explicit operator bool() const noexcept { return reg_ != nullptr; }

    private:
        friend class metrics_registry;
        registration(metrics_registry* r, std::uint64_t id) noexcept : reg_(r), id_(id) {}
        metrics_registry* reg_ = nullptr;
        std::uint64_t id_ = 0;
    };

    /// Reads a callback metric's value at scrape, on the scraping thread with the registry's lock
    /// held (it must not call the registry).
    using reader = std::function<std::uint64_t()>;

    metrics_registry() = default;
    ~metrics_registry();
    metrics_registry(const metrics_registry&) = delete;
    metrics_registry& operator=(const metrics_registry&) = delete;

    /// Registers every metric g declares (g: one shard's instance; add each shard's). g stays
    /// where it is until the registration is dropped. Aborts, naming the metric, when one of
    /// them disagrees with what is already registered under its name (type, help, merge,
    /// buckets), or repeats a series of g itself.
    [[nodiscard]] registration add(const metric_group& g);

    /// Registers a counter or gauge whose value read() returns at scrape. info.kind must not be
    /// histogram; its strings are copied.
    [[nodiscard]] registration add(const metric_info& info, reader read);
    [[nodiscard]] registration add_counter(std::string_view name, std::string_view help, reader read);
    [[nodiscard]] registration add_gauge(std::string_view name, std::string_view help, reader read);

    /// Shows the family declared as `name` as `shown_name` with `shown_help` (an application
    /// naming an engine metric in its own words: the engine's handshake timeouts are the chat
    /// server's login timeouts). Empty shown_help keeps the declared help. Applies to families
    /// registered before and after the call.
    void rename(std::string_view name, std::string shown_name, std::string shown_help = {});

    /// The text exposition of every family that has something registered now.
    std::string render() const;

    /// The value of one series (summed, or the max, over its cells), or -1 when nothing is
    /// registered under that name and labels; histograms give their count. By declared name.
    long long value(std::string_view name, std::string_view labels = {}) const;

private:
    struct source {
        std::uint64_t id;  // the registration
        std::variant<const counter*, const gauge*, const histogram*, reader> from;
    };
    struct series {
        std::string labels;
        std::vector<source> sources;
    };
    struct family {
        std::string name, help;
        metric_kind kind;
        merge_by merge;
        std::vector<std::uint64_t> bounds;
        double scale;
        std::vector<series> all;
        bool live() const noexcept;
    };

    family& family_for(const metric_info& info);
    series& series_for(family& f, std::string_view labels, std::uint64_t id);
    void remove(std::uint64_t id) noexcept;
    static std::uint64_t scalar(const family& f, const series& s);
    void render_family(std::string& out, const family& f) const;

    mutable std::mutex mu_;
    std::vector<family> families_;
    std::map<std::string, std::size_t, std::less<>> index_;  // name -> families_
    std::map<std::string, std::pair<std::string, std::string>, std::less<>> renames_;
    std::uint64_t next_id_ = 1;
    std::size_t live_ = 0;  // registrations not yet dropped
};

}  // namespace strix
