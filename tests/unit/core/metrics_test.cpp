// Metric cells, groups and the registry: declaration, summing over shards, histogram buckets,
// and the exact text a scrape renders.
#include <strix/core/metrics.hpp>
#include <strix/core/metrics_registry.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <string>
#include <thread>

using namespace strix;

namespace {

// One shard's metrics, as an engine or application declares them.
struct demo : metric_group {
    static constexpr std::string_view jobs_help = "jobs run, by queue";
    counter requests{*this, "demo_requests_total", "requests served"};
    counter jobs_fast{*this, "demo_jobs_total", jobs_help, R"(queue="fast")"};
    counter jobs_slow{*this, "demo_jobs_total", jobs_help, R"(queue="slow")"};
    gauge open{*this, "demo_open", "connections open"};
    gauge longest{*this, "demo_longest_us", "longest wait so far", merge_by::max};
    static constexpr std::array<std::uint64_t, 3> latency_bounds_ns{50'000, 200'000, 1'000'000};
    histogram latency{*this, "demo_latency_seconds", "request latency", latency_bounds_ns, 1e9};
    static constexpr std::array<std::uint64_t, 2> size_bounds{64, 1024};
    histogram sizes{*this, "demo_size_bytes", "request sizes\nwith a \\ in the help", size_bounds, 1, R"(dir="in")"};
};

// Shard a and shard b, with values whose sums (and max) are easy to tell apart.
void fill(demo& a, demo& b) {
    bump(a.requests, 3);
    bump(b.requests, 4);
    bump(a.jobs_fast);
    bump(b.jobs_fast, 2);
    bump(a.jobs_slow, 5);
    set_gauge(a.open, 2);
    set_gauge(b.open, 3);
    a.longest.raise_to(70);
    b.longest.raise_to(30);
    a.latency.observe(50'000);  // on a bound: that bucket
    a.latency.observe(60'000);
    b.latency.observe(2'000'000);  // above every bound
    b.latency.observe(1'000'000);
    a.sizes.observe(10);
    a.sizes.observe(64);
    a.sizes.observe(65);
    b.sizes.observe(5000);
}

const char* const expected_scrape = "# HELP demo_requests_total requests served\n"
                                    "# TYPE demo_requests_total counter\n"
                                    "demo_requests_total 7\n"
                                    "# HELP demo_jobs_total jobs run, by queue\n"
                                    "# TYPE demo_jobs_total counter\n"
                                    "demo_jobs_total{queue=\"fast\"} 3\n"
                                    "demo_jobs_total{queue=\"slow\"} 5\n"
                                    "# HELP demo_open connections open\n"
                                    "# TYPE demo_open gauge\n"
                                    "demo_open 5\n"
                                    "# HELP demo_longest_us longest wait so far\n"
                                    "# TYPE demo_longest_us gauge\n"
                                    "demo_longest_us 70\n"
                                    "# HELP demo_latency_seconds request latency\n"
                                    "# TYPE demo_latency_seconds histogram\n"
                                    "demo_latency_seconds_bucket{le=\"5e-05\"} 1\n"
                                    "demo_latency_seconds_bucket{le=\"0.0002\"} 2\n"
                                    "demo_latency_seconds_bucket{le=\"0.001\"} 3\n"
                                    "demo_latency_seconds_bucket{le=\"+Inf\"} 4\n"
                                    "demo_latency_seconds_sum 0.00311\n"
                                    "demo_latency_seconds_count 4\n"
                                    "# HELP demo_size_bytes request sizes\\nwith a \\\\ in the help\n"
                                    "# TYPE demo_size_bytes histogram\n"
                                    "demo_size_bytes_bucket{dir=\"in\",le=\"64\"} 2\n"
                                    "demo_size_bytes_bucket{dir=\"in\",le=\"1024\"} 3\n"
                                    "demo_size_bytes_bucket{dir=\"in\",le=\"+Inf\"} 4\n"
                                    "demo_size_bytes_sum{dir=\"in\"} 5139\n"
                                    "demo_size_bytes_count{dir=\"in\"} 4\n"
                                    "# HELP demo_queue_depth jobs waiting\n"
                                    "# TYPE demo_queue_depth gauge\n"
                                    "demo_queue_depth 9\n";

TEST(metrics, cells_count_and_read_back) {
    counter c;
    bump(c);
    bump(c, 41);
    EXPECT_EQ(c.value(), 42u);
    gauge g;
    set_gauge(g, 10);
    g.sub(3);
    g.add(5);
    EXPECT_EQ(g.value(), 12u);
    g.raise_to(11);
    EXPECT_EQ(g.value(), 12u) << "raise_to never lowers";
    g.raise_to(13);
    EXPECT_EQ(g.value(), 13u);
}

TEST(metrics, histogram_buckets_hold_values_up_to_their_bound) {
    static constexpr std::array<std::uint64_t, 3> bounds{10, 20, 30};
    histogram h(bounds);
    for (std::uint64_t v : {0, 10, 11, 20, 29, 30, 31, 1000}) h.observe(v);
    EXPECT_EQ(h.bucket(0), 2u);  // 0, 10
    EXPECT_EQ(h.bucket(1), 2u);  // 11, 20
    EXPECT_EQ(h.bucket(2), 2u);  // 29, 30
    EXPECT_EQ(h.bucket(3), 2u);  // 31, 1000: above every bound
    EXPECT_EQ(h.count(), 8u);
    EXPECT_EQ(h.sum(), 0u + 10 + 11 + 20 + 29 + 30 + 31 + 1000);
    histogram copy = h;
    copy.merge(h);
    EXPECT_EQ(copy.bucket(3), 4u);
    EXPECT_EQ(copy.sum(), 2 * h.sum());
    EXPECT_EQ(h.count(), 8u) << "merging into a copy leaves the original alone";
}

TEST(metrics, a_group_lists_its_metrics_in_declaration_order) {
    demo d;
    auto e = d.entries();
    ASSERT_EQ(e.size(), 7u);
    EXPECT_EQ(e[0].info.name, "demo_requests_total");
    EXPECT_EQ(e[1].info.labels, "queue=\"fast\"");
    EXPECT_EQ(e[4].info.merge, merge_by::max);
    EXPECT_EQ(e[5].info.kind, metric_kind::histogram);
    EXPECT_EQ(e[5].info.bounds.size(), 3u);
    EXPECT_EQ(&d.counter_at(e[2]), &d.jobs_slow);
    EXPECT_EQ(&d.histogram_at(e[6]), &d.sizes);
}

TEST(metrics, a_copied_group_is_a_snapshot_that_merges_shards) {
    demo a, b;
    fill(a, b);
    demo total = a;  // a snapshot of shard a...
    bump(a.requests, 100);
    EXPECT_EQ(total.requests, 3u) << "the copy does not follow the original";
    EXPECT_EQ(&total.counter_at(total.entries()[0]), &total.requests) << "a copy describes its own cells";
    total.merge(b);  // ...plus shard b
    EXPECT_EQ(total.requests, 7u);
    EXPECT_EQ(total.jobs_fast, 3u);
    EXPECT_EQ(total.open, 5u);
    EXPECT_EQ(total.longest, 70u) << "a max gauge keeps the larger value";
    EXPECT_EQ(total.latency.count(), 4u);
    EXPECT_EQ(total.latency.bucket(3), 1u);
    EXPECT_EQ(total.sizes.sum(), 5139u);
}

TEST(metrics, a_scrape_sums_the_shards_and_renders_exposition_text) {
    metrics_registry reg;
    demo a, b;
    fill(a, b);
    auto ra = reg.add(a);
    auto rb = reg.add(b);
    auto rq = reg.add_gauge("demo_queue_depth", "jobs waiting", [] { return std::uint64_t{9}; });
    EXPECT_EQ(reg.render(), expected_scrape);
    EXPECT_EQ(reg.value("demo_requests_total"), 7);
    EXPECT_EQ(reg.value("demo_jobs_total", "queue=\"slow\""), 5);
    EXPECT_EQ(reg.value("demo_latency_seconds"), 4);
    EXPECT_EQ(reg.value("demo_nothing_total"), -1);
    bump(b.requests);  // a scrape reads the cells as they are now
    EXPECT_EQ(reg.value("demo_requests_total"), 8);
}

TEST(metrics, dropping_a_registration_removes_its_cells) {
    metrics_registry reg;
    demo a, b;
    fill(a, b);
    auto ra = reg.add(a);
    {
        auto rb = reg.add(b);
        EXPECT_EQ(reg.value("demo_requests_total"), 7);
    }
    EXPECT_EQ(reg.value("demo_requests_total"), 3);
    ra.reset();
    EXPECT_EQ(reg.render(), "") << "a family with nothing registered is not rendered";
    auto again = reg.add(b);
    EXPECT_EQ(reg.value("demo_requests_total"), 4);
}

TEST(metrics, an_application_may_show_a_metric_under_its_own_name) {
    metrics_registry reg;
    demo a;
    bump(a.requests, 2);
    reg.rename("demo_requests_total", "app_calls_total", "calls answered");
    reg.rename("demo_open", "app_open");  // keeps the declared help
    auto r = reg.add(a);
    const std::string text = reg.render();
    EXPECT_EQ(text.rfind("# HELP app_calls_total calls answered\n# TYPE app_calls_total counter\napp_calls_total 2\n",
                         0),
              0u)
        << text;
    EXPECT_NE(text.find("# HELP app_open connections open\n# TYPE app_open gauge\napp_open 0\n"), std::string::npos);
    EXPECT_EQ(text.find("demo_requests_total"), std::string::npos);
}

TEST(metrics, a_scrape_reads_while_the_owner_writes) {
    metrics_registry reg;
    demo d;
    auto r = reg.add(d);
    std::atomic<bool> stop{false};
    std::uint64_t written = 0;
    std::thread writer([&] {
        while (!stop.load(std::memory_order_relaxed)) {
            bump(d.requests);
            ++written;
        }
    });
    while (reg.value("demo_requests_total") == 0) std::this_thread::yield();  // the writer runs
    long long last = 0;
    for (int scrape = 0; scrape < 2000; ++scrape) {
        const long long v = reg.value("demo_requests_total");
        ASSERT_GE(v, last) << "a counter never goes back";
        last = v;
    }
    stop.store(true);
    writer.join();
    EXPECT_GT(written, 0u);
    EXPECT_EQ(reg.value("demo_requests_total"), static_cast<long long>(written)) << "no increment lost (one writer)";
}

TEST(metrics_death, declarations_that_disagree_abort) {
    struct other : metric_group {
        gauge requests{*this, "demo_requests_total", "requests served"};
    };
    EXPECT_DEATH(
        {
            metrics_registry reg;
            demo a;
            other o;
            auto ra = reg.add(a);
            auto ro = reg.add(o);
        },
        "demo_requests_total registered again with another type");
    struct twice : metric_group {
        counter x{*this, "twice_total", "x"};
        counter y{*this, "twice_total", "x"};
    };
    EXPECT_DEATH(
        {
            metrics_registry reg;
            twice t;
            auto r = reg.add(t);
        },
        "twice_total registered again by the same group");
    EXPECT_DEATH(
        {
            metrics_registry reg;
            demo a;
            auto r1 = reg.add(a);
            auto r2 = reg.add(a);
        },
        "its group added twice");
}

TEST(metrics_death, invalid_names_and_labels_abort_at_declaration) {
    struct bad_name : metric_group {
        counter x{*this, "9lives_total", "x"};
    };
    EXPECT_DEATH({ bad_name b; }, "9lives_total: invalid name");
    struct bad_labels : metric_group {
        counter x{*this, "ok_total", "x", "queue=fast"};
    };
    EXPECT_DEATH({ bad_labels b; }, "ok_total: invalid labels");
    static constexpr std::array<std::uint64_t, 2> down{20, 10};
    struct bad_bounds : metric_group {
        histogram h{*this, "h_seconds", "x", down};
    };
    EXPECT_DEATH({ bad_bounds b; }, "bounds must ascend");
}

TEST(metrics_death, a_registry_outlives_its_registrations) {
    EXPECT_DEATH(
        {
            demo a;
            metrics_registry::registration r;
            {
                metrics_registry reg;
                r = reg.add(a);
            }
        },
        "destroyed with 1 registrations alive");
}

}  // namespace
