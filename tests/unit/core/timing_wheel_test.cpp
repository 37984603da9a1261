#include <strix/core/timing_wheel.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <utility>
#include <vector>

namespace {

using strix::timer_node;
using strix::timing_wheel;

// The fake clock is just the tick number handed to advance_to(); a probe records now() each time
// its timer fires.
struct probe {
    timer_node node;
    timing_wheel* wheel = nullptr;
    int id = 0;
    std::vector<std::pair<int, std::uint64_t>>* log = nullptr;  // (id, tick) per fire, in order

    probe(timing_wheel& w, std::vector<std::pair<int, std::uint64_t>>& l, int i = 0) : wheel(&w), id(i), log(&l) {
        node.set_callback([this] { log->emplace_back(id, wheel->now()); });
    }
};

using fire_log = std::vector<std::pair<int, std::uint64_t>>;

constexpr std::uint64_t delays[] = {0, 1, 255, 256, 257, 65535, 65536, (1u << 24) + 3, (std::uint64_t{1} << 32) + 5};

// Start ticks: zero, just before a level-3 boundary, and an arbitrary unaligned value.
constexpr std::uint64_t starts[] = {0, (std::uint64_t{1} << 32) - 7, 123'456'789'012ull};

TEST(timing_wheel, fires_exactly_at_the_deadline_with_big_jumps) {
    for (const std::uint64_t start : starts) {
        for (const std::uint64_t delay : delays) {
            timing_wheel w(start);
            fire_log log;
            probe p(w, log);
            w.schedule(p.node, delay);
            const std::uint64_t deadline = start + delay;
            EXPECT_EQ(p.node.deadline(), deadline);
            EXPECT_EQ(w.size(), 1u);
            if (delay > 0) {
                EXPECT_EQ(w.advance_to(deadline - 1), 0u) << "start " << start << " delay " << delay;
                EXPECT_EQ(w.now(), deadline - 1);
                EXPECT_TRUE(log.empty());
                EXPECT_TRUE(p.node.armed());
            }
            EXPECT_EQ(w.advance_to(deadline), 1u) << "start " << start << " delay " << delay;
            ASSERT_EQ(log.size(), 1u);
            EXPECT_EQ(log[0].second, deadline);
            EXPECT_FALSE(p.node.armed());
            EXPECT_TRUE(w.empty());
            EXPECT_EQ(w.advance_to(deadline + 1'000'000), 0u);
            EXPECT_EQ(log.size(), 1u);
        }
    }
}

TEST(timing_wheel, fires_exactly_at_the_deadline_when_overshooting_in_one_jump) {
    for (const std::uint64_t start : starts) {
        timing_wheel w(start);
        fire_log log;
        std::vector<std::unique_ptr<probe>> probes;
        for (std::size_t i = 0; i < std::size(delays); ++i) {
            probes.push_back(std::make_unique<probe>(w, log, static_cast<int>(i)));
            w.schedule(probes.back()->node, delays[i]);
        }
        EXPECT_EQ(w.size(), std::size(delays));
        // One call covers every deadline; each must still fire at its own tick, in deadline order.
        EXPECT_EQ(w.advance_to(start + (std::uint64_t{1} << 40)), std::size(delays));
        ASSERT_EQ(log.size(), std::size(delays));
        for (std::size_t i = 0; i < log.size(); ++i) {
            EXPECT_EQ(log[i].first, static_cast<int>(i));
            EXPECT_EQ(log[i].second, start + delays[i]) << "delay " << delays[i];
        }
        EXPECT_TRUE(w.empty());
    }
}

TEST(timing_wheel, fires_exactly_at_the_deadline_with_single_steps) {
    // Every delay below 2^25 is stepped one tick at a time from the start; the overflow delay is
    // stepped one tick at a time around each place it moves (the 2^32 boundary) and its deadline.
    for (const std::uint64_t start : {std::uint64_t{0}, std::uint64_t{1000}}) {
        timing_wheel w(start);
        fire_log log;
        std::vector<std::unique_ptr<probe>> probes;
        for (std::size_t i = 0; i + 1 < std::size(delays); ++i) {
            probes.push_back(std::make_unique<probe>(w, log, static_cast<int>(i)));
            w.schedule(probes.back()->node, delays[i]);
        }
        const std::uint64_t last = start + delays[std::size(delays) - 2] + 2;
        std::size_t fired = 0;
        for (std::uint64_t t = start; t <= last; ++t) {
            const std::size_t n = w.advance_to(t);
            fired += n;
            ASSERT_EQ(log.size(), fired);
            for (std::size_t k = log.size() - n; k < log.size(); ++k) {
                ASSERT_EQ(log[k].second, t);
                ASSERT_EQ(start + delays[static_cast<std::size_t>(log[k].first)], t)
                    << "delay " << delays[static_cast<std::size_t>(log[k].first)] << " fired at " << t;
            }
        }
        EXPECT_EQ(fired, std::size(delays) - 1);
        EXPECT_TRUE(w.empty());
    }

    timing_wheel w(0);
    fire_log log;
    probe p(w, log);
    const std::uint64_t delay = (std::uint64_t{1} << 32) + 5;
    w.schedule(p.node, delay);
    for (std::uint64_t t = 0; t < 300; ++t) w.advance_to(t);
    w.advance_to((std::uint64_t{1} << 32) - 300);
    for (std::uint64_t t = (std::uint64_t{1} << 32) - 299; t <= delay + 300; ++t) {
        w.advance_to(t);
        ASSERT_EQ(log.size(), t >= delay ? 1u : 0u) << "tick " << t;
    }
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(log[0].second, delay);
}

TEST(timing_wheel, random_jump_sizes_fire_at_the_deadline) {
    std::mt19937_64 rng(3);
    for (const std::uint64_t delay : delays) {
        timing_wheel w(rng() % 100000);
        fire_log log;
        probe p(w, log);
        const std::uint64_t deadline = w.now() + delay;
        w.schedule(p.node, delay);
        while (log.empty()) {
            const unsigned bits = static_cast<unsigned>(rng() % 34);
            w.advance_to(w.now() + 1 + (rng() & ((std::uint64_t{1} << bits) - 1)));
        }
        EXPECT_EQ(log[0].second, deadline) << "delay " << delay;
    }
}

TEST(timing_wheel, cancelled_timers_never_fire) {
    timing_wheel w(42);
    fire_log log;
    const std::uint64_t cancel_delays[] = {0, 10, 1000, 100000, 1u << 30, std::uint64_t{1} << 33};
    std::vector<std::unique_ptr<probe>> probes;
    for (std::size_t i = 0; i < std::size(cancel_delays); ++i) {
        probes.push_back(std::make_unique<probe>(w, log, static_cast<int>(i)));
        w.schedule(probes.back()->node, cancel_delays[i]);
    }
    probe keeper(w, log, 99);
    w.schedule(keeper.node, 500);
    EXPECT_EQ(w.size(), std::size(cancel_delays) + 1);
    for (std::size_t i = 0; i < probes.size(); ++i) {
        w.cancel(probes[i]->node);
        EXPECT_FALSE(probes[i]->node.armed());
        EXPECT_EQ(w.size(), std::size(cancel_delays) - i);
        w.cancel(probes[i]->node);  // second cancel is a no-op
        EXPECT_EQ(w.size(), std::size(cancel_delays) - i);
    }
    EXPECT_EQ(w.advance_to(42 + (std::uint64_t{1} << 34)), 1u);
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(log[0], std::make_pair(99, std::uint64_t{542}));
    EXPECT_TRUE(w.empty());
}

TEST(timing_wheel, rescheduling_an_armed_timer_moves_it) {
    timing_wheel w;
    fire_log log;
    probe p(w, log);
    w.schedule(p.node, 100);
    w.schedule(p.node, 70000);  // later, on another level
    EXPECT_EQ(w.size(), 1u);
    w.advance_to(1000);
    EXPECT_TRUE(log.empty());
    w.schedule(p.node, 5);  // earlier again, relative to now() = 1000
    EXPECT_EQ(w.size(), 1u);
    w.advance_to(200000);
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(log[0].second, 1005u);
}

// Every timer due at tick 50; whichever fires first cancels all the others.
TEST(timing_wheel, callback_cancels_others_due_in_the_same_tick) {
    timing_wheel w;
    struct canceller {
        timer_node node;
        std::vector<canceller>* all = nullptr;
        timing_wheel* wheel = nullptr;
        int* fired = nullptr;
    };
    std::vector<canceller> all(100);
    int fired = 0;
    for (auto& c : all) {
        c.all = &all;
        c.wheel = &w;
        c.fired = &fired;
        c.node.set_callback([self = &c] {
            ++*self->fired;
            EXPECT_EQ(self->wheel->now(), 50u);
            for (auto& other : *self->all) self->wheel->cancel(other.node);
            EXPECT_EQ(self->wheel->size(), 0u);
        });
        w.schedule(c.node, 50);
    }
    EXPECT_EQ(w.size(), 100u);
    EXPECT_EQ(w.advance_to(1000), 1u);
    EXPECT_EQ(fired, 1);
    EXPECT_TRUE(w.empty());
    for (const auto& c : all) EXPECT_FALSE(c.node.armed());
}

TEST(timing_wheel, callback_reschedules_another_timer_due_in_the_same_tick) {
    // Two timers due at tick 300 (each on level 1 first); whichever fires first pushes the other
    // back by 10 ticks.
    timing_wheel w;
    struct pusher {
        timer_node node;
        pusher* other = nullptr;
        timing_wheel* wheel = nullptr;
        std::vector<std::uint64_t>* ticks = nullptr;
    };
    std::vector<std::uint64_t> ticks;
    pusher a, b;
    a.other = &b;
    b.other = &a;
    for (pusher* p : {&a, &b}) {
        p->wheel = &w;
        p->ticks = &ticks;
        p->node.set_callback([self = p] {
            self->ticks->push_back(self->wheel->now());
            if (self->other->node.armed()) self->wheel->schedule(self->other->node, 10);
        });
        w.schedule(p->node, 300);
    }
    EXPECT_EQ(w.advance_to(10'000), 2u);
    EXPECT_EQ(ticks, (std::vector<std::uint64_t>{300, 310}));
    EXPECT_TRUE(w.empty());
}

struct periodic {
    timer_node node;
    timing_wheel* wheel = nullptr;
    std::uint64_t period = 0;
    std::vector<std::uint64_t> ticks;
    explicit periodic(timing_wheel& w, std::uint64_t p) : wheel(&w), period(p) {
        node.set_callback([this] {
            ticks.push_back(wheel->now());
            EXPECT_FALSE(node.armed()) << "disarmed before its callback";
            wheel->schedule(node, period);
        });
    }
};

TEST(timing_wheel, callback_reschedules_itself_periodically) {
    for (const std::uint64_t period : {std::uint64_t{7}, std::uint64_t{300}, std::uint64_t{70001}}) {
        const std::uint64_t end = period * 40 + 3;
        std::vector<std::uint64_t> expect;
        for (std::uint64_t t = period; t <= end; t += period) expect.push_back(t);

        timing_wheel jumping;
        periodic a(jumping, period);
        jumping.schedule(a.node, period);
        EXPECT_EQ(jumping.advance_to(end), expect.size()) << "one call fires every period";
        EXPECT_EQ(a.ticks, expect);
        EXPECT_EQ(jumping.size(), 1u);
        jumping.cancel(a.node);

        timing_wheel stepping;
        periodic b(stepping, period);
        stepping.schedule(b.node, period);
        for (std::uint64_t t = 1; t <= end; ++t) stepping.advance_to(t);
        EXPECT_EQ(b.ticks, expect);
        stepping.cancel(b.node);
    }
}

TEST(timing_wheel, delay_zero_fires_on_the_next_advance_and_cannot_stall_it) {
    timing_wheel w(10);
    periodic p(w, 0);  // re-arms itself with delay 0 every time it fires
    w.schedule(p.node, 0);
    EXPECT_EQ(w.advance_to(10), 1u) << "delay 0 fires even when no tick passes";
    EXPECT_EQ(p.ticks, (std::vector<std::uint64_t>{10}));
    EXPECT_TRUE(p.node.armed());
    EXPECT_EQ(w.advance_to(1000), 1u) << "re-armed from its callback: waits for the next call";
    EXPECT_EQ(w.advance_to(1001), 1u);
    EXPECT_EQ(p.ticks, (std::vector<std::uint64_t>{10, 10, 1000}));
    w.cancel(p.node);
    EXPECT_EQ(w.advance_to(2000), 0u);
}

TEST(timing_wheel, callback_may_arm_timers_due_later_in_the_same_advance) {
    timing_wheel w;
    fire_log log;
    probe later(w, log, 2);
    struct starter {
        timer_node node;
        timing_wheel* wheel;
        probe* next;
    } s{{}, &w, &later};
    s.node.set_callback([self = &s] {
        self->wheel->schedule(self->next->node, 70000);  // lands on level 2 mid-advance
    });
    w.schedule(s.node, 10);
    EXPECT_EQ(w.advance_to(1'000'000), 2u);
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(log[0].second, 70010u);
}

TEST(timing_wheel, advancing_backwards_or_to_now_moves_nothing) {
    timing_wheel w(500);
    fire_log log;
    probe p(w, log);
    w.schedule(p.node, 1);
    EXPECT_EQ(w.advance_to(100), 0u);
    EXPECT_EQ(w.advance_to(500), 0u);
    EXPECT_EQ(w.now(), 500u);
    EXPECT_EQ(w.advance_to(501), 1u);
}

TEST(timing_wheel, huge_delays_saturate_and_still_fire_at_the_end_of_time) {
    constexpr std::uint64_t end = ~std::uint64_t{0};
    timing_wheel w(end - (std::uint64_t{1} << 33));
    fire_log log;
    probe p(w, log, 1);
    probe q(w, log, 2);
    w.schedule(p.node, end);  // saturates to the last tick
    EXPECT_EQ(p.node.deadline(), end);
    w.schedule(q.node, (std::uint64_t{1} << 33) - 1);
    EXPECT_EQ(w.advance_to(end - 2), 0u);
    EXPECT_EQ(w.advance_to(end), 2u);
    EXPECT_EQ(log, (fire_log{{2, end - 1}, {1, end}}));
}

TEST(timing_wheel, destroying_the_wheel_disarms_its_timers) {
    fire_log log;
    auto w = std::make_unique<timing_wheel>();
    probe a(*w, log);
    probe b(*w, log);
    w->schedule(a.node, 3);
    w->schedule(b.node, std::uint64_t{1} << 40);
    w.reset();
    EXPECT_FALSE(a.node.armed());
    EXPECT_FALSE(b.node.armed());
}

TEST(timing_wheel_death, destroying_an_armed_timer_aborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            timing_wheel w;
            auto n = std::make_unique<timer_node>();
            n->set_callback([] {});
            w.schedule(*n, 5);
            n.reset();
        },
        "destroyed while armed");
}

// ---- model check ---------------------------------------------------------------------------

// 100k timers, random delays spanning every level and the overflow list, random cancels and
// re-arms, random advances from one tick to 2^34 ticks. A std::multimap of deadlines is the
// model: after every advance the wheel must have fired exactly the model's due timers, each at
// exactly its deadline, in nondecreasing tick order, and size() must match throughout.
TEST(timing_wheel, random_timers_match_a_multimap_model) {
    constexpr int total = 100'000;
    std::mt19937_64 rng(2024);
    timing_wheel w(rng() % (std::uint64_t{1} << 40));
    fire_log log;
    std::vector<std::unique_ptr<probe>> timers;
    timers.reserve(total);
    std::multimap<std::uint64_t, int> model;
    std::vector<std::multimap<std::uint64_t, int>::iterator> where(total, model.end());
    std::vector<int> armed_ids;  // may hold stale ids; checked against `where`

    auto random_delay = [&]() -> std::uint64_t {
        const auto r = rng() % 100;
        if (r < 5) return 0;
        if (r < 30) return rng() % 300;
        if (r < 60) return rng() % 70'000;
        if (r < 85) return rng() % (std::uint64_t{1} << 25);
        if (r < 97) return rng() % (std::uint64_t{1} << 33);
        return rng() % (std::uint64_t{1} << 36);
    };
    auto arm = [&](int id) {
        const std::uint64_t d = random_delay();
        w.schedule(timers[static_cast<std::size_t>(id)]->node, d);
        if (where[static_cast<std::size_t>(id)] != model.end()) model.erase(where[static_cast<std::size_t>(id)]);
        where[static_cast<std::size_t>(id)] = model.emplace(w.now() + d, id);
        armed_ids.push_back(id);
    };

    std::size_t fired_total = 0;
    std::size_t cancelled_total = 0;
    auto advance = [&](std::uint64_t to) {
        log.clear();
        // delay-0 timers fire first at now(); everything else by deadline.
        std::vector<std::pair<std::uint64_t, int>> due;
        for (auto it = model.begin(); it != model.end() && it->first <= to;) {
            due.emplace_back(it->first, it->second);
            where[static_cast<std::size_t>(it->second)] = model.end();
            it = model.erase(it);
        }
        const std::size_t n = w.advance_to(to);
        ASSERT_EQ(n, due.size());
        ASSERT_EQ(log.size(), due.size());
        std::vector<std::pair<std::uint64_t, int>> got;
        std::uint64_t prev = 0;
        for (const auto& [id, tick] : log) {
            ASSERT_GE(tick, prev) << "fired out of order";
            prev = tick;
            got.emplace_back(tick, id);
        }
        std::sort(got.begin(), got.end());
        std::sort(due.begin(), due.end());
        ASSERT_EQ(got, due);
        fired_total += n;
        ASSERT_EQ(w.size(), model.size());
    };

    while (timers.size() < static_cast<std::size_t>(total)) {
        const int batch = static_cast<int>(1 + rng() % 200);
        for (int i = 0; i < batch && timers.size() < static_cast<std::size_t>(total); ++i) {
            const int id = static_cast<int>(timers.size());
            timers.push_back(std::make_unique<probe>(w, log, id));
            arm(id);
        }
        const int ops = static_cast<int>(rng() % 60);
        for (int i = 0; i < ops && !armed_ids.empty(); ++i) {
            const std::size_t k = rng() % armed_ids.size();
            const int id = armed_ids[k];
            armed_ids[k] = armed_ids.back();
            armed_ids.pop_back();
            auto& it = where[static_cast<std::size_t>(id)];
            if (it == model.end()) {  // already fired: does not count as an operation
                --i;
                continue;
            }
            ASSERT_TRUE(timers[static_cast<std::size_t>(id)]->node.armed());
            if (rng() % 3 == 0) {
                arm(id);  // re-arm with a fresh delay
            } else {
                w.cancel(timers[static_cast<std::size_t>(id)]->node);
                model.erase(it);
                it = model.end();
                ++cancelled_total;
            }
        }
        ASSERT_EQ(w.size(), model.size());

        const auto r = rng() % 100;
        std::uint64_t step;
        if (r < 40)
            step = 1;
        else if (r < 70)
            step = 1 + rng() % 1000;
        else if (r < 92)
            step = 1 + rng() % (std::uint64_t{1} << 20);
        else
            step = 1 + rng() % (std::uint64_t{1} << 34);
        advance(w.now() + step);
        if (HasFatalFailure()) return;
    }
    advance(w.now() + (std::uint64_t{1} << 37));  // drain everything
    if (HasFatalFailure()) return;
    EXPECT_TRUE(model.empty());
    EXPECT_TRUE(w.empty());
    EXPECT_EQ(fired_total + cancelled_total, static_cast<std::size_t>(total));
    EXPECT_GT(fired_total, 50'000u);
    EXPECT_GT(cancelled_total, 5'000u);
}

}  // namespace
