// strix-example-echo as a client sees it: every frame comes back byte-exact, in order, to its own
// sender only, however the frame was cut into writes.
#include "example_process.hpp"

#include <random>

using namespace strix::test;

namespace {

TEST(echo_example, echoes_every_frame_byte_exact_and_stops_on_sigterm) {
    example_process srv("strix-example-echo", {"0"});
    auto port = srv.wait_port();
    ASSERT_TRUE(port) << "no port printed:\n" << srv.output();
    std::mt19937 rng(1);

    int fd = connect_tcp(*port);
    ASSERT_GE(fd, 0);
    // One at a time, from an empty body to near the default 64 KiB frame limit.
    for (std::size_t n : {0u, 1u, 3u, 100u, 4096u, 65000u}) {
        auto f = frame_le32(random_bytes(rng, n));
        ASSERT_TRUE(send_all(fd, f));
        EXPECT_EQ(read_frame(fd), f) << "body of " << n << " bytes";
    }

    // Pipelined: 50 frames in one write come back as the same 50, in order.
    std::vector<bytes> batch;
    bytes wire;
    for (int i = 0; i < 50; ++i) {
        batch.push_back(frame_le32(random_bytes(rng, rng() % 300)));
        append(wire, batch.back());
    }
    ASSERT_TRUE(send_all(fd, wire));
    for (std::size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(read_frame(fd), batch[i]) << "frame " << i;

    // One frame split across writes, inside the header and inside the body (TCP_NODELAY and a
    // pause make each write its own segment), with the next frame glued to its tail.
    auto split = frame_le32(random_bytes(rng, 1000));
    auto next = frame_le32(random_bytes(rng, 10));
    bytes tail(split.begin() + 700, split.end());
    append(tail, next);
    auto part = [&](std::ptrdiff_t from, std::ptrdiff_t to) { return bytes(split.begin() + from, split.begin() + to); };
    for (const auto& piece : {part(0, 1), part(1, 3), part(3, 5), part(5, 700), tail}) {
        ASSERT_TRUE(send_all(fd, piece));
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    EXPECT_EQ(read_frame(fd), split);
    EXPECT_EQ(read_frame(fd), next);
    EXPECT_TRUE(nothing_more(fd, std::chrono::milliseconds(200))) << "bytes nobody sent came back";

    // Several connections at once (spread over the shards): each hears only its own frames.
    std::vector<int> fds;
    std::vector<bytes> sent;
    for (int i = 0; i < 8; ++i) {
        fds.push_back(connect_tcp(*port));
        ASSERT_GE(fds.back(), 0);
        sent.push_back(frame_le32(random_bytes(rng, 64 + static_cast<std::size_t>(i))));
        ASSERT_TRUE(send_all(fds.back(), sent.back()));
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
        EXPECT_EQ(read_frame(fds[i]), sent[i]) << "connection " << i;
        EXPECT_TRUE(nothing_more(fds[i], std::chrono::milliseconds(50)));
        ::close(fds[i]);
    }
    ::close(fd);
    expect_clean_exit(srv);
}

TEST(echo_example, a_port_out_of_range_exits_with_one_clear_error) {
    example_process bad("strix-example-echo", {"70000"});
    int status = bad.wait_exit(std::chrono::seconds(10));
    ASSERT_NE(status, -1) << "still running with port 70000:\n" << bad.output();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << bad.output();
    EXPECT_NE(bad.output().find("strix-example-echo: port 70000"), std::string::npos) << bad.output();
}

}  // namespace
