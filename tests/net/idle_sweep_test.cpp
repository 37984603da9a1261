// The once-a-second idle sweep looks at the sessions that were active, not at every open one: idle
// sessions that hold nothing cost it nothing, however many there are.
#include <support/echo_fixture.hpp>
#include <support/loopback.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

using namespace strix;
using namespace strix::test;

namespace {

// Connects n clients and has each echo one frame, so every session has used its buffers.
std::vector<int> open_and_echo(std::uint16_t port, int n) {
    std::vector<int> fds;
    const auto f = frame_le32(bytes(32, std::byte{5}));
    for (int i = 0; i < n; ++i) {
        int fd = connect_tcp(port);
        EXPECT_GE(fd, 0) << "connection " << i;
        if (fd < 0) break;
        set_timeouts(fd, std::chrono::seconds(5));
        fds.push_back(fd);
    }
    for (int fd : fds) EXPECT_TRUE(send_all(fd, f));
    for (int fd : fds) {
        bytes got(f.size());
        EXPECT_TRUE(recv_exact(fd, got.data(), got.size()));
        EXPECT_EQ(got, f);
    }
    return fds;
}

// Sessions the sweeps looked at over `span` (the counter sums every shard's sweeps).
std::uint64_t looked_over(server_fixture& fx, std::chrono::milliseconds span) {
    const std::uint64_t before = fx.srv.stats().sweep_looked;
    std::this_thread::sleep_for(span);
    return fx.srv.stats().sweep_looked - before;
}

TEST(idle_sweep, idle_sessions_leave_the_list_and_the_sweep_touches_only_the_active) {
    server_fixture fx;
    auto fds = open_and_echo(fx.srv.port(), 400);
    ASSERT_EQ(fds.size(), 400u);
    // A second of quiet trims them (their rings go back) and takes them off the list.
    auto settled = [&] { return fx.srv.stats().recv_buffers_in_use == 0 && fx.srv.stats().sweep_listed == 0; };
    ASSERT_TRUE(eventually(settled, std::chrono::seconds(5)));
    EXPECT_EQ(fx.srv.stats().active, 400u);
    // 400 open and idle: the sweeps of the next 2.5 s (2 shards, 2-3 each) look at none of them.
    EXPECT_EQ(looked_over(fx, std::chrono::milliseconds(2500)), 0u);

    // Ten of them talk: the sweeps look at those ten (each for as long as it is active, plus the
    // sweep that settles it), never at the 390 that stay quiet.
    const auto f = frame_le32(bytes(16, std::byte{9}));
    const std::uint64_t before = fx.srv.stats().sweep_looked;
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 10; ++i) {
            ASSERT_TRUE(send_all(fds[static_cast<std::size_t>(i)], f));
            bytes got(f.size());
            ASSERT_TRUE(recv_exact(fds[static_cast<std::size_t>(i)], got.data(), got.size()));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    ASSERT_TRUE(eventually(settled, std::chrono::seconds(5)));
    const std::uint64_t looked = fx.srv.stats().sweep_looked - before;
    EXPECT_GE(looked, 10u);                // each active one was looked at, at least to settle it
    EXPECT_LE(looked, 10u * 6);            // ~1.5 s of activity and ~1-2 s to settle: a few sweeps each
    for (int fd : fds) ::close(fd);
}

TEST(idle_sweep, a_session_with_output_queued_stays_listed_and_is_sampled) {
    server_config cfg;
    cfg.limits.max_queued = 64u << 20;
    server_fixture fx(cfg);
    int fd = connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    // A client that sends much and reads nothing: its echoes queue on the server.
    set_timeouts(fd, std::chrono::seconds(1));  // the server stops reading at its high water
    int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    const auto f = frame_le32(bytes(60000, std::byte{3}));
    for (int i = 0; i < 100; ++i)
        if (!send_all(fd, f)) break;
    ASSERT_TRUE(eventually([&] { return fx.srv.stats().send_queued_bytes > 0; }, std::chrono::seconds(5)));
    EXPECT_EQ(fx.srv.stats().send_queues_in_use, 1u);
    EXPECT_GE(fx.srv.stats().sweep_listed, 1u);
    EXPECT_GE(fx.srv.stats().send_queues_peak, 1u);
    ::close(fd);
    ASSERT_TRUE(eventually([&] { return fx.srv.stats().sweep_listed == 0; }, std::chrono::seconds(5)));
    EXPECT_EQ(fx.srv.stats().send_queued_bytes, 0u);
}

// Shard k of n sweeps at k / n of the second: sweeps that all started with the server ran as one
// convoy each second, every shard's list in turn, and with more shards than CPUs nothing else ran
// until the last had finished. Each of four shards gets a session that reads at one instant; each
// ring goes back at that shard's first sweep a second later, so the four returns are spread over
// the second (0.75 s from first to last), where sweeps in step return them all within a few ms.
TEST(idle_sweep, the_shards_sweep_at_phases_spread_over_the_second) {
    constexpr unsigned shards = 4;
    server_fixture fx({}, {}, shards);
    std::vector<int> fds;
    auto rings = [&](unsigned i) { return fx.srv.group(i).counters().recv_buffers_in_use.value(); };
    auto each_has_one = [&] {
        for (unsigned i = 0; i < shards; ++i)
            if (fx.srv.group(i).counters().active.value() == 0) return false;
        return true;
    };
    while (!each_has_one() && fds.size() < 64) {
        int fd = connect_tcp(fx.srv.port());
        ASSERT_GE(fd, 0);
        set_timeouts(fd, std::chrono::seconds(5));
        fds.push_back(fd);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_TRUE(eventually(each_has_one, std::chrono::seconds(5))) << fds.size() << " connections, a shard has none";
    ASSERT_TRUE(eventually([&] { return fx.srv.stats().recv_buffers_in_use == 0; }, std::chrono::seconds(5)));
    // Every session reads at once: each takes a ring its shard's sweep returns a second later.
    const auto f = frame_le32(bytes(16, std::byte{7}));
    for (int fd : fds) ASSERT_TRUE(send_all(fd, f));
    for (int fd : fds) {
        bytes got(f.size());
        ASSERT_TRUE(recv_exact(fd, got.data(), got.size()));
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::chrono::milliseconds> returned(shards, std::chrono::milliseconds(-1));
    for (unsigned i = 0; i < shards; ++i) ASSERT_GT(rings(i), 0u) << "shard " << i;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(4)) {
        bool all = true;
        for (unsigned i = 0; i < shards; ++i) {
            if (returned[i].count() < 0 && rings(i) == 0)
                returned[i] =
                    std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
            all = all && returned[i].count() >= 0;
        }
        if (all) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::string when;
    for (unsigned i = 0; i < shards; ++i) {
        ASSERT_GE(returned[i].count(), 0) << "shard " << i << " kept its ring past 4 s";
        when += " " + std::to_string(returned[i].count()) + " ms";
    }
    const auto [first, last] = std::minmax_element(returned.begin(), returned.end());
    // Phases 0, 1/4, 2/4, 3/4 of the second: 750 ms from first to last (less whatever a busy machine
    // delays a sweep by); in step, a few ms.
    EXPECT_GE((*last - *first).count(), 400) << "rings returned at" << when;
    for (int fd : fds) ::close(fd);
}

}  // namespace
