// The pieces under the room sequencer seam that need no server: room ids with and without the
// cluster node's bits (room_id.hpp), and commit_order, which holds a room's events until the
// database writes they announce are committed, in decision order.

#include "apps/chat/server/rooms/commit_order.hpp"
#include "apps/chat/server/rooms/room_id.hpp"
#include "apps/chat/storage/chat_log_writer.hpp"
#include "tests/chat_storage/fake_store.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace strix;
using namespace strix::chat;

TEST(room_id, OneNodeIdsPackCounterAndShardAsBefore) {
    const room_id id = room_id::make(5, 3);
    EXPECT_EQ(id.value(), (5u << 8) | 3u);
    EXPECT_EQ(id.counter(), 5u);
    EXPECT_EQ(id.creator(), 3u);
    // Node 0 is one node: no node bits, the same id.
    EXPECT_EQ(room_id::make(5, 0, 3), id);
}

TEST(room_id, ClusterIdsCarryTheNodeInTheCountersLowBits) {
    const room_id id = room_id::make(7, 513, 2);
    EXPECT_EQ(id.value(), (((std::uint64_t{7} << 16) | 513u) << 8) | 2u);
    EXPECT_EQ(id.node(), 513u);
    EXPECT_EQ(id.creator(), 2u);
    EXPECT_EQ(id.owner(4), 2u);
    EXPECT_EQ(id.owner(2), 0u);  // a restart with fewer shards: the creator modulo the count
    EXPECT_EQ(room_id::make(7, 65535, 2).node(), 65535u);
}

TEST(room_id_source, OneNodeContinuesAtTheFirstFreeCounter) {
    room_id_source ids(42, 1);
    const room_id a = ids.next(), b = ids.next();
    EXPECT_EQ(a, room_id::make(42, 1));
    EXPECT_EQ(b, room_id::make(43, 1));
}

TEST(room_id_source, ClusterNodesNeverCollideAndStayAboveTheDatabase) {
    // The highest counter field in the shared database is some node's: (9 << 16) | 3.
    const std::uint64_t first_free = ((std::uint64_t{9} << 16) | 3u) + 1;
    std::set<std::uint64_t> seen;
    for (std::uint32_t node : {1u, 2u, 3u}) {
        room_id_source ids(first_free, 0, node);
        for (int i = 0; i < 100; ++i) {
            const room_id id = ids.next();
            EXPECT_EQ(id.node(), node);
            EXPECT_EQ(id.creator(), 0u);
            EXPECT_GE(id.counter(), first_free);
            EXPECT_TRUE(seen.insert(id.value()).second) << "node " << node << " reused id " << id.value();
        }
    }
    EXPECT_EQ(seen.size(), 300u);
}

// A writer on a store double; the tests report commits to commit_order themselves.
class commit_order_test : public ::testing::Test {
protected:
    std::unique_ptr<chat_log_writer> writer() {
        return std::make_unique<chat_log_writer>(
            std::make_unique<test::fake_store>(std::make_shared<test::fake_state>()));
    }
    static room_change joined(std::uint64_t room, std::uint64_t account) {
        return room_change{room_change::kind::joined, room, account, {}, 1};
    }
    static room_event event(std::uint64_t seq) {
        room_event ev;
        ev.room = room_id(1);
        ev.seq = seq;
        return ev;
    }
};

TEST_F(commit_order_test, EventsWaitForTheirCommitAndEverythingBehindWaitsToo) {
    auto w = writer();
    commit_order order(*w, 3, true);
    const auto t1 = order.write(room_change{room_change::kind::created, 1, 0, "r", 1});
    const auto t2 = order.write(joined(1, 7), true);
    ASSERT_TRUE(t1 && t2);
    EXPECT_EQ(*t1, 1u);
    EXPECT_EQ(*t2, 2u);

    room_event a = event(10), b = event(11), c = event(12);
    EXPECT_FALSE(order.pass(0, a, *t1));  // its write is not committed yet
    EXPECT_FALSE(order.pass(1, b, 0));    // needs no write, but comes after one that waits
    EXPECT_FALSE(order.pass(2, c, *t2));
    EXPECT_EQ(order.held(), 3u);

    std::vector<std::pair<unsigned, std::uint64_t>> sent;
    auto send = [&](unsigned to, room_event&& ev) { sent.emplace_back(to, ev.seq); };
    order.committed(1, send);
    EXPECT_EQ(sent, (std::vector<std::pair<unsigned, std::uint64_t>>{{0, 10}, {1, 11}}));
    EXPECT_EQ(order.held(), 1u);
    order.committed(2, send);
    EXPECT_EQ(sent.back(), (std::pair<unsigned, std::uint64_t>{2, 12}));
    EXPECT_EQ(order.held(), 0u);

    room_event d = event(13);
    EXPECT_TRUE(order.pass(0, d, *t2));  // committed, nothing waits: goes at once
}

TEST_F(commit_order_test, AfterCommitRunsOnceItsTicketIsCommittedAfterTheHeldEvents) {
    auto w = writer();
    commit_order order(*w, 0, true);
    const auto t1 = order.write(joined(1, 7));
    ASSERT_TRUE(t1);
    std::vector<std::string> log;
    room_event a = event(1);
    EXPECT_FALSE(order.pass(0, a, *t1));
    order.after_commit(*t1, [&] { log.push_back("after"); });
    EXPECT_TRUE(log.empty());
    order.committed(*t1, [&](unsigned, room_event&&) { log.push_back("event"); });
    EXPECT_EQ(log, (std::vector<std::string>{"event", "after"}));
    order.after_commit(*t1, [&] { log.push_back("at once"); });
    EXPECT_EQ(log.back(), "at once");
}

TEST_F(commit_order_test, AckEarlyHoldsNothing) {
    auto w = writer();
    commit_order order(*w, 0, false);
    const auto t = order.write(joined(1, 7));
    ASSERT_TRUE(t);
    EXPECT_EQ(*t, 0u);
    room_event a = event(1);
    EXPECT_TRUE(order.pass(0, a, *t));
    EXPECT_EQ(order.held(), 0u);
}

}  // namespace
