#include <strix/core/metrics_registry.hpp>

#include <strix/core/format.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace strix {
namespace {

[[noreturn]] void conflict(std::string_view name, const char* why) noexcept {
    strix::print(stderr, "strix: metric {} registered again {}\n", name, why);
    std::abort();
}

const char* type_name(metric_kind k) noexcept {
    switch (k) {
        case metric_kind::counter: return "counter";
        case metric_kind::gauge: return "gauge";
        case metric_kind::histogram: return "histogram";
    }
    return "untyped";
}

void append_int(std::string& out, std::uint64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

// %g style with as many digits as it takes to read back the same double: bucket bounds keep the
// spelling Prometheus users match on (le="0.0002", le="5e-05"), sums keep their precision.
void append_double(std::string& out, double v) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
    out.append(buf, r.ptr);
}

// A value in observed units, rendered in the family's unit.
void append_scaled(std::string& out, std::uint64_t v, double scale) {
    if (scale == 1)
        append_int(out, v);
    else
        append_double(out, static_cast<double>(v) / scale);
}

// # HELP text escapes backslash and newline.
void append_help(std::string& out, std::string_view help) {
    for (char c : help) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
}

// name{labels} or name, then a space.
void append_series(std::string& out, std::string_view name, std::string_view suffix, std::string_view labels) {
    out.append(name).append(suffix);
    if (!labels.empty()) out.append("{").append(labels).append("}");
    out += ' ';
}

}  // namespace

metrics_registry::registration& metrics_registry::registration::operator=(registration&& o) noexcept {
    if (this != &o) {
        reset();
        reg_ = std::exchange(o.reg_, nullptr);
        id_ = o.id_;
    }
    return *this;
}

void metrics_registry::registration::reset() noexcept {
    if (reg_) std::exchange(reg_, nullptr)->remove(id_);
}

metrics_registry::~metrics_registry() {
    if (live_ != 0) {
        std::fprintf(stderr, "strix: metrics_registry destroyed with %zu registrations alive\n", live_);
        std::abort();
    }
}

bool metrics_registry::family::live() const noexcept {
    return std::ranges::any_of(all, [](const series& s) { return !s.sources.empty(); });
}

metrics_registry::family& metrics_registry::family_for(const metric_info& info) {
    auto it = index_.find(info.name);
    if (it == index_.end()) {
        it = index_.emplace(std::string(info.name), families_.size()).first;
        families_.push_back({});
    }
    family& f = families_[it->second];
    if (f.live()) {
        if (f.kind != info.kind) conflict(info.name, "with another type");
        if (f.help != info.help) conflict(info.name, "with other help text");
        if (f.kind == metric_kind::gauge && f.merge != info.merge) conflict(info.name, "merged another way");
        if (f.kind == metric_kind::histogram && (!std::ranges::equal(f.bounds, info.bounds) || f.scale != info.scale))
            conflict(info.name, "with other buckets");
        return f;
    }
    // New, or nothing registered under it any more: (re)declared by this one.
    f.name = std::string(info.name);
    f.help = std::string(info.help);
    f.kind = info.kind;
    f.merge = info.merge;
    f.bounds.assign(info.bounds.begin(), info.bounds.end());
    f.scale = info.scale;
    return f;
}

metrics_registry::series& metrics_registry::series_for(family& f, std::string_view labels, std::uint64_t id) {
    for (series& s : f.all) {
        if (s.labels != labels) continue;
        if (!s.sources.empty() && s.sources.back().id == id) conflict(f.name, "by the same group (declared twice)");
        return s;
    }
    f.all.push_back({std::string(labels), {}});
    return f.all.back();
}

metrics_registry::registration metrics_registry::add(const metric_group& g) {
    std::lock_guard lk(mu_);
    const std::uint64_t id = next_id_++;
    for (const auto& e : g.entries()) {
        family& f = family_for(e.info);
        series& s = series_for(f, e.info.labels, id);
        auto put = [&](auto* cell) {
            for (const source& src : s.sources)
                if (auto* p = std::get_if<decltype(cell)>(&src.from); p && *p == cell)
                    conflict(e.info.name, "from the same cell (its group added twice)");
            s.sources.push_back({id, cell});
        };
        switch (e.info.kind) {
            case metric_kind::counter: put(&g.counter_at(e)); break;
            case metric_kind::gauge: put(&g.gauge_at(e)); break;
            case metric_kind::histogram: put(&g.histogram_at(e)); break;
        }
    }
    ++live_;
    return registration(this, id);
}

metrics_registry::registration metrics_registry::add(const metric_info& info, reader read) {
    detail::check_metric_info(info);
    if (info.kind == metric_kind::histogram) conflict(info.name, "as a histogram read by a callback (not supported)");
    std::lock_guard lk(mu_);
    const std::uint64_t id = next_id_++;
    family& f = family_for(info);
    series_for(f, info.labels, id).sources.push_back({id, std::move(read)});
    ++live_;
    return registration(this, id);
}

metrics_registry::registration metrics_registry::add_counter(std::string_view name, std::string_view help,
                                                             reader read) {
    return add({.name = name, .help = help, .kind = metric_kind::counter}, std::move(read));
}

metrics_registry::registration metrics_registry::add_gauge(std::string_view name, std::string_view help, reader read) {
    return add({.name = name, .help = help, .kind = metric_kind::gauge}, std::move(read));
}

void metrics_registry::remove(std::uint64_t id) noexcept {
    std::lock_guard lk(mu_);
    for (family& f : families_)
        for (series& s : f.all) std::erase_if(s.sources, [id](const source& src) { return src.id == id; });
    --live_;
}

void metrics_registry::rename(std::string_view name, std::string shown_name, std::string shown_help) {
    std::lock_guard lk(mu_);
    renames_.insert_or_assign(std::string(name), std::pair(std::move(shown_name), std::move(shown_help)));
}

std::uint64_t metrics_registry::scalar(const family& f, const series& s) {
    std::uint64_t total = 0;
    for (const source& src : s.sources) {
        std::uint64_t v = 0;
        if (auto* c = std::get_if<const counter*>(&src.from))
            v = (*c)->value();
        else if (auto* g = std::get_if<const gauge*>(&src.from))
            v = (*g)->value();
        else if (auto* r = std::get_if<reader>(&src.from))
            v = (*r)();
        if (f.kind == metric_kind::gauge && f.merge == merge_by::max)
            total = std::max(total, v);
        else
            total += v;
    }
    return total;
}

void metrics_registry::render_family(std::string& out, const family& f) const {
    std::string_view name = f.name, help = f.help;
    if (auto r = renames_.find(f.name); r != renames_.end()) {
        name = r->second.first;
        if (!r->second.second.empty()) help = r->second.second;
    }
    out.append("# HELP ").append(name).append(" ");
    append_help(out, help);
    out.append("\n# TYPE ").append(name).append(" ").append(type_name(f.kind)).append("\n");
    for (const series& s : f.all) {
        if (s.sources.empty()) continue;
        if (f.kind != metric_kind::histogram) {
            append_series(out, name, "", s.labels);
            append_int(out, scalar(f, s));
            out += '\n';
            continue;
        }
        // Buckets summed over the shards' cells, then made cumulative.
        std::vector<std::uint64_t> counts(f.bounds.size() + 1);
        std::uint64_t sum = 0;
        for (const source& src : s.sources) {
            const histogram& h = *std::get<const histogram*>(src.from);
            for (std::size_t b = 0; b < counts.size(); ++b) counts[b] += h.bucket(b);
            sum += h.sum();
        }
        const std::string comma = s.labels.empty() ? std::string() : s.labels + ",";
        std::uint64_t cumulative = 0;
        for (std::size_t b = 0; b < counts.size(); ++b) {
            cumulative += counts[b];
            out.append(name).append("_bucket{").append(comma).append("le=\"");
            if (b < f.bounds.size())
                append_scaled(out, f.bounds[b], f.scale);
            else
                out.append("+Inf");
            out.append("\"} ");
            append_int(out, cumulative);
            out += '\n';
        }
        append_series(out, name, "_sum", s.labels);
        append_scaled(out, sum, f.scale);
        out += '\n';
        append_series(out, name, "_count", s.labels);
        append_int(out, cumulative);
        out += '\n';
    }
}

std::string metrics_registry::render() const {
    std::lock_guard lk(mu_);
    std::string out;
    out.reserve(families_.size() * 160);
    for (const family& f : families_)
        if (f.live()) render_family(out, f);
    return out;
}

long long metrics_registry::value(std::string_view name, std::string_view labels) const {
    std::lock_guard lk(mu_);
    auto it = index_.find(name);
    if (it == index_.end()) return -1;
    const family& f = families_[it->second];
    for (const series& s : f.all) {
        if (s.labels != labels || s.sources.empty()) continue;
        if (f.kind != metric_kind::histogram) return static_cast<long long>(scalar(f, s));
        std::uint64_t n = 0;
        for (const source& src : s.sources) n += std::get<const histogram*>(src.from)->count();
        return static_cast<long long>(n);
    }
    return -1;
}

}  // namespace strix
