// strix::sharded<T>, the engine's one way to call across shards: invoke_on runs on the target
// shard in order and replies on the caller, a call to the calling shard is direct, gather visits
// every shard and answers in shard order, and instances are destroyed on their own shards.
#include "support/loopback.hpp"

#include <strix/core/engine.hpp>
#include <strix/core/sharded.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

namespace {

using namespace strix;

engine_config shards(unsigned n) {
    engine_config c;
    c.shards = n;
    c.pin_threads = false;
    return c;
}

struct tally {
    unsigned shard_id;
    std::vector<int> seen;
};

TEST(sharded, invoke_on_runs_on_the_target_shard_in_order_and_replies_on_the_caller) {
    engine eng(shards(3));
    sharded<tally> t(eng, [](shard& sh) { return std::make_unique<tally>(tally{sh.id(), {}}); });
    eng.start();
    std::atomic<bool> done{false};
    std::atomic<bool> ok{true};
    eng.post(0, [&] {
        for (int i = 0; i < 100; ++i)
            t.invoke_on(2, [i, &ok](tally& x) {
                if (shard::current()->id() != 2 || x.shard_id != 2) ok = false;
                x.seen.push_back(i);
            });
        t.invoke_on(
            2, [](tally& x) { return x.seen.size(); },
            [&](std::size_t n) {
                if (shard::current()->id() != 0 || n != 100) ok = false;
                done = true;
            });
    });
    ASSERT_TRUE(test::eventually([&] { return done.load(); }));
    EXPECT_TRUE(ok.load());
    std::atomic<bool> checked{false};
    eng.post(2, [&] {
        auto& v = t.local().seen;
        for (int i = 0; i < 100; ++i)
            if (v[static_cast<std::size_t>(i)] != i) ok = false;  // FIFO per pair of shards
        checked = true;
    });
    ASSERT_TRUE(test::eventually([&] { return checked.load(); }));
    EXPECT_TRUE(ok.load());
    eng.stop();
    eng.join();
}

TEST(sharded, invoke_on_the_calling_shard_is_a_direct_call) {
    engine eng(shards(2));
    sharded<tally> t(eng, [](shard& sh) { return std::make_unique<tally>(tally{sh.id(), {}}); });
    eng.start();
    std::atomic<int> result{-1};
    eng.post(1, [&] {
        bool ran = false;
        t.invoke_on(1, [&](tally&) { ran = true; });
        int replied = 0;
        t.invoke_on(
            1, [](tally& x) { return static_cast<int>(x.shard_id); }, [&](int v) { replied = v + 10; });
        result = ran && replied == 11 ? 1 : 0;  // both ran before invoke_on returned
    });
    ASSERT_TRUE(test::eventually([&] { return result.load() >= 0; }));
    EXPECT_EQ(result.load(), 1);
    eng.stop();
    eng.join();
}

TEST(sharded, gather_collects_every_shard_in_shard_order_on_the_caller) {
    engine eng(shards(4));
    sharded<tally> t(eng, [](shard& sh) { return std::make_unique<tally>(tally{sh.id(), {}}); });
    eng.start();
    std::atomic<bool> done{false};
    std::vector<unsigned> got;
    unsigned ran_on = 99;
    eng.post(2, [&] {
        t.gather([](tally& x) { return x.shard_id * 10; },
                 [&](std::vector<unsigned> all) {
                     got = std::move(all);
                     ran_on = shard::current()->id();
                     done = true;
                 });
    });
    ASSERT_TRUE(test::eventually([&] { return done.load(); }));
    EXPECT_EQ(got, (std::vector<unsigned>{0, 10, 20, 30}));
    EXPECT_EQ(ran_on, 2u);
    std::atomic<int> visits{0};
    std::atomic<bool> all_done{false};
    eng.post(3, [&] { t.gather([&](tally&) { ++visits; }, [&] { all_done = true; }); });
    ASSERT_TRUE(test::eventually([&] { return all_done.load(); }));
    EXPECT_EQ(visits.load(), 4);
    eng.stop();
    eng.join();
}

struct destroyed_on {
    std::atomic<int>* wrong;
    unsigned home;
    ~destroyed_on() {
        shard* cur = shard::current();
        if (!cur || cur->id() != home) ++*wrong;
    }
};

TEST(sharded, instances_are_destroyed_on_their_own_shards_while_the_engine_runs) {
    engine eng(shards(2));
    std::atomic<int> wrong{0};
    eng.start();
    {
        sharded<destroyed_on> s(eng, [&](shard& sh) { return std::make_unique<destroyed_on>(&wrong, sh.id()); });
    }
    EXPECT_EQ(wrong.load(), 0);
    eng.stop();
    eng.join();
}

}  // namespace

// An instance that calls its siblings without being handed its container (sharded_peers).
struct relay : sharded_peers<relay> {
    explicit relay(unsigned id) : shard_id(id) {}
    /// Tells the next shard's instance which shard passed it on. This instance's shard only.
    void pass_on() {
        const unsigned from = shard_id;
        container().invoke_on((shard_id + 1) % container().size(), [from](relay& next) { next.heard.push_back(from); });
    }
    unsigned shard_id;
    std::vector<unsigned> heard;
};

TEST(sharded, an_instance_reaches_its_siblings_through_its_container) {
    engine eng(shards(3));
    sharded<relay> t(eng, [](shard& sh) { return std::make_unique<relay>(sh.id()); });
    for (unsigned i = 0; i < 3; ++i) EXPECT_EQ(&t.on(i).container(), &t) << "instance " << i;
    eng.start();
    for (unsigned i = 0; i < 3; ++i) eng.post(i, [&t] { t.local().pass_on(); });
    std::vector<std::vector<unsigned>> heard;
    ASSERT_TRUE(test::eventually([&] {
        std::atomic<int> state{0};
        eng.post(0, [&] {
            t.gather([](relay& r) { return r.heard; },
                     [&](std::vector<std::vector<unsigned>> all) {
                         heard = std::move(all);
                         state = 1;
                     });
        });
        while (state.load() == 0) std::this_thread::yield();
        return heard == std::vector<std::vector<unsigned>>{{2}, {0}, {1}};
    }));
    eng.stop();
    eng.join();
}

TEST(sharded, container_aborts_for_an_instance_no_sharded_holds) {
    EXPECT_DEATH(
        {
            relay alone(0);
            alone.pass_on();
        },
        "before a sharded<T> holds the instance");
}
