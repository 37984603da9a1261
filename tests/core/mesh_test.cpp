// Cross-shard posting under load: every shard floods every other shard through the SPSC mesh
// (with channels small enough to overflow), outside threads post through the MPSC queues; each
// receiver checks it got every task exactly once and in per-producer order.
#include <strix/core/engine.hpp>

#include <support/loopback.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace strix;

namespace {

constexpr unsigned shards = 4;
constexpr std::uint64_t per_pair = 40000;
constexpr unsigned outside_threads = 2;

struct receiver_state {
    // last sequence seen from each producer (shards, then outside threads); only the receiving
    // shard touches its own row.
    std::vector<std::uint64_t> next_seq = std::vector<std::uint64_t>(shards + outside_threads, 0);
    std::uint64_t received = 0;
    std::uint64_t out_of_order = 0;
};

TEST(mesh, no_loss_no_duplication_no_reordering_per_producer) {
    engine_config cfg;
    cfg.shards = shards;
    cfg.pin_threads = false;
    cfg.mesh_capacity = 64;  // tiny: forces the overflow path constantly
    cfg.external_capacity = 256;
    engine eng(cfg);
    std::vector<receiver_state> st(shards);
    std::atomic<unsigned> producers_done{0};

    auto deliver = [&st](unsigned to, unsigned producer, std::uint64_t seq) {
        auto& r = st[to];
        if (r.next_seq[producer] != seq) ++r.out_of_order;
        r.next_seq[producer] = seq + 1;
        ++r.received;
    };

    eng.start();
    for (unsigned from = 0; from < shards; ++from) {
        eng.post(from, [&, from] {
            // Post in slices so the loop turns (and drains) between them.
            struct slice {
                static void run(engine& e, unsigned me, std::uint64_t start, decltype(deliver)& d,
                                std::atomic<unsigned>& done) {
                    std::uint64_t end = std::min(start + 5000, per_pair);
                    for (std::uint64_t seq = start; seq < end; ++seq)
                        for (unsigned to = 0; to < shards; ++to)
                            if (to != me) e.at(me).post_to(to, [&d, to, me, seq] { d(to, me, seq); });
                    if (end < per_pair)
                        e.at(me).post_local([&e, me, end, &d, &done] { run(e, me, end, d, done); });
                    else
                        done.fetch_add(1);
                }
            };
            slice::run(eng, from, 0, deliver, producers_done);
        });
    }
    std::vector<std::thread> outside;
    for (unsigned t = 0; t < outside_threads; ++t) {
        outside.emplace_back([&, t] {
            for (std::uint64_t seq = 0; seq < per_pair; ++seq)
                for (unsigned to = 0; to < shards; ++to)
                    eng.post(to, [&deliver, to, t, seq] { deliver(to, shards + t, seq); });
            producers_done.fetch_add(1);
        });
    }
    for (auto& th : outside) th.join();

    const std::uint64_t expected_per_shard = per_pair * (shards - 1 + outside_threads);
    std::atomic<unsigned> complete{0};
    ASSERT_TRUE(test::eventually(
        [&] {
            if (producers_done.load() < shards + outside_threads) return false;
            // Read each shard's counters on that shard.
            complete = 0;
            for (unsigned i = 0; i < shards; ++i)
                eng.post(i, [&, i] {
                    if (st[i].received == expected_per_shard) complete.fetch_add(1);
                });
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            return complete.load() == shards;
        },
        std::chrono::seconds(60)));
    eng.stop();
    eng.join();
    for (unsigned i = 0; i < shards; ++i) {
        EXPECT_EQ(st[i].received, expected_per_shard) << "shard " << i;
        EXPECT_EQ(st[i].out_of_order, 0u) << "shard " << i;
        for (unsigned p = 0; p < shards + outside_threads; ++p)
            if (p != i) {
                EXPECT_EQ(st[i].next_seq[p], per_pair) << "shard " << i << " from " << p;
            }
    }
    std::uint64_t overflows = 0;
    for (unsigned i = 0; i < shards; ++i) overflows += eng.at(i).stats().mesh_overflows.value();
    EXPECT_GT(overflows, 0u) << "the test meant to exercise the overflow path";
}

TEST(mesh, stop_runs_hooks_on_every_shard_and_joins) {
    engine_config cfg;
    cfg.shards = 3;
    cfg.pin_threads = false;
    engine eng(cfg);
    std::atomic<int> stopped{0}, exited{0};
    for (unsigned i = 0; i < 3; ++i)
        eng.post(i, [&, i] {
            eng.at(i).on_stop([&] { stopped.fetch_add(1); });
            eng.at(i).on_exit([&] { exited.fetch_add(1); });
        });
    eng.start();
    ASSERT_TRUE(test::eventually([&] {
        std::atomic<int> seen{0};
        for (unsigned i = 0; i < 3; ++i) eng.post(i, [&] { seen.fetch_add(1); });
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return seen.load() == 3;
    }));
    eng.stop();
    eng.join();
    EXPECT_EQ(stopped.load(), 3);
    EXPECT_EQ(exited.load(), 3);
}

TEST(mesh, timers_fire_on_the_owning_shard) {
    engine_config cfg;
    cfg.shards = 2;
    cfg.pin_threads = false;
    cfg.tick = std::chrono::milliseconds(5);
    engine eng(cfg);
    struct ctx {
        timer_node node;
        std::atomic<int> fired{0};
        shard* expected = nullptr;
        std::atomic<bool> right_thread{false};
    } c;
    c.node.set_callback([p = &c] {
        p->right_thread = shard::current() == p->expected;
        p->fired.fetch_add(1);
    });
    c.expected = &eng.at(1);
    eng.start();
    eng.post(1, [&] { eng.at(1).timers().schedule(c.node, eng.at(1).ticks_for(std::chrono::milliseconds(30))); });
    ASSERT_TRUE(test::eventually([&] { return c.fired.load() == 1; }));
    EXPECT_TRUE(c.right_thread.load());
    eng.stop();
    eng.join();
}

}  // namespace

namespace {

// Regression: a shard whose overflow for a peer exceeded the peer's channel used to spin forever
// once that peer had exited. Stopping in the middle of a flood must end the engine.
TEST(mesh, stop_in_the_middle_of_a_cross_shard_flood_terminates) {
    for (int round = 0; round < 3; ++round) {
        strix::engine_config cfg;
        cfg.shards = 3;
        cfg.pin_threads = false;
        cfg.mesh_capacity = 64;
        strix::engine eng(cfg);
        std::atomic<std::uint64_t> ran{0};
        eng.start();
        for (unsigned from = 0; from < 3; ++from) {
            eng.post(from, [&eng, &ran, from] {
                // Far more than a channel holds: most of it waits in the overflow lists.
                for (int i = 0; i < 30000; ++i)
                    for (unsigned to = 0; to < 3; ++to)
                        if (to != from)
                            eng.at(from).post_to(to, [&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
            });
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(round * 5));
        std::atomic<bool> joined{false};
        std::thread watchdog([&joined] {
            for (int i = 0; i < 300 && !joined.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
            if (!joined.load()) {
                std::fprintf(stderr, "engine did not stop within 30 s of stop() during a flood\n");
                std::abort();
            }
        });
        eng.stop();
        eng.join();
        joined = true;
        watchdog.join();
        EXPECT_GT(ran.load(), 0u);
    }
}

}  // namespace

namespace {

std::uint64_t turns_during(engine& eng, std::chrono::milliseconds window) {
    const auto before = eng.at(0).stats().turns.value();
    std::this_thread::sleep_for(window);
    return eng.at(0).stats().turns.value() - before;
}

}  // namespace

// poll_spin: after a turn that found work the shard keeps polling (many empty turns) for the
// configured time, then sleeps again (a turn per timer tick at most). Without it, it sleeps at once.
// A task posted from outside still runs while it spins, without the doorbell.
TEST(mesh, poll_spin_keeps_polling_after_work_then_sleeps) {
    engine_config cfg;
    cfg.shards = 1;
    cfg.pin_threads = false;
    cfg.poll_spin = std::chrono::milliseconds(400);
    engine spinning(cfg);
    spinning.start();
    std::atomic<int> ran{0};
    spinning.post(0, [&] { ran.fetch_add(1); });
    ASSERT_TRUE(test::eventually([&] { return ran.load() == 1; }));
    // Inside the window: an idle shard sleeps ~10 ms per turn (the tick), so 100 ms is ~10 turns;
    // a spinning one turns thousands of times even when it shares its core.
    EXPECT_GT(turns_during(spinning, std::chrono::milliseconds(100)), 200u);
    const auto wakeups_before = spinning.at(0).stats().wakeups.value();
    spinning.post(0, [&] { ran.fetch_add(1); });
    ASSERT_TRUE(test::eventually([&] { return ran.load() == 2; }));
    EXPECT_EQ(spinning.at(0).stats().wakeups.value(), wakeups_before)
        << "a spinning shard found the task without being rung";
    // After the window it sleeps again.
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    EXPECT_LT(turns_during(spinning, std::chrono::milliseconds(200)), 60u);
    spinning.stop();
    spinning.join();

    cfg.poll_spin = std::chrono::microseconds(0);
    engine sleeping(cfg);
    sleeping.start();
    sleeping.post(0, [&] { ran.fetch_add(1); });
    ASSERT_TRUE(test::eventually([&] { return ran.load() == 3; }));
    EXPECT_LT(turns_during(sleeping, std::chrono::milliseconds(200)), 60u);
    sleeping.stop();
    sleeping.join();
}

// A shard drains only the channels whose source marked it (a bit per source, 64 to a word). A
// token goes round a ring of 70 shards, sources on both words, each hop posted to a shard that is
// asleep: a mark or a wake-up lost stops the ring.
TEST(mesh, a_ring_across_mask_words_never_stalls) {
    constexpr unsigned n = 70;
    constexpr unsigned laps = 40;
    engine_config cfg;
    cfg.shards = n;
    cfg.pin_threads = false;
    engine eng(cfg);
    std::atomic<std::uint64_t> hops{0};
    std::atomic<bool> done{false};
    std::vector<std::uint64_t> seen(n, 0);  // each slot written only by its own shard
    struct ring {
        static void hop(engine& e, unsigned at, std::uint64_t left, std::atomic<std::uint64_t>& hops,
                        std::atomic<bool>& done, std::vector<std::uint64_t>& seen) {
            ++seen[at];
            hops.fetch_add(1, std::memory_order_relaxed);
            if (left == 0) {
                done.store(true);
                return;
            }
            const unsigned next = (at + 1) % n;
            e.at(at).post_to(next, [&e, next, left, &hops, &done, &seen] { hop(e, next, left - 1, hops, done, seen); });
        }
    };
    eng.start();
    eng.post(0, [&] { ring::hop(eng, 0, std::uint64_t{n} * laps, hops, done, seen); });
    ASSERT_TRUE(test::eventually([&] { return done.load(); }, std::chrono::seconds(60)))
        << "the ring stopped after " << hops.load() << " hops";
    eng.stop();
    eng.join();
    EXPECT_EQ(hops.load(), std::uint64_t{n} * laps + 1);
    EXPECT_EQ(seen[0], laps + 1);
    for (unsigned i = 1; i < n; ++i) EXPECT_EQ(seen[i], laps) << "shard " << i;
}

// More tasks in one channel than a turn drains (1,024): the rest run on the next turns with no
// further post from the source, so no new mark, and the receiver must not sleep on them. Shard 1
// is held in a task while shard 0 posts all of them, so they are all queued when it drains.
TEST(mesh, a_channel_left_over_a_batch_is_drained_without_a_new_post) {
    engine_config cfg;
    cfg.shards = 2;
    cfg.pin_threads = false;
    cfg.mesh_capacity = 4096;
    engine eng(cfg);
    constexpr std::uint64_t count = 3000;
    std::atomic<bool> held{false}, posted{false};
    std::atomic<std::uint64_t> ran{0};
    std::atomic<std::uint64_t> out_of_order{0};
    std::uint64_t next = 0;  // shard 1's
    eng.start();
    eng.post(1, [&] {
        held.store(true);
        while (!posted.load()) std::this_thread::yield();
    });
    ASSERT_TRUE(test::eventually([&] { return held.load(); }));
    eng.post(0, [&] {
        for (std::uint64_t i = 0; i < count; ++i)
            eng.at(0).post_to(1, [&, i] {
                if (next++ != i) out_of_order.fetch_add(1);
                ran.fetch_add(1);
            });
        posted.store(true);
    });
    ASSERT_TRUE(test::eventually([&] { return ran.load() == count; }, std::chrono::seconds(20)))
        << ran.load() << " of " << count << " ran";
    eng.stop();
    eng.join();
    EXPECT_EQ(out_of_order.load(), 0u);
    EXPECT_EQ(eng.at(0).stats().mesh_overflows.value(), 0u) << "all of them were meant to fit the channel";
}
