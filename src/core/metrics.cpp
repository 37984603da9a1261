#include <strix/core/metrics.hpp>

#include <strix/core/format.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace strix {
namespace {

[[noreturn]] void invalid(const metric_info& info, const char* why) noexcept {
    strix::print(stderr, "strix: metric {}: {}\n", info.name, why);
    std::abort();
}

bool name_char(char c, bool first) noexcept {
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    return first ? alpha || c == ':' : alpha || c == ':' || (c >= '0' && c <= '9');
}

bool label_char(char c, bool first) noexcept { return c != ':' && name_char(c, first); }

// name="value"(,name="value")*, with \\, \" and \n the only escapes inside a value.
bool valid_labels(std::string_view s) noexcept {
    std::size_t i = 0;
    while (i < s.size()) {
        const std::size_t start = i;
        while (i < s.size() && label_char(s[i], i == start)) ++i;
        if (i == start || i + 1 >= s.size() || s[i] != '=' || s[i + 1] != '"') return false;
        for (i += 2; i < s.size() && s[i] != '"'; ++i)
            if (s[i] == '\\' && (++i == s.size() || (s[i] != '\\' && s[i] != '"' && s[i] != 'n'))) return false;
        if (i == s.size()) return false;  // no closing quote
        if (++i == s.size()) return true;
        if (s[i++] != ',') return false;
    }
    return false;  // empty, or a trailing comma
}

}  // namespace

namespace detail {

void check_metric_info(const metric_info& info) noexcept {
    if (info.name.empty()) invalid(info, "empty name");
    for (std::size_t i = 0; i < info.name.size(); ++i)
        if (!name_char(info.name[i], i == 0)) invalid(info, "invalid name (want [a-zA-Z_:][a-zA-Z0-9_:]*)");
    if (!info.labels.empty() && !valid_labels(info.labels))
        invalid(info, "invalid labels (want name=\"value\",... without braces)");
    if (info.kind == metric_kind::histogram) {
        if (info.labels.find("le=") != std::string_view::npos) invalid(info, "a histogram's labels may not use le");
        if (!(info.scale > 0)) invalid(info, "histogram scale must be positive");
        for (std::size_t i = 1; i < info.bounds.size(); ++i)
            if (info.bounds[i] <= info.bounds[i - 1]) invalid(info, "histogram bounds must ascend");
    }
}

}  // namespace detail

counter::counter(metric_group& g, std::string_view name, std::string_view help, std::string_view labels) {
    g.declare(this, {.name = name, .help = help, .kind = metric_kind::counter, .labels = labels});
}

gauge::gauge(metric_group& g, std::string_view name, std::string_view help, merge_by merge, std::string_view labels) {
    g.declare(this, {.name = name, .help = help, .kind = metric_kind::gauge, .labels = labels, .merge = merge});
}

histogram::histogram(std::span<const std::uint64_t> bounds, double scale)
    : bounds_(bounds), scale_(scale), counts_(new std::atomic<std::uint64_t>[bounds.size() + 1]()) {}

histogram::histogram(metric_group& g, std::string_view name, std::string_view help,
                     std::span<const std::uint64_t> bounds, double scale, std::string_view labels)
    : histogram(bounds, scale) {
    g.declare(this, {.name = name,
                     .help = help,
                     .kind = metric_kind::histogram,
                     .labels = labels,
                     .bounds = bounds,
                     .scale = scale});
}

histogram::histogram(const histogram& o) : histogram(o.bounds_, o.scale_) { merge(o); }

histogram& histogram::operator=(const histogram& o) {
    if (this == &o) return *this;
    if (!std::ranges::equal(bounds_, o.bounds_)) {
        std::fprintf(stderr, "strix: histogram assigned from one with other bounds\n");
        std::abort();
    }
    for (std::size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(o.bucket(i), std::memory_order_relaxed);
    sum_.store(o.sum(), std::memory_order_relaxed);
    return *this;
}

std::uint64_t histogram::count() const noexcept {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i <= bounds_.size(); ++i) n += bucket(i);
    return n;
}

void histogram::merge(const histogram& o) noexcept {
    if (!std::ranges::equal(bounds_, o.bounds_)) {
        std::fprintf(stderr, "strix: histograms with different bounds merged\n");
        std::abort();
    }
    for (std::size_t i = 0; i <= bounds_.size(); ++i) add_to(counts_[i], o.bucket(i));
    add_to(sum_, o.sum());
}

void metric_group::declare(const void* cell, const metric_info& info) {
    detail::check_metric_info(info);
    entries_.push_back({info, reinterpret_cast<const char*>(cell) - reinterpret_cast<const char*>(this)});
}

void metric_group::merge(const metric_group& o) noexcept {
    if (o.entries_.size() != entries_.size()) {
        std::fprintf(stderr, "strix: metric groups of different shapes merged (%zu and %zu metrics)\n", entries_.size(),
                     o.entries_.size());
        std::abort();
    }
    for (std::size_t i = 0; i < entries_.size(); ++i) {
        const entry& mine = entries_[i];
        const entry& theirs = o.entries_[i];
        if (mine.info.name != theirs.info.name || mine.info.kind != theirs.info.kind || mine.offset != theirs.offset)
            invalid(mine.info, "merged with a group that declares other metrics");
        switch (mine.info.kind) {
            case metric_kind::counter: static_cast<counter*>(at(mine))->add(o.counter_at(theirs).value()); break;
            case metric_kind::gauge: {
                auto* g = static_cast<gauge*>(at(mine));
                const std::uint64_t v = o.gauge_at(theirs).value();
                if (mine.info.merge == merge_by::max)
                    g->raise_to(v);
                else
                    g->add(v);
                break;
            }
            case metric_kind::histogram: static_cast<histogram*>(at(mine))->merge(o.histogram_at(theirs)); break;
        }
    }
}

}  // namespace strix
