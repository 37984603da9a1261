// node_registry with a real redis-server: three nodes see each other; one that stops
// heartbeating without a word (as after kill -9) is reported down by the others within
// ttl + scan interval; its restart is a new incarnation (up again); two nodes given one id are
// reported.
#include "cluster_fixture.hpp"

#include "apps/chat/cluster/node_registry.hpp"

#include <algorithm>
#include <set>

namespace {

using namespace strix;
using namespace strix::chat;
using namespace strix::test;

struct seen {
    std::mutex mu;
    std::vector<std::pair<char, std::uint32_t>> events;  // ('u' | 'd', node)
    std::set<std::uint32_t> alive;
    node_registry::events callbacks() {
        return {[this](std::uint32_t n) {
                    std::lock_guard lk(mu);
                    events.emplace_back('u', n);
                    alive.insert(n);
                },
                [this](std::uint32_t n) {
                    std::lock_guard lk(mu);
                    events.emplace_back('d', n);
                    alive.erase(n);
                }};
    }
    std::set<std::uint32_t> live() {
        std::lock_guard lk(mu);
        return alive;
    }
};

struct nodes {
    nodes(std::uint16_t port, unsigned n) : env(n), seen_by(n), reg(n) {
        for (unsigned i = 0; i < n; ++i) start(port, i, i + 1);
    }
    void start(std::uint16_t port, unsigned shard, std::uint32_t id) {
        env.on(shard, [&, shard, id] {
            node_registry_options o;
            o.node_id = id;
            o.ttl = 300ms;
            o.scan_interval = 50ms;
            reg[shard] =
                std::make_unique<node_registry>(env.eng.at(shard), options_for(port), o, seen_by[shard].callbacks());
        });
    }
    void stop(unsigned shard) {
        env.on(shard, [&, shard] { reg[shard].reset(); });
    }
    ~nodes() {
        for (unsigned i = 0; i < reg.size(); ++i) stop(i);
    }
    shard_env env;
    std::vector<seen> seen_by;
    std::vector<std::unique_ptr<node_registry>> reg;
};

TEST(node_registry, a_silent_node_is_reported_down_within_ttl_plus_a_scan) {
    redis_server redis;
    nodes n(redis.port(), 3);
    const std::set<std::uint32_t> all{1, 2, 3};
    for (unsigned i = 0; i < 3; ++i) ASSERT_TRUE(eventually([&] { return n.seen_by[i].live() == all; })) << i;

    // Node 2 stops heartbeating without removing its key, like a process killed with -9.
    n.stop(1);
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(eventually([&] { return n.seen_by[0].live() == std::set<std::uint32_t>{1, 3}; }, 3s));
    const auto took = std::chrono::steady_clock::now() - t0;
    // ttl + one scan, with room for a loaded CI machine.
    EXPECT_LT(took, 300ms + 50ms + 650ms) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
    EXPECT_GT(took, 150ms);  // the last heartbeat (<= ttl/3 before) keeps it alive >= 200 ms
    ASSERT_TRUE(eventually([&] { return n.seen_by[2].live() == std::set<std::uint32_t>{1, 3}; }, 1s));

    // It comes back: a new incarnation, up again for everyone.
    n.start(redis.port(), 1, 2);
    ASSERT_TRUE(eventually([&] { return n.seen_by[0].live() == all && n.seen_by[2].live() == all; }));
    std::lock_guard lk(n.seen_by[0].mu);
    const auto& ev = n.seen_by[0].events;
    EXPECT_EQ(std::count(ev.begin(), ev.end(), std::make_pair('d', 2u)), 1);
    EXPECT_EQ(std::count(ev.begin(), ev.end(), std::make_pair('u', 2u)), 2);
    EXPECT_EQ(std::count(ev.begin(), ev.end(), std::make_pair('d', 1u)), 0);
}

TEST(node_registry, two_nodes_with_one_id_are_reported) {
    redis_server redis;
    nodes n(redis.port(), 2);
    n.stop(1);
    n.start(redis.port(), 1, 1);  // the same id as shard 0's node
    ASSERT_TRUE(eventually([&] {
        return n.env.on(0, [&] { return n.reg[0]->id_conflicts(); }) + n.env.on(1, [&] {
            return n.reg[1]->id_conflicts();
        }) > 0;
    }));
}

}  // namespace
