// login_throttle on its own, with explicit clocks: the backoff sequence, the lockout, one attempt
// at a time while in backoff, what a success clears, device-token keys and their fall-back to
// the name, forgetting quiet keys, and the table bound.
#include "apps/chat/server/login/login_throttle.hpp"

#include <gtest/gtest.h>

using namespace strix::chat;
using namespace std::chrono_literals;
using clk = login_throttle::clock;

namespace {

login_throttle_config small() {
    login_throttle_config c;
    c.account_free = 2;
    c.account_lockout = 5;
    c.address_free = 4;
    c.address_lockout = 8;
    c.backoff = 100ms;
    c.lockout = 10s;
    return c;
}

TEST(login_throttle, free_failures_then_doubling_waits_then_the_lockout) {
    login_throttle t(small());
    auto now = clk::time_point{} + 1h;
    std::vector<std::chrono::milliseconds> waits;
    ASSERT_TRUE(t.check("ann", "", now).allowed);
    for (int i = 0; i < 6; ++i) {
        t.failed("ann", "", now);
        // The next attempt: at once if allowed, else when the wait is over.
        auto v = t.check("ann", "", now);
        waits.push_back(v.allowed ? 0ms : v.retry_after);
        if (!v.allowed) {
            EXPECT_TRUE(v.by_account);
            now += v.retry_after;
            ASSERT_TRUE(t.check("ann", "", now).allowed) << "failure " << i;
        }
    }
    // After failures 1..6: free, 100 ms, 200 ms, 400 ms, then the lockout (5th failure on; a key
    // whose lockout just ended is not forgotten, so the 6th locks out again).
    EXPECT_EQ(waits, (std::vector<std::chrono::milliseconds>{0ms, 100ms, 200ms, 400ms, 10000ms, 10000ms}));
}

TEST(login_throttle, a_key_in_backoff_lets_one_attempt_through_at_a_time) {
    login_throttle t(small());
    auto now = clk::time_point{} + 1h;
    t.failed("ann", "", now);  // one more failure would earn a wait
    EXPECT_TRUE(t.check("ann", "", now).allowed);
    auto second = t.check("ann", "", now);  // concurrent with the first, before its verdict
    EXPECT_FALSE(second.allowed);
    EXPECT_EQ(second.retry_after, 100ms);
    t.abandoned("ann", "", now);  // the first never reached a verdict: its hold goes
    EXPECT_TRUE(t.check("ann", "", now).allowed);
}

TEST(login_throttle, a_success_clears_the_account_but_not_the_address) {
    login_throttle t(small());
    auto now = clk::time_point{} + 1h;
    for (int i = 0; i < 4; ++i) {
        t.failed("a" + std::to_string(i), "10.0.0.1", now);
    }
    auto v = t.check("zed", "10.0.0.1", now);
    EXPECT_FALSE(v.allowed) << "four failures from one address across accounts";
    EXPECT_FALSE(v.by_account);
    now += v.retry_after;
    ASSERT_TRUE(t.check("ann", "10.0.0.1", now).allowed);
    t.succeeded("ann", "10.0.0.1", now);
    t.failed("bob", "10.0.0.1", now);  // the 5th failure of the address: 200 ms, not a fresh start
    EXPECT_EQ(t.check("carl", "10.0.0.1", now).retry_after, 200ms);
    // Accounts: a success forgets the failures.
    t.failed("dora", "", now);
    t.failed("dora", "", now);
    now += 200ms;
    t.succeeded("dora", "", now);
    t.failed("dora", "", now);
    EXPECT_TRUE(t.check("dora", "", now).allowed);
}

TEST(login_throttle, concurrent_logins_from_one_address_do_not_trip_its_backoff) {
    // 40 users behind one address log in at once (chat.load_smoke's profile; address_free = 4).
    login_throttle t(small());
    auto now = clk::time_point{} + 1h;
    for (int i = 0; i < 40; ++i)
        ASSERT_TRUE(t.check("user" + std::to_string(i), "10.0.0.1", now).allowed) << "login " << i;
    for (int i = 0; i < 40; ++i) t.succeeded("user" + std::to_string(i), "10.0.0.1", now);
    EXPECT_TRUE(t.check("late", "10.0.0.1", now).allowed);
    t.abandoned("late", "10.0.0.1", now);
    EXPECT_EQ(t.tracked(), 0u) << "nothing left to remember";
    // Pending attempts that then fail count when they fail: four failures, the fifth waits.
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(t.check("g" + std::to_string(i), "10.0.0.1", now).allowed);
    for (int i = 0; i < 4; ++i) t.failed("g" + std::to_string(i), "10.0.0.1", now);
    auto v = t.check("g9", "10.0.0.1", now);
    EXPECT_FALSE(v.allowed);
    EXPECT_FALSE(v.by_account);
    EXPECT_EQ(v.retry_after, 100ms);
}

// Device tokens: a token's key waits for its own failures and not for the name's; fall_back
// turns an attempt whose token did not hold into one of the name (refused while the name waits,
// holding nothing afterwards), and a made-up token is a failure of the address.
TEST(login_throttle, a_device_key_is_checked_in_place_of_the_name_and_falls_back_to_it) {
    login_throttle t(small());
    auto now = clk::time_point{} + 1h;
    const std::byte hash[32] = {std::byte{0xab}, std::byte{0x01}};
    const std::string device = login_throttle::device_key(hash);
    EXPECT_EQ(device, "#ab01" + std::string(28, '0'));
    // The name waits (two failures: 100 ms); the token does not.
    t.failed("ann", "", now);
    t.failed("ann", "", now);
    ASSERT_FALSE(t.check("ann", "10.0.0.1", now).allowed);
    auto v = t.check(device, "10.0.0.1", now);
    ASSERT_TRUE(v.allowed);
    t.succeeded(device, "10.0.0.1", now);
    EXPECT_FALSE(t.check("ann", "", now).allowed) << "a token's success cleared the name";
    // The token's own failures: free, free, then waits.
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(t.check(device, "", now).allowed) << i;
        t.failed(device, "", now);
    }
    v = t.check(device, "", now);
    EXPECT_FALSE(v.allowed);
    EXPECT_TRUE(v.by_account);
    EXPECT_EQ(v.retry_after, 100ms);

    // An unusable token while the name waits: refused, and the attempt holds nothing.
    const std::byte other[32] = {std::byte{0x02}};
    const std::string forged = login_throttle::device_key(other);
    const std::size_t before = t.tracked();
    ASSERT_TRUE(t.check(forged, "", now).allowed);
    v = t.fall_back(forged, "ann", "", false, now);
    EXPECT_FALSE(v.allowed);
    EXPECT_TRUE(v.by_account);
    EXPECT_EQ(t.tracked(), before) << "the refused attempt still holds a key";
    // Once the name's wait is over the attempt goes on as the name's: its failure is the name's.
    now += 100ms;
    ASSERT_TRUE(t.check(forged, "", now).allowed);
    ASSERT_TRUE(t.fall_back(forged, "ann", "", false, now).allowed);
    EXPECT_FALSE(t.check("ann", "", now).allowed) << "one attempt at a time while the name is in backoff";
    t.failed("ann", "", now);
    EXPECT_EQ(t.check("ann", "", now).retry_after, 200ms);
    EXPECT_TRUE(t.check(forged, "", now).allowed) << "the token key kept a failure it never had";
    t.abandoned(forged, "", now);

    // Made-up tokens from one address (address_free = 4) with the right password for a name
    // that does not wait: each is a failure of the address, the 4th is refused.
    for (int i = 0; i < 3; ++i) {
        const std::byte h[32] = {std::byte{static_cast<unsigned char>(0x10 + i)}};
        const std::string key = login_throttle::device_key(h);
        ASSERT_TRUE(t.check(key, "10.0.0.2", now).allowed) << i;
        ASSERT_TRUE(t.fall_back(key, "bob", "10.0.0.2", true, now).allowed) << i;
        t.succeeded("bob", "10.0.0.2", now);
    }
    const std::byte h4[32] = {std::byte{0x20}};
    const std::string key4 = login_throttle::device_key(h4);
    ASSERT_TRUE(t.check(key4, "10.0.0.2", now).allowed);
    v = t.fall_back(key4, "bob", "10.0.0.2", true, now);
    EXPECT_FALSE(v.allowed);
    EXPECT_FALSE(v.by_account);
    EXPECT_EQ(v.retry_after, 100ms);
    EXPECT_FALSE(t.check("bob", "10.0.0.2", now).allowed) << "the address does not wait";
    // An expired token (not forged) is no failure of the address.
    EXPECT_TRUE(t.check(key4, "10.0.0.3", now).allowed);
    for (int i = 0; i < 6; ++i) {
        ASSERT_TRUE(t.fall_back(key4, "bob", "10.0.0.3", false, now).allowed) << i;
        t.succeeded("bob", "10.0.0.3", now);
        ASSERT_TRUE(t.check(key4, "10.0.0.3", now).allowed) << i;
    }
    t.abandoned(key4, "10.0.0.3", now);
}

TEST(login_throttle, quiet_keys_are_forgotten_and_the_table_is_bounded) {
    auto cfg = small();
    cfg.max_tracked = 3;
    login_throttle t(cfg);
    auto now = clk::time_point{} + 1h;
    for (int i = 0; i < 5; ++i) t.failed("k" + std::to_string(i), "", now);
    EXPECT_LE(t.tracked(), 3u) << "the table never grows past its bound";
    EXPECT_EQ(t.untracked(), 0u) << "keys below the backoff made room";
    // Keys in backoff are kept over new ones.
    login_throttle u(cfg);
    for (int i = 0; i < 3; ++i) {
        u.failed("k" + std::to_string(i), "", now);
        u.failed("k" + std::to_string(i), "", now);
    }
    u.failed("new", "", now);
    EXPECT_EQ(u.tracked(), 3u);
    EXPECT_EQ(u.untracked(), 1u);
    EXPECT_FALSE(u.check("k0", "", now).allowed);
    // A lockout's length later they are forgotten.
    now += 11s;
    EXPECT_TRUE(u.check("k0", "", now).allowed);
    u.failed("new", "", now);
    EXPECT_EQ(u.untracked(), 1u) << "forgotten keys made room";
}

}  // namespace
