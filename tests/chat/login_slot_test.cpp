// login_slot on its own: places up to the limit and none beyond, each given back exactly once
// (release, destruction, move, a shared copy such as a queued job holds).
#include "apps/chat/server/login/login_slot.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

using namespace strix::chat;

namespace {

TEST(login_slot, places_up_to_the_limit_and_none_beyond) {
    std::atomic<std::size_t> in_flight{0};
    std::vector<login_slot> held;
    for (int i = 0; i < 3; ++i) {
        held.push_back(login_slot::try_take(in_flight, 3));
        EXPECT_TRUE(held.back()) << "place " << i;
    }
    EXPECT_EQ(in_flight.load(), 3u);
    login_slot refused = login_slot::try_take(in_flight, 3);
    EXPECT_FALSE(refused);
    EXPECT_EQ(in_flight.load(), 3u) << "a refusal leaves the count as it was";
    held.pop_back();
    EXPECT_EQ(in_flight.load(), 2u);
    EXPECT_TRUE(login_slot::try_take(in_flight, 3)) << "a place given back can be taken again";
    EXPECT_EQ(in_flight.load(), 2u) << "... and the temporary gave it back";
}

TEST(login_slot, a_place_goes_back_exactly_once_however_the_slot_ends) {
    std::atomic<std::size_t> in_flight{0};
    {
        login_slot s = login_slot::try_take(in_flight, 10);
        s.release();
        EXPECT_FALSE(s);
        EXPECT_EQ(in_flight.load(), 0u);
        s.release();
    }
    EXPECT_EQ(in_flight.load(), 0u) << "release, a second release and destruction give back one place";

    {
        login_slot a = login_slot::try_take(in_flight, 10);
        login_slot b = std::move(a);
        EXPECT_FALSE(a);
        EXPECT_TRUE(b);
        login_slot c = login_slot::try_take(in_flight, 10);
        EXPECT_EQ(in_flight.load(), 2u);
        c = std::move(b);  // c's own place goes back, b's moves in
        EXPECT_EQ(in_flight.load(), 1u);
    }
    EXPECT_EQ(in_flight.load(), 0u) << "moved-from slots give nothing back";

    {
        auto shared = std::make_shared<login_slot>(login_slot::try_take(in_flight, 10));
        auto copy = shared;  // what a copied std::function job holds
        copy->release();
        shared.reset();
        EXPECT_EQ(in_flight.load(), 0u);
    }
    EXPECT_EQ(in_flight.load(), 0u);
    {
        auto shared = std::make_shared<login_slot>(login_slot::try_take(in_flight, 10));
        auto copy = shared;
        EXPECT_EQ(in_flight.load(), 1u);
        shared.reset();
        EXPECT_EQ(in_flight.load(), 1u) << "a copy still holds the place";
    }
    EXPECT_EQ(in_flight.load(), 0u) << "a job dropped without running gives its place back";
}

}  // namespace
