// The conversations workload's layout without a server: if the rooms did not get exactly
// --room-size members, or a client's partners were not its own, the per-conversation verification
// would count against the wrong expectations. Also the checker's start after a direct room's
// opening message, and the draw of direct messages.

#include "conversation_layout.hpp"
#include "delivery_checker.hpp"
#include "message_text.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace strix::chat {
namespace {

// Every room holds exactly M clients in slots 0..M-1, every client K distinct rooms, one per layer.
void expect_exact_rooms(std::uint32_t n, std::uint32_t k, std::uint32_t m) {
    ASSERT_EQ(conversation_layout::invalid(n, k, m, 2), "");
    const conversation_layout l(n, k, m, 2);
    ASSERT_EQ(l.rooms(), n * k / m);
    std::vector<std::set<std::uint32_t>> slots(l.rooms());
    for (std::uint32_t i = 0; i < n; ++i) {
        std::set<std::uint32_t> mine;
        for (std::uint32_t layer = 0; layer < k; ++layer) {
            const std::uint32_t r = l.room_of(layer, i);
            ASSERT_LT(r, l.rooms());
            EXPECT_EQ(l.layer_of(r), layer);
            EXPECT_TRUE(l.member(r, i));
            const std::uint32_t s = l.slot_of(layer, i);
            ASSERT_LT(s, m);
            EXPECT_TRUE(slots[r].insert(s).second) << "room " << r << " slot " << s << " given twice";
            mine.insert(r);
        }
        EXPECT_EQ(mine.size(), k) << "client " << i;
    }
    for (std::uint32_t r = 0; r < l.rooms(); ++r) EXPECT_EQ(slots[r].size(), m) << "room " << r;
    // member() says no for everyone else.
    std::uint32_t members_of_0 = 0;
    for (std::uint32_t i = 0; i < n; ++i) members_of_0 += l.member(0, i) ? 1 : 0;
    EXPECT_EQ(members_of_0, m);
}

TEST(ConversationLayout, EveryRoomGetsExactlyItsSizeAndEveryClientItsRooms) {
    for (auto [n, k, m] : std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>>{
             {200, 3, 10}, {5000, 10, 50}, {1000, 10, 50}, {50, 4, 50}, {12, 5, 3}}) {
        SCOPED_TRACE(testing::Message() << n << " clients, " << k << " rooms each of " << m);
        expect_exact_rooms(n, k, m);
    }
}

TEST(ConversationLayout, LayersMixTheMembers) {
    // A layer that repeated layer 0's member sets would test nothing more than one room each.
    const conversation_layout l(200, 3, 10, 0);
    std::set<std::set<std::uint32_t>> layer0;
    std::vector<std::set<std::uint32_t>> members(l.rooms());
    for (std::uint32_t i = 0; i < 200; ++i)
        for (std::uint32_t k = 0; k < 3; ++k) members[l.room_of(k, i)].insert(i);
    for (std::uint32_t r = 0; r < 20; ++r) layer0.insert(members[r]);
    for (std::uint32_t r = 20; r < l.rooms(); ++r) EXPECT_EQ(layer0.count(members[r]), 0u) << "room " << r;
    // Neighbours of layer 0 (clients 0..9, one room) sit in ten rooms of layer 1.
    std::set<std::uint32_t> spread;
    for (std::uint32_t i = 0; i < 10; ++i) spread.insert(l.room_of(1, i));
    EXPECT_EQ(spread.size(), 10u);
}

TEST(ConversationLayout, PairsAreDistinctSymmetricAndRoundsNeverShareAClient) {
    for (auto [n, d] : std::vector<std::pair<std::uint32_t, std::uint32_t>>{{200, 2}, {5000, 2}, {11, 4}, {9, 8}}) {
        SCOPED_TRACE(testing::Message() << n << " clients, " << d << " partners");
        const conversation_layout l(n, 1, n, d);  // one room of everybody; the pairs are the point
        ASSERT_EQ(l.pair_count(), n * d / 2);
        std::set<std::pair<std::uint32_t, std::uint32_t>> all;
        for (std::uint32_t e = 0; e < l.pair_count(); ++e) {
            const auto p = l.pair(e);
            EXPECT_LT(p.first, p.second);
            EXPECT_TRUE(all.insert(p).second) << "pair " << e << " repeats";
        }
        std::map<std::uint32_t, std::uint32_t> per_client;
        for (std::uint32_t i = 0; i < n; ++i) {
            const auto mine = l.pairs_of(i);
            EXPECT_EQ(mine.size(), d);
            std::set<std::uint32_t> partners;
            for (std::uint32_t e : mine) {
                const auto [a, b] = l.pair(e);
                ASSERT_TRUE(a == i || b == i) << "pair " << e << " of client " << i;
                partners.insert(a == i ? b : a);
            }
            EXPECT_EQ(partners.size(), d) << "client " << i;
        }
        // No client in two pairs of a round, rounds within the greedy bound, counts add up.
        ASSERT_GT(l.rounds(), 0u);
        EXPECT_LE(l.rounds(), 2 * d - 1);
        std::set<std::pair<std::uint32_t, std::uint32_t>> busy;  // (round, client)
        std::vector<std::uint32_t> per_round(l.rounds(), 0);
        for (std::uint32_t e = 0; e < l.pair_count(); ++e) {
            const std::uint32_t r = l.round_of(e);
            ASSERT_LT(r, l.rounds());
            EXPECT_TRUE(busy.insert({r, l.pair(e).first}).second) << "round " << r;
            EXPECT_TRUE(busy.insert({r, l.pair(e).second}).second) << "round " << r;
            ++per_round[r];
        }
        std::uint32_t sum = 0;
        for (std::uint32_t r = 0; r < l.rounds(); ++r) EXPECT_EQ(l.pairs_through(r), sum += per_round[r]);
        EXPECT_EQ(l.pairs_through(l.rounds() - 1), l.pair_count());
    }
}

TEST(ConversationLayout, RejectsWhatCannotBeLaidOutWithAReason) {
    EXPECT_NE(conversation_layout::invalid(100, 0, 10, 2), "");   // no rooms
    EXPECT_NE(conversation_layout::invalid(105, 3, 10, 2), "");   // 105 is not a multiple of 10
    EXPECT_NE(conversation_layout::invalid(5, 3, 10, 2), "");     // fewer clients than a room
    EXPECT_NE(conversation_layout::invalid(100, 3, 1, 2), "");    // a room of one
    EXPECT_NE(conversation_layout::invalid(100, 3, 10, 3), "");   // odd partners
    EXPECT_NE(conversation_layout::invalid(100, 3, 10, 18), "");  // too many partners
    EXPECT_NE(conversation_layout::invalid(4, 1, 2, 4), "");      // partners would repeat
    EXPECT_EQ(conversation_layout::invalid(100, 3, 10, 0), "");
    EXPECT_EQ(conversation_layout::invalid(5000, 10, 50, 2), "");
}

TEST(ConversationLayout, DirectDrawsFollowTheShareAndRepeat) {
    std::uint64_t direct = 0;
    constexpr std::uint64_t n = 100000;
    for (std::uint64_t s = 0; s < n; ++s)
        direct += conversation_layout::is_direct(static_cast<std::uint32_t>(s % 977), s, 0.2);
    EXPECT_NEAR(static_cast<double>(direct) / n, 0.2, 0.01);
    for (std::uint64_t s = 0; s < 1000; ++s) {
        EXPECT_EQ(conversation_layout::is_direct(7, s, 0.2), conversation_layout::is_direct(7, s, 0.2));
        EXPECT_FALSE(conversation_layout::is_direct(7, s, 0));
        EXPECT_TRUE(conversation_layout::is_direct(7, s, 1));
    }
}

TEST(ConversationLayout, TextKeysDifferPerConversationAndKeepTheSender) {
    const conversation_layout l(200, 3, 10, 2);
    const message_text text(*payload_mix::parse("64:100", nullptr));
    char a[64], b[64];
    const std::size_t la = text.write(l.text_key(42, 3), 5, a);
    const std::size_t lb = text.write(l.text_key(42, 4), 5, b);
    EXPECT_NE(std::string_view(a, la), std::string_view(b, lb));
    EXPECT_TRUE(text.matches(l.text_key(42, 3), 5, std::string_view(a, la)));
    EXPECT_FALSE(text.matches(l.text_key(42, 4), 5, std::string_view(a, la)));  // another conversation's
    EXPECT_FALSE(text.matches(l.text_key(43, 3), 5, std::string_view(a, la)));  // another sender's
    EXPECT_EQ(l.text_key(42, 3) & 0xffffffffULL, 42u);
}

TEST(DeliveryChecker, BeginsAfterADirectRoomsOpeningMessage) {
    // The peer joined after the opener's first message (join_room_res.last_seq = 1).
    delivery_checker c(2);
    c.begin_after(1, 0, 1);
    EXPECT_EQ(c.on_message(1, 0, 1), delivery_verdict::duplicate);
    EXPECT_EQ(c.on_message(2, 0, 1), delivery_verdict::duplicate);  // the opening message again, renumbered
    EXPECT_EQ(c.on_message(3, 1, 1), delivery_verdict::in_order);
    delivery_checker d(2);
    d.begin_after(1, 0, 1);
    EXPECT_EQ(d.on_message(2, 1, 1), delivery_verdict::in_order);
    EXPECT_EQ(d.on_message(3, 0, 2), delivery_verdict::in_order);
    EXPECT_EQ(d.missing(), 0u);
    EXPECT_EQ(d.sender_gaps(), 0u);
}

}  // namespace
}  // namespace strix::chat
