// Bad and slow peers: oversized and undersized frames, slow consumers (both policies), idle
// timeout, and the graceful stop that flushes queued output.
#include <strix/net/net_errc.hpp>

#include <support/echo_fixture.hpp>
#include <support/loopback.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <random>

using namespace strix;
using namespace strix::test;

namespace {

bytes le32(std::uint32_t v) {
    bytes b(4);
    for (int i = 0; i < 4; ++i) b[static_cast<std::size_t>(i)] = static_cast<std::byte>(v >> (8 * i));
    return b;
}

// A working echo round trip on a fresh connection: the server is still fine.
void expect_server_serves(std::uint16_t port) {
    int fd = connect_tcp(port);
    ASSERT_GE(fd, 0);
    bytes body{std::byte{1}, std::byte{2}, std::byte{3}};
    auto f = frame_le32(body);
    ASSERT_TRUE(send_all(fd, f));
    bytes got(f.size());
    ASSERT_TRUE(recv_exact(fd, got.data(), got.size()));
    EXPECT_EQ(got, f);
    ::close(fd);
}

TEST(limits, oversized_length_closes_from_the_header_alone) {
    server_config cfg;
    cfg.limits.max_frame = 4096;
    server_fixture fx(cfg);
    int fd = connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    // A 1 GiB length and no body: the server must not wait for (or allocate) the body.
    ASSERT_TRUE(send_all(fd, le32(1u << 30)));
    EXPECT_TRUE(wait_closed(fd, std::chrono::seconds(3)));
    ::close(fd);
    EXPECT_TRUE(eventually([&] { return fx.srv.stats().frame_errors == 1; }));
    // The receive buffers stay the configured size: nothing of the announced size was allocated.
    EXPECT_LE(fx.srv.stats().recv_buffers_peak, 2u);
    expect_server_serves(fx.srv.port());
}

TEST(limits, one_byte_over_the_maximum_is_rejected_and_the_maximum_accepted) {
    server_config cfg;
    cfg.limits.max_frame = 4096;
    server_fixture fx(cfg);
    int ok = connect_tcp(fx.srv.port());
    ASSERT_GE(ok, 0);
    bytes body(4092, std::byte{7});
    auto f = frame_le32(body);  // exactly 4096 bytes
    ASSERT_TRUE(send_all(ok, f));
    bytes got(f.size());
    ASSERT_TRUE(recv_exact(ok, got.data(), got.size()));
    EXPECT_EQ(got, f);
    ::close(ok);

    int bad = connect_tcp(fx.srv.port());
    ASSERT_GE(bad, 0);
    ASSERT_TRUE(send_all(bad, le32(4097)));
    EXPECT_TRUE(wait_closed(bad, std::chrono::seconds(3)));
    ::close(bad);
    EXPECT_TRUE(eventually([&] { return fx.srv.stats().frame_errors == 1; }));
}

TEST(limits, length_below_the_header_closes) {
    server_fixture fx;
    int fd = connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, le32(3)));
    EXPECT_TRUE(wait_closed(fd, std::chrono::seconds(3)));
    ::close(fd);
    EXPECT_TRUE(eventually([&] { return fx.srv.stats().frame_errors == 1; }));
    expect_server_serves(fx.srv.port());
}

TEST(limits, peer_that_never_reads_is_disconnected_while_others_keep_service) {
    server_config cfg;
    cfg.limits.high_water = 64 * 1024;
    cfg.limits.low_water = 16 * 1024;
    cfg.limits.stall_timeout = std::chrono::milliseconds(300);
    server_fixture fx(cfg, {}, 1);  // one shard: the slow peer and the good one share it

    // The small receive buffer is set before connecting (see connect_tcp).
    int slow = connect_tcp(fx.srv.port(), std::chrono::milliseconds(200), 4096);
    ASSERT_GE(slow, 0);
    std::atomic<bool> stop{false};
    std::thread blaster([&] {
        auto f = frame_le32(bytes(1000, std::byte{0x5a}));
        // Send timeouts (200 ms) end each blocked send; keep going until told to stop. A send cut
        // short by the timeout is finished before the next frame starts, so the stream stays framed.
        while (!stop.load()) {
            std::size_t off = 0;
            while (off < f.size() && !stop.load()) {
                const auto r = ::send(slow, f.data() + off, f.size() - off, MSG_NOSIGNAL);
                if (r > 0)
                    off += static_cast<std::size_t>(r);
                else if (errno != EAGAIN && errno != EWOULDBLOCK)
                    return;
            }
        }
    });

    int good = connect_tcp(fx.srv.port());
    ASSERT_GE(good, 0);
    std::mt19937 rng(9);
    for (int i = 0; i < 300; ++i) {
        auto f = frame_le32(random_bytes(rng, 64));
        ASSERT_TRUE(send_all(good, f));
        bytes got(f.size());
        ASSERT_TRUE(recv_exact(good, got.data(), got.size())) << "round trip " << i;
        ASSERT_EQ(got, f);
    }
    EXPECT_TRUE(eventually([&] { return fx.srv.stats().slow_consumers == 1; }, std::chrono::seconds(5)));
    EXPECT_GE(fx.srv.stats().read_pauses, 1u);
    stop = true;
    blaster.join();
    ::close(slow);
    ::close(good);
}

// Output the peer did not ask for (a broadcast, say) piles up past the hard limit.
class flood_handler : public session_handler {
public:
    void on_frame(session& s, std::span<const std::byte>) override {
        auto block = shared_buffer::create(32 * 1024);
        std::memset(block->data(), 0x33, block->size());
        for (int i = 0; i < 64 && s.is_open(); ++i) s.send(block);  // 2 MiB per request
    }
};

TEST(limits, queued_output_above_the_hard_limit_disconnects) {
    server_config cfg;
    cfg.limits.max_queued = 512 * 1024;
    server_fixture fx(cfg, [](shard&) { return std::make_unique<flood_handler>(); });
    int fd = connect_tcp(fx.srv.port(), std::chrono::seconds(5), 4096);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, frame_le32(bytes(1, std::byte{1}))));
    EXPECT_TRUE(wait_closed(fd, std::chrono::seconds(5)));
    ::close(fd);
    EXPECT_TRUE(eventually([&] { return fx.srv.stats().slow_consumers == 1; }));
}

TEST(limits, idle_peer_is_closed_and_active_peer_is_not) {
    server_config cfg;
    cfg.limits.idle_timeout = std::chrono::milliseconds(200);
    server_fixture fx(cfg);
    int idle = connect_tcp(fx.srv.port());
    int active = connect_tcp(fx.srv.port());
    ASSERT_GE(idle, 0);
    ASSERT_GE(active, 0);
    auto start = std::chrono::steady_clock::now();
    auto f = frame_le32(bytes(8, std::byte{9}));
    // Keep `active` busy for 3x the timeout.
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(600)) {
        ASSERT_TRUE(send_all(active, f));
        bytes got(f.size());
        ASSERT_TRUE(recv_exact(active, got.data(), got.size()));
        std::this_thread::sleep_for(std::chrono::milliseconds(40));
    }
    EXPECT_TRUE(wait_closed(idle, std::chrono::seconds(2)));
    EXPECT_EQ(fx.srv.stats().idle_timeouts, 1u);
    // The active one is still served.
    ASSERT_TRUE(send_all(active, f));
    bytes got(f.size());
    EXPECT_TRUE(recv_exact(active, got.data(), got.size()));
    ::close(idle);
    ::close(active);
}

// Queues 2 MiB of patterned output per request.
class bulk_handler : public session_handler {
public:
    void on_frame(session& s, std::span<const std::byte>) override {
        for (int i = 0; i < 64; ++i) {
            bytes chunk(32 * 1024, static_cast<std::byte>(i));
            s.send(chunk);
        }
    }
};

TEST(limits, graceful_stop_flushes_queued_output_before_closing) {
    server_config cfg;
    cfg.limits.max_queued = 4 * 1024 * 1024;
    server_fixture fx(cfg, [](shard&) { return std::make_unique<bulk_handler>(); });
    int fd = connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, frame_le32(bytes(1, std::byte{1}))));
    // Let the server queue its answer, then stop it while nearly all of it is still queued.
    ASSERT_TRUE(eventually([&] { return fx.srv.stats().sends == 64; }));
    fx.eng.stop();
    bytes got(64 * 32 * 1024);
    ASSERT_TRUE(recv_exact(fd, got.data(), got.size()));
    for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], static_cast<std::byte>(i / (32 * 1024))) << "byte " << i;
    EXPECT_TRUE(wait_closed(fd, std::chrono::seconds(5)));
    ::close(fd);
    fx.eng.join();
}

}  // namespace
