// engine_config::fd_table_per_shard: each shard's descriptors count against RLIMIT_NOFILE in a
// table of its own, and a listener opened before start belongs to one shard only (docs/
// architecture.md, "Descriptor tables"). On both backends.
#include "support/echo_fixture.hpp"
#include "support/loopback.hpp"

#include <strix/core/engine.hpp>
#include <strix/net/server.hpp>

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using namespace strix;
using namespace std::chrono_literals;

// Lowers RLIMIT_NOFILE's soft limit for one test and puts it back.
class soft_fd_limit {
public:
    explicit soft_fd_limit(rlim_t soft) {
        ::getrlimit(RLIMIT_NOFILE, &saved_);
        rlimit lowered = saved_;
        lowered.rlim_cur = soft;
        ok_ = ::setrlimit(RLIMIT_NOFILE, &lowered) == 0;
    }
    ~soft_fd_limit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
    bool ok() const { return ok_; }

private:
    rlimit saved_{};
    bool ok_ = false;
};

engine_config config(io_backend io, bool per_shard, unsigned shards) {
    engine_config c;
    c.shards = shards;
    c.pin_threads = false;
    c.io = io;
    c.fd_table_per_shard = per_shard;
    return c;
}

// Descriptors a shard gives back after filling its table: the sanitizers' runtime opens files
// (UBSan's vptr check reads /proc/self/maps) and fails with a full table.
constexpr std::size_t headroom = 8;

// Opens sockets on each shard in turn until its table is full, then closes `headroom` of them;
// returns how many each opened.
std::vector<std::size_t> fill_each_shard(engine& eng, std::vector<std::vector<int>>& held) {
    std::vector<std::size_t> got;
    held.resize(eng.shard_count());
    for (unsigned i = 0; i < eng.shard_count(); ++i) {
        got.push_back(eng.run_on(i, [&held, i] {
            for (;;) {
                const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0) break;
                held[i].push_back(fd);
            }
            const std::size_t opened = held[i].size();
            for (std::size_t k = 0; k < headroom && !held[i].empty(); ++k) {
                ::close(held[i].back());
                held[i].pop_back();
            }
            return opened;
        }));
    }
    return got;
}

void close_all(engine& eng, std::vector<std::vector<int>>& held) {
    for (unsigned i = 0; i < eng.shard_count(); ++i)
        eng.run_on(i, [&held, i] {
            for (int fd : held[i]) ::close(fd);
            held[i].clear();
        });
}

class fd_table : public ::testing::TestWithParam<io_backend> {};

TEST_P(fd_table, each_shard_holds_up_to_the_limit_in_its_own_table) {
    constexpr rlim_t soft = 160;
    soft_fd_limit limit(soft);
    ASSERT_TRUE(limit.ok());
    engine eng(config(GetParam(), true, 3));
    eng.start();
    std::vector<std::vector<int>> held;
    const auto got = fill_each_shard(eng, held);
    std::size_t total = 0;
    for (std::size_t n : got) {
        // The copy of the process's table it started with (the test's and the engine's own
        // descriptors) takes some of the limit; the rest is the shard's.
        EXPECT_GT(n, soft / 2) << "a shard's own table";
        total += n;
    }
    EXPECT_GT(total, soft * 2) << "three tables hold more than one limit";
    // The process's own table is untouched by what the shards opened.
    const int mine = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(mine, 0);
    if (mine >= 0) ::close(mine);
    close_all(eng, held);
    eng.stop();
    eng.join();
}

TEST_P(fd_table, without_the_option_the_shards_share_one_limit) {
    constexpr rlim_t soft = 160;
    soft_fd_limit limit(soft);
    ASSERT_TRUE(limit.ok());
    engine eng(config(GetParam(), false, 3));
    eng.start();
    std::vector<std::vector<int>> held;
    const auto got = fill_each_shard(eng, held);
    EXPECT_GT(got[0], soft / 2) << "shard 0 filled the table";
    EXPECT_LE(got[1], headroom) << "shard 1 found only what shard 0 gave back";
    EXPECT_LE(got[2], headroom) << "shard 2 found only what shard 1 gave back";
    EXPECT_LT(got[0] + got[1] + got[2], soft + 2 * headroom) << "one table for all";
    close_all(eng, held);
    eng.stop();
    eng.join();
}

TEST_P(fd_table, a_server_serves_on_every_shard_and_its_closed_listeners_stop_listening) {
    server_config cfg;
    auto srv_eng = std::make_unique<engine>(config(GetParam(), true, 3));
    auto srv = std::make_unique<server>(*srv_eng, cfg, [](shard&) { return std::make_unique<test::echo_handler>(); });
    srv->start();
    srv_eng->start();
    const std::uint16_t port = srv->port();
    // SO_REUSEPORT spreads connections over the three listeners: every one echoes.
    std::vector<int> clients;
    for (int k = 0; k < 24; ++k) {
        const int fd = test::connect_tcp(port);
        ASSERT_GE(fd, 0);
        const std::string body = "hello " + std::to_string(k);
        std::string frame(4, '\0');
        const auto n = static_cast<std::uint32_t>(body.size() + 4);
        for (int b = 0; b < 4; ++b) frame[static_cast<std::size_t>(b)] = static_cast<char>((n >> (8 * b)) & 0xff);
        frame += body;
        ASSERT_TRUE(test::send_all(fd, frame.data(), frame.size()));
        std::string back(frame.size(), '\0');
        ASSERT_TRUE(test::recv_exact(fd, back.data(), back.size()));
        EXPECT_EQ(back, frame);
        clients.push_back(fd);
    }
    // 24 connections over three listeners: all on one has odds of 3 in 3^24, so each listener
    // (each in its own shard's table) accepted and served some.
    EXPECT_EQ(srv->stats().accepted, 24u);
    for (int fd : clients) ::close(fd);
    // The server closes its listeners on their shards; no copy elsewhere (another shard's table,
    // this thread's) keeps one listening.
    srv.reset();
    EXPECT_LT(test::connect_tcp(port, 1s), 0) << "a closed listener still accepts";
    srv_eng->stop();
    srv_eng->join();
}

TEST_P(fd_table, a_descriptor_noted_after_start_is_refused) {
    engine eng(config(GetParam(), true, 2));
    eng.start();
    EXPECT_THROW(eng.note_shard_fd(0, 0), std::logic_error);
    eng.stop();
    eng.join();
}

INSTANTIATE_TEST_SUITE_P(backends, fd_table, ::testing::Values(io_backend::epoll, io_backend::uring),
                         [](const auto& p) { return std::string(p.param == io_backend::epoll ? "epoll" : "uring"); });

}  // namespace
