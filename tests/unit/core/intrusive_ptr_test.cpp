#include <strix/core/intrusive_ptr.hpp>

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace {

struct local_obj : strix::ref_counted<local_obj> {
    explicit local_obj(int* d) : destroyed(d) {}
    ~local_obj() { ++*destroyed; }
    int* destroyed;
};

struct shared_obj : strix::atomic_ref_counted<shared_obj> {
    explicit shared_obj(std::atomic<int>* d) : destroyed(d) {}
    ~shared_obj() { destroyed->fetch_add(1); }
    std::atomic<int>* destroyed;
};

TEST(intrusive_ptr, counts_copies_and_moves_and_destroys_once) {
    int destroyed = 0;
    {
        auto a = strix::make_intrusive<local_obj>(&destroyed);
        EXPECT_EQ(a->use_count(), 1u);
        auto b = a;
        EXPECT_EQ(a->use_count(), 2u);
        auto c = std::move(b);
        EXPECT_EQ(b.get(), nullptr);
        EXPECT_EQ(a->use_count(), 2u);
        c.reset();
        EXPECT_EQ(a->use_count(), 1u);
        EXPECT_EQ(destroyed, 0);
    }
    EXPECT_EQ(destroyed, 1);
}

TEST(intrusive_ptr, detach_and_adopt_keep_the_count) {
    int destroyed = 0;
    auto a = strix::make_intrusive<local_obj>(&destroyed);
    local_obj* raw = a.detach();
    EXPECT_EQ(raw->use_count(), 1u);
    strix::intrusive_ptr<local_obj> b(raw, false);
    EXPECT_EQ(b->use_count(), 1u);
    b = nullptr;
    EXPECT_EQ(destroyed, 1);
}

TEST(intrusive_ptr, atomic_count_survives_concurrent_copies) {
    std::atomic<int> destroyed{0};
    auto root = strix::make_intrusive<shared_obj>(&destroyed);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([root] {
            for (int i = 0; i < 100000; ++i) {
                strix::intrusive_ptr<shared_obj> copy = root;
                ASSERT_TRUE(copy);
            }
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(root->use_count(), 1u);
    EXPECT_EQ(destroyed.load(), 0);
    root.reset();
    EXPECT_EQ(destroyed.load(), 1);
}

}  // namespace
