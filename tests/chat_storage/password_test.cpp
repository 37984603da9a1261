#include "apps/chat/storage/password.hpp"

#include <sodium.h>

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace strix;
using namespace strix::chat;

TEST(password, PoliciesAreLibsodiumArgon2idLimits) {
    const auto fast = password_policy::fast_for_tests();
    EXPECT_EQ(fast.opslimit, crypto_pwhash_argon2id_OPSLIMIT_MIN);
    EXPECT_EQ(fast.memlimit, crypto_pwhash_argon2id_MEMLIMIT_MIN);
    const auto interactive = password_policy::interactive();
    EXPECT_EQ(interactive.opslimit, crypto_pwhash_argon2id_OPSLIMIT_INTERACTIVE);
    EXPECT_EQ(interactive.memlimit, crypto_pwhash_argon2id_MEMLIMIT_INTERACTIVE);
}

TEST(password, HashIsArgon2idWithPolicyAndVerifies) {
    const auto h = hash_password("hunter2", password_policy::fast_for_tests());
    EXPECT_TRUE(h.starts_with("$argon2id$v=19$m=8,t=1,p=1$")) << h;
    EXPECT_EQ(h.find("hunter2"), std::string::npos);
    EXPECT_TRUE(verify_password(h, "hunter2"));
    EXPECT_FALSE(verify_password(h, "hunter3"));
    EXPECT_FALSE(verify_password(h, "hunter"));
    EXPECT_FALSE(verify_password(h, ""));
}

TEST(password, SaltMakesEveryHashDifferent) {
    std::set<std::string> hashes;
    for (int i = 0; i < 8; ++i) hashes.insert(hash_password("same", password_policy::fast_for_tests()));
    EXPECT_EQ(hashes.size(), 8u);
    for (const auto& h : hashes) EXPECT_TRUE(verify_password(h, "same"));
}

TEST(password, EmptyAndBinaryPasswordsWork) {
    const std::string binary("a\0b\xff", 4);
    const auto h = hash_password(binary, password_policy::fast_for_tests());
    EXPECT_TRUE(verify_password(h, binary));
    EXPECT_FALSE(verify_password(h, "a"));  // the NUL is part of the password, not its end
    const auto e = hash_password("", password_policy::fast_for_tests());
    EXPECT_TRUE(verify_password(e, ""));
    EXPECT_FALSE(verify_password(e, " "));
}

TEST(password, MalformedHashesNeverVerify) {
    const auto h = hash_password("pw", password_policy::fast_for_tests());
    EXPECT_FALSE(verify_password("", "pw"));
    EXPECT_FALSE(verify_password("pw", "pw"));                      // plaintext stored by mistake
    EXPECT_FALSE(verify_password(h.substr(0, h.size() - 4), "pw"));  // truncated
    EXPECT_FALSE(verify_password(h + std::string(200, 'A'), "pw"));  // too long
    std::string with_nul = h;
    with_nul.insert(5, 1, '\0');
    EXPECT_FALSE(verify_password(with_nul, "pw"));
    std::string argon2i = h;
    argon2i.replace(0, 10, "$argon2i$");  // another algorithm is refused
    EXPECT_FALSE(verify_password(argon2i, "pw"));
}

TEST(password, NeedsRehashWhenPolicyChanges) {
    const auto h = hash_password("pw", password_policy::fast_for_tests());
    EXPECT_FALSE(password_needs_rehash(h, password_policy::fast_for_tests()));
    EXPECT_TRUE(password_needs_rehash(h, password_policy{2, crypto_pwhash_argon2id_MEMLIMIT_MIN}));
    EXPECT_TRUE(password_needs_rehash("garbage", password_policy::fast_for_tests()));
}

TEST(password, BelowMinimumPolicyIsRefused) {
    EXPECT_THROW(hash_password("pw", password_policy{0, crypto_pwhash_argon2id_MEMLIMIT_MIN}), std::invalid_argument);
    EXPECT_THROW(hash_password("pw", password_policy{1, 1024}), std::invalid_argument);
}

TEST(password, ConcurrentFirstUseFromManyThreads) {
    // sodium_init runs once however many threads hash their first password together.
    std::vector<std::string> hashes(6);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < hashes.size(); ++i) {
        threads.emplace_back(
            [&, i] { hashes[i] = hash_password("pw" + std::to_string(i), password_policy::fast_for_tests()); });
    }
    for (auto& t : threads) t.join();
    for (std::size_t i = 0; i < hashes.size(); ++i) {
        EXPECT_TRUE(verify_password(hashes[i], "pw" + std::to_string(i)));
        EXPECT_FALSE(verify_password(hashes[i], "pw" + std::to_string((i + 1) % hashes.size())));
    }
}

}  // namespace
