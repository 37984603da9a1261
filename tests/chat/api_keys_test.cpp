// The server API's key file and per-key token buckets (apps/chat/server/api/api_keys.hpp).
#include "apps/chat/server/api/api_keys.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace strix::chat {
namespace {

TEST(api_keys, parses_keys_names_comments_and_refuses_weak_files) {
    api_keys k = api_keys::parse("# keys\n\n0123456789abcdef backend\r\n  fedcba9876543210fedcba  \n", 10, 10);
    ASSERT_EQ(k.size(), 2u);
    EXPECT_EQ(k.name(0), "backend");
    EXPECT_EQ(k.name(1), "key2");
    EXPECT_EQ(k.find("0123456789abcdef"), 0u);
    EXPECT_EQ(k.find("fedcba9876543210fedcba"), 1u);
    EXPECT_FALSE(k.find("0123456789abcdeF").has_value());
    EXPECT_FALSE(k.find("0123456789abcde").has_value());
    EXPECT_FALSE(k.find("").has_value());
    EXPECT_EQ(k.authorize("Bearer 0123456789abcdef"), 0u);
    EXPECT_EQ(k.authorize("BEARER   fedcba9876543210fedcba "), 1u);
    EXPECT_FALSE(k.authorize("Basic 0123456789abcdef").has_value());
    EXPECT_FALSE(k.authorize("Bearer").has_value());
    EXPECT_THROW(api_keys::parse("# nothing\n", 1, 1), std::runtime_error);
    EXPECT_THROW(api_keys::parse("short name\n", 1, 1), std::runtime_error);
    EXPECT_THROW(api_keys::load("/nonexistent/strix-keys", 1, 1), std::runtime_error);
}

TEST(api_keys, bucket_per_key_refills_at_the_rate) {
    api_keys k = api_keys::parse("aaaaaaaaaaaaaaaa\nbbbbbbbbbbbbbbbb\n", 2.0, 3.0);
    const auto t0 = api_keys::clock::now();
    EXPECT_EQ(k.take(0, t0), 0u);
    EXPECT_EQ(k.take(0, t0), 0u);
    EXPECT_EQ(k.take(0, t0), 0u);
    EXPECT_EQ(k.take(0, t0), 1u);  // empty: one token in 0.5 s, told as 1 s
    EXPECT_EQ(k.take(1, t0), 0u);  // the other key has its own bucket
    EXPECT_EQ(k.take(0, t0 + std::chrono::milliseconds(500)), 0u);
    EXPECT_EQ(k.take(0, t0 + std::chrono::milliseconds(500)), 1u);
    // A long pause refills up to the burst, no more.
    const auto later = t0 + std::chrono::seconds(100);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(k.take(0, later), 0u) << i;
    EXPECT_NE(k.take(0, later), 0u);
}

}  // namespace
}  // namespace strix::chat
