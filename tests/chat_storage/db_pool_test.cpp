// db_pool: jobs run on worker threads, each with its own connection; the queue is bounded and
// try_submit never waits; stop() drains.

#include "apps/chat/storage/db_pool.hpp"

#include "fake_store.hpp"
#include "storage_test_support.hpp"

#include <gtest/gtest.h>

#include <latch>
#include <map>
#include <set>
#include <thread>
#include <vector>

namespace {

using namespace strix;
using namespace strix::chat;
using strix::test::backend;

class db_pool_db_test : public test::store_test {};

TEST_P(db_pool_db_test, JobsRunOnWorkersEachWithItsOwnConnection) {
    db_pool pool({.url = url_, .policy = password_policy::fast_for_tests(), .workers = 2, .queue_capacity = 256});
    ASSERT_EQ(pool.worker_count(), 2u);
    constexpr int jobs = 60;
    std::mutex mu;
    std::map<chat_store*, std::set<std::thread::id>> threads_of_store;
    std::vector<login_result> results(jobs);
    // The first two jobs wait for each other, so two different workers must be running them.
    std::latch both(2);
    const auto main_thread = std::this_thread::get_id();
    for (int i = 0; i < jobs; ++i) {
        ASSERT_TRUE(pool.try_submit([&, i](chat_store& store) {
            if (i < 2) both.arrive_and_wait();
            auto r = store.login("user" + std::to_string(i), "pw", true);
            std::lock_guard lk(mu);
            results[static_cast<std::size_t>(i)] = r;
            threads_of_store[&store].insert(std::this_thread::get_id());
        }));
    }
    pool.stop();

    const auto st = pool.stats();
    EXPECT_EQ(st.submitted, static_cast<std::uint64_t>(jobs));
    EXPECT_EQ(st.executed, static_cast<std::uint64_t>(jobs));
    EXPECT_EQ(st.failed, 0u);
    EXPECT_EQ(st.queue_depth, 0u);
    ASSERT_EQ(threads_of_store.size(), 2u);
    std::set<std::thread::id> all_threads;
    for (const auto& [store, ids] : threads_of_store) {
        EXPECT_EQ(ids.size(), 1u) << "a store was used by more than one thread";
        all_threads.insert(ids.begin(), ids.end());
    }
    EXPECT_EQ(all_threads.size(), 2u);
    EXPECT_EQ(all_threads.count(main_thread), 0u);
    std::set<std::uint64_t> ids;
    for (const auto& r : results) {
        EXPECT_EQ(r.outcome, login_outcome::created);
        ids.insert(r.acct.id);
    }
    EXPECT_EQ(ids.size(), static_cast<std::size_t>(jobs));

    auto store = open_chat_store(url_, password_policy::fast_for_tests());
    for (int i = 0; i < jobs; ++i) {
        auto a = store->find_account("user" + std::to_string(i));
        ASSERT_TRUE(a.has_value()) << i;
        EXPECT_EQ(a->id, results[static_cast<std::size_t>(i)].acct.id);
    }
}

INSTANTIATE_TEST_SUITE_P(backends, db_pool_db_test, ::testing::Values(backend::sqlite, backend::postgres),
                         test::backend_name);

std::vector<std::unique_ptr<chat_store>> fake_stores(std::size_t n) {
    std::vector<std::unique_ptr<chat_store>> v;
    for (std::size_t i = 0; i < n; ++i)
        v.push_back(std::make_unique<test::fake_store>(std::make_shared<test::fake_state>()));
    return v;
}

TEST(db_pool, TrySubmitRefusesWhenFullAndStopDrains) {
    db_pool pool(fake_stores(2), 3);
    std::mutex mu;
    std::condition_variable cv;
    bool release = false;
    int started = 0;
    std::vector<int> ran;
    auto blocker = [&](int id) {
        return [&, id](chat_store&) {
            std::unique_lock lk(mu);
            ++started;
            cv.notify_all();
            cv.wait(lk, [&] { return release; });
            ran.push_back(id);
        };
    };
    ASSERT_TRUE(pool.try_submit(blocker(0)));
    ASSERT_TRUE(pool.try_submit(blocker(1)));
    {
        std::unique_lock lk(mu);
        ASSERT_TRUE(cv.wait_for(lk, std::chrono::seconds(10), [&] { return started == 2; }));
    }
    // Both workers are busy: exactly `capacity` more fit, the next is refused at once.
    for (int id = 2; id < 5; ++id) {
        EXPECT_TRUE(pool.try_submit([&, id](chat_store&) {
            std::lock_guard lk(mu);
            ran.push_back(id);
        }));
    }
    EXPECT_FALSE(pool.try_submit([](chat_store&) { FAIL() << "a refused job ran"; }));
    auto st = pool.stats();
    EXPECT_EQ(st.queue_depth, 3u);
    EXPECT_EQ(st.queue_peak, 3u);
    EXPECT_EQ(st.submitted, 5u);
    EXPECT_EQ(st.rejected, 1u);
    EXPECT_EQ(st.executed, 0u);

    {
        std::lock_guard lk(mu);
        release = true;
    }
    cv.notify_all();
    pool.stop();
    st = pool.stats();
    EXPECT_EQ(st.executed, 5u);
    EXPECT_EQ(st.queue_depth, 0u);
    std::sort(ran.begin(), ran.end());
    EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3, 4}));
    EXPECT_FALSE(pool.try_submit([](chat_store&) {}));  // stopped
    EXPECT_EQ(pool.stats().rejected, 2u);
}

TEST(db_pool, OneWorkerRunsJobsInSubmissionOrderAndStopDrainsThemAll) {
    db_pool pool(fake_stores(1), 1000);
    std::vector<int> ran;  // only the single worker touches it until stop() joins
    for (int i = 0; i < 500; ++i) ASSERT_TRUE(pool.try_submit([&ran, i](chat_store&) { ran.push_back(i); }));
    pool.stop();
    ASSERT_EQ(ran.size(), 500u);
    for (int i = 0; i < 500; ++i) EXPECT_EQ(ran[static_cast<std::size_t>(i)], i);
    EXPECT_EQ(pool.stats().executed, 500u);
}

TEST(db_pool, AThrowingJobIsCountedAndTheWorkerCarriesOn) {
    db_pool pool(fake_stores(1), 16);
    bool after = false;
    ASSERT_TRUE(pool.try_submit([](chat_store&) { throw storage_error("injected"); }));
    ASSERT_TRUE(pool.try_submit([&](chat_store&) { after = true; }));
    pool.stop();
    EXPECT_TRUE(after);
    const auto st = pool.stats();
    EXPECT_EQ(st.executed, 2u);
    EXPECT_EQ(st.failed, 1u);
}

TEST(db_pool, SubmittingFromManyThreadsLosesNothing) {
    db_pool pool(fake_stores(2), 100'000);
    std::atomic<int> sum{0};
    std::vector<std::thread> submitters;
    for (int t = 0; t < 4; ++t) {
        submitters.emplace_back([&, t] {
            for (int i = 0; i < 2000; ++i) {
                const int v = t * 2000 + i;
                ASSERT_TRUE(pool.try_submit([&sum, v](chat_store&) { sum.fetch_add(v); }));
            }
        });
    }
    for (auto& s : submitters) s.join();
    pool.stop();
    EXPECT_EQ(pool.stats().executed, 8000u);
    EXPECT_EQ(sum.load(), 7999 * 8000 / 2);
}

TEST(db_pool, ConstructorReportsAnUnusableDatabase) {
    try {
        db_pool pool({.url = "sqlite:/nonexistent-strix-dir/chat.db", .policy = password_policy::fast_for_tests()});
        FAIL() << "expected an exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
    }
}

}  // namespace
