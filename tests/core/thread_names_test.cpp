// Threads are named for top -H, ps -L and perf: each shard "strix-shard-<i>", each worker of a
// blocking_pool "<pool name>-<i>" (the name cut so that the index fits in Linux's 15 bytes).
#include "support/loopback.hpp"

#include <strix/core/blocking_pool.hpp>
#include <strix/core/engine.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace {

using namespace strix;

// The names of this process's threads now.
std::set<std::string> thread_names() {
    std::set<std::string> names;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream f(task.path() / "comm");
        std::string name;
        if (std::getline(f, name)) names.insert(name);
    }
    return names;
}

TEST(thread_names, each_shard_thread_is_named_after_its_index) {
    engine_config c;
    c.shards = 3;
    c.pin_threads = false;
    engine eng(c);
    eng.start();
    EXPECT_TRUE(strix::test::eventually([] {
        const auto names = thread_names();
        return names.count("strix-shard-0") && names.count("strix-shard-1") && names.count("strix-shard-2");
    })) << "threads: "
        << [] {
               std::string all;
               for (const auto& n : thread_names()) all += n + " ";
               return all;
           }();
    EXPECT_EQ(thread_names().count("strix-shard-3"), 0u);
    eng.stop();
    eng.join();
}

TEST(thread_names, blocking_pool_workers_carry_the_pool_name_and_their_index) {
    blocking_pool pool(blocking_pool_config{2, 16, "db"});
    EXPECT_TRUE(strix::test::eventually([] {
        const auto names = thread_names();
        return names.count("db-0") && names.count("db-1");
    }));
    {
        // 16 bytes and more: cut so that the index stays.
        blocking_pool longer(blocking_pool_config{1, 16, "database-writers"});
        EXPECT_TRUE(strix::test::eventually([] { return thread_names().count("database-writ-0") == 1; }));
    }
}

}  // namespace
