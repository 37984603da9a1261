// The echo server as a process: SIGTERM under load, running out of descriptors, and the memory
// an idle connection costs.
#include <strix/core/asan_poison.hpp>  // STRIX_ASAN
#include <support/loopback.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <random>

using namespace strix::test;

namespace {

#if STRIX_ASAN
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif

std::vector<std::string> server_args(std::uint16_t port, std::vector<std::string> extra = {}) {
    std::vector<std::string> a{"--port", std::to_string(port), "--shards", "2"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
}

TEST(process, sigterm_under_load_exits_cleanly_within_seconds) {
    auto port = free_port();
    child srv("strix-echo-server", server_args(port), "/dev/null");
    ASSERT_TRUE(wait_listening(port));
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> echoed{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < 8; ++c) {
        clients.emplace_back([&, c] {
            int fd = connect_tcp(port, std::chrono::milliseconds(500));
            if (fd < 0) return;
            std::mt19937 rng(static_cast<unsigned>(c));
            while (!stop.load()) {
                auto f = frame_le32(random_bytes(rng, 256));
                if (!send_all(fd, f)) break;
                bytes got(f.size());
                if (!recv_exact(fd, got.data(), got.size()) || got != f) break;
                echoed.fetch_add(1);
            }
            ::close(fd);
        });
    }
    ASSERT_TRUE([&] {
        for (int i = 0; i < 500 && echoed.load() < 1000; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return echoed.load() >= 1000;
    }());
    auto t0 = std::chrono::steady_clock::now();
    srv.signal(SIGTERM);
    int status = srv.wait_exit(std::chrono::seconds(8));
    auto took = std::chrono::steady_clock::now() - t0;
    stop = true;
    for (auto& t : clients) t.join();
    ASSERT_NE(status, -1) << "server did not exit after SIGTERM";
    EXPECT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_LT(took, std::chrono::seconds(8));
}

TEST(process, running_out_of_descriptors_neither_spins_nor_crashes) {
    auto port = free_port();
    // 40 descriptors: stdio, epolls, eventfds and listeners take ~12; the rest are sessions.
    child srv("strix-echo-server", server_args(port), "/dev/null", 40);
    ASSERT_TRUE(wait_listening(port));
    // One full echo before the descriptors run out. Besides showing the server works, it matters
    // under UBSan: the first virtual call through a new (static type, dynamic type) pair takes
    // the runtime's slow path, which tests the object's memory through a pipe; with no descriptor
    // left that fails and UBSan reports a live session as having an "invalid vptr".
    {
        int fd = connect_tcp(port);
        ASSERT_GE(fd, 0);
        set_timeouts(fd, std::chrono::seconds(5));
        auto hello = frame_le32(bytes(8, std::byte{0x11}));
        ASSERT_TRUE(send_all(fd, hello));
        bytes back(hello.size());
        ASSERT_TRUE(recv_exact(fd, back.data(), back.size()));
        EXPECT_EQ(back, hello);
        ::close(fd);
    }
    std::vector<int> fds;
    for (int i = 0; i < 80; ++i) {
        int fd = connect_tcp(port, std::chrono::milliseconds(300));  // the backlog completes the handshake
        ASSERT_GE(fd, 0);
        fds.push_back(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    double cpu0 = srv.cpu_seconds();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    double cpu1 = srv.cpu_seconds();
    // A server spinning on EMFILE burns a whole core (1.0 s per second); a paused one, almost nothing.
    EXPECT_LT(cpu1 - cpu0, 0.3) << "the server spins while out of descriptors";

    // Free descriptors by closing the first half; the rest must then be accepted and served.
    // The server has fewer slots than the 40 waiting connections, so each one is closed once
    // served, making room for the next.
    for (int i = 0; i < 40; ++i) ::close(fds[static_cast<std::size_t>(i)]);
    auto f = frame_le32(bytes(16, std::byte{0x42}));
    for (int i = 40; i < 80; ++i) {
        int fd = fds[static_cast<std::size_t>(i)];
        set_timeouts(fd, std::chrono::seconds(5));
        ASSERT_TRUE(send_all(fd, f));
        bytes got(f.size());
        ASSERT_TRUE(recv_exact(fd, got.data(), got.size())) << "connection " << i << " never served";
        EXPECT_EQ(got, f);
        ::close(fd);
    }
    srv.signal(SIGTERM);
    int status = srv.wait_exit(std::chrono::seconds(8));
    ASSERT_NE(status, -1);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(process, ten_thousand_idle_connections_cost_under_16_kib_each) {
    if (sanitized) GTEST_SKIP() << "RSS under AddressSanitizer measures the sanitizer, not strix";
    raise_fd_limit();
    rlimit r{};
    ::getrlimit(RLIMIT_NOFILE, &r);
    if (r.rlim_cur < 10500) GTEST_SKIP() << "descriptor limit " << r.rlim_cur << " is below 10,500";
    auto port = free_port();
    child srv("strix-echo-server", server_args(port), "/dev/null");
    ASSERT_TRUE(wait_listening(port));
    // Warm up buffer pools and allocator arenas with a little traffic first.
    auto f = frame_le32(bytes(64, std::byte{1}));
    {
        int fd = connect_tcp(port);
        ASSERT_TRUE(send_all(fd, f));
        bytes got(f.size());
        ASSERT_TRUE(recv_exact(fd, got.data(), got.size()));
        ::close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    long before = srv.rss_kib();
    constexpr int n = 10000;
    std::vector<int> fds;
    fds.reserve(n);
    for (int i = 0; i < n; ++i) {
        int fd = connect_tcp(port);
        ASSERT_GE(fd, 0) << "connection " << i;
        fds.push_back(fd);
    }
    // Every connection exchanges one message, so each session has used its buffers once.
    for (int fd : fds) ASSERT_TRUE(send_all(fd, f));
    for (int fd : fds) {
        bytes got(f.size());
        ASSERT_TRUE(recv_exact(fd, got.data(), got.size()));
    }
    // Idle for longer than the shard's once-a-second sweep that trims idle send chains.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    long after = srv.rss_kib();
    double per_conn = static_cast<double>(after - before) * 1024.0 / n;
    std::printf("idle connections: RSS %ld KiB -> %ld KiB, %.0f bytes per connection\n", before, after, per_conn);
    EXPECT_LE(per_conn, 16.0 * 1024);
    for (int fd : fds) ::close(fd);
}

}  // namespace
