// Echo through the public server API over loopback: content, order, splits, many connections,
// Unix sockets.
#include <support/echo_fixture.hpp>
#include <support/loopback.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

using namespace strix;
using namespace strix::test;

namespace {

// Sends `stream` in pieces whose sizes come from `next_piece`, then reads the same number of
// bytes back and returns them.
bytes echo_in_pieces(int fd, const bytes& stream, const std::function<std::size_t()>& next_piece) {
    // Reader thread: the echo may come back while we are still sending.
    bytes got(stream.size());
    bool ok = true;
    std::thread reader([&] { ok = recv_exact(fd, got.data(), got.size()); });
    std::size_t off = 0;
    while (off < stream.size()) {
        std::size_t n = std::min(next_piece(), stream.size() - off);
        if (!send_all(fd, stream.data() + off, n)) break;
        off += n;
    }
    reader.join();
    if (!ok) got.clear();
    return got;
}

bytes random_stream(std::mt19937& rng, int messages, std::size_t max_body) {
    bytes stream;
    std::uniform_int_distribution<std::size_t> size(0, max_body);
    for (int i = 0; i < messages; ++i) {
        auto f = frame_le32(random_bytes(rng, size(rng)));
        append(stream, f);
    }
    return stream;
}

TEST(echo, random_sizes_in_one_write_come_back_identical) {
    server_fixture fx;
    std::mt19937 rng(1);
    auto stream = random_stream(rng, 500, 3000);
    int fd = connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    auto got = echo_in_pieces(fd, stream, [&] { return stream.size(); });
    EXPECT_EQ(got, stream);
    ::close(fd);
    EXPECT_TRUE(eventually([&] { return fx.srv.stats().frames_in == 500; }));
}

TEST(echo, one_byte_at_a_time) {
    server_fixture fx;
    std::mt19937 rng(2);
    auto stream = random_stream(rng, 40, 64);
    int fd = connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    auto got = echo_in_pieces(fd, stream, [] { return std::size_t{1}; });
    EXPECT_EQ(got, stream);
    ::close(fd);
}

// Two reads per stream, split at every offset: the first ends inside a header, inside a body or
// between frames. With io_uring, whole frames are used from the backend's buffer and the ring
// only completes a frame started in the read before (session::received_in_place): every split
// must echo the same bytes and count every frame and byte once.
TEST(echo, a_stream_split_in_two_reads_at_every_offset) {
    server_fixture fx;
    std::mt19937 rng(4);
    bytes stream;
    for (std::size_t body : {std::size_t{1}, std::size_t{200}, std::size_t{0}, std::size_t{50}})
        append(stream, frame_le32(random_bytes(rng, body)));
    int fd = connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    std::uint64_t splits = 0;
    for (std::size_t k = 1; k < stream.size(); ++k) {
        ASSERT_TRUE(send_all(fd, stream.data(), k));
        // Long enough for the server to read the first piece on its own.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        ASSERT_TRUE(send_all(fd, stream.data() + k, stream.size() - k));
        bytes got(stream.size());
        ASSERT_TRUE(recv_exact(fd, got.data(), got.size())) << "split at " << k;
        ASSERT_EQ(got, stream) << "split at " << k;
        ++splits;
    }
    ::close(fd);
    EXPECT_TRUE(eventually([&] { return fx.srv.stats().frames_in == 4 * splits; }));
    EXPECT_EQ(fx.srv.stats().frames_in, 4 * splits);
    EXPECT_EQ(fx.srv.stats().bytes_in, splits * stream.size());
}

TEST(echo, random_read_splits_including_frames_larger_than_half_the_ring) {
    server_config cfg;
    cfg.limits.max_frame = 64 * 1024;
    server_fixture fx(cfg);
    std::mt19937 rng(3);
    auto stream = random_stream(rng, 200, 40000);  // frames straddle the ring's end often
    int fd = connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    std::uniform_int_distribution<std::size_t> piece(1, 9000);
    auto got = echo_in_pieces(fd, stream, [&] { return piece(rng); });
    EXPECT_EQ(got, stream);
    ::close(fd);
}

// A frame that ends exactly at the ring's end, with the next frame already wrapped to its start:
// the wrapped frame is handled at once, not when more bytes arrive. A client that then waits for
// the answer (every request/response protocol) used to wait until the frame timeout. The layout
// is forced with a 4 KiB ring: the first write leaves a partial frame at [2000, 3000), the second
// completes it at exactly 4096 and puts a whole frame at [0, 100).
TEST(echo, a_frame_wrapped_after_one_that_ends_at_the_rings_end_is_handled_without_more_bytes) {
    server_config cfg;
    cfg.limits.recv_buffer = 4096;
    cfg.limits.max_frame = 4096;
    server_fixture fx(cfg);
    std::mt19937 rng(4);
    const bytes a = frame_le32(random_bytes(rng, 1996));  // 2000 bytes
    const bytes b = frame_le32(random_bytes(rng, 2092));  // 2096: from 2000 to the ring's end
    const bytes c = frame_le32(random_bytes(rng, 96));    // 100: wraps to offset 0
    int fd = connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    set_timeouts(fd, std::chrono::seconds(3));
    bytes first = a;
    first.insert(first.end(), b.begin(), b.begin() + 1000);
    ASSERT_TRUE(send_all(fd, first));
    bytes got(a.size());
    ASSERT_TRUE(recv_exact(fd, got.data(), got.size())) << "no echo of the first frame";
    EXPECT_EQ(got, a);
    bytes second(b.begin() + 1000, b.end());
    append(second, c);
    ASSERT_TRUE(send_all(fd, second));
    bytes want = b;
    append(want, c);
    got.assign(want.size(), std::byte{0});
    EXPECT_TRUE(recv_exact(fd, got.data(), got.size())) << "the wrapped frame waited for more bytes";
    EXPECT_EQ(got, want);
    ::close(fd);
}

TEST(echo, thousand_concurrent_connections_each_get_their_own_messages) {
    raise_fd_limit();
    server_fixture fx;
    constexpr int n = 1000;
    std::vector<int> fds;
    for (int i = 0; i < n; ++i) {
        int fd = connect_tcp(fx.srv.port());
        ASSERT_GE(fd, 0) << "connection " << i;
        fds.push_back(fd);
    }
    // Each connection sends 5 messages naming itself; all sends first, then all reads.
    std::vector<bytes> sent(n);
    for (int i = 0; i < n; ++i) {
        for (int k = 0; k < 5; ++k) {
            std::string body = "conn " + std::to_string(i) + " msg " + std::to_string(k);
            bytes b(body.size());
            std::memcpy(b.data(), body.data(), body.size());
            auto f = frame_le32(b);
            append(sent[static_cast<std::size_t>(i)], f);
        }
        ASSERT_TRUE(send_all(fds[static_cast<std::size_t>(i)], sent[static_cast<std::size_t>(i)]));
    }
    for (int i = 0; i < n; ++i) {
        bytes got(sent[static_cast<std::size_t>(i)].size());
        ASSERT_TRUE(recv_exact(fds[static_cast<std::size_t>(i)], got.data(), got.size())) << "connection " << i;
        EXPECT_EQ(got, sent[static_cast<std::size_t>(i)]) << "connection " << i;
    }
    EXPECT_TRUE(eventually([&] { return fx.srv.stats().active == n; }));
    EXPECT_EQ(fx.srv.stats().frames_in, 5u * n);
    for (int fd : fds) ::close(fd);
    EXPECT_TRUE(eventually([&] { return fx.srv.stats().active == 0; }));
    EXPECT_EQ(fx.srv.stats().accepted, static_cast<std::uint64_t>(n));
}

TEST(echo, sends_of_one_turn_are_coalesced_into_few_writes) {
    server_fixture fx({}, {}, 1);
    int fd = connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    // 2,000 eight-byte messages in one write: the server reads them in one or a few reads and
    // must answer with about as many writes, not 2,000.
    bytes stream;
    std::mt19937 rng(4);
    for (int i = 0; i < 2000; ++i) {
        auto f = frame_le32(random_bytes(rng, 8));
        append(stream, f);
    }
    ASSERT_TRUE(send_all(fd, stream));
    bytes got(stream.size());
    ASSERT_TRUE(recv_exact(fd, got.data(), got.size()));
    EXPECT_EQ(got, stream);
    auto st = fx.srv.stats();
    EXPECT_EQ(st.sends, 2000u);
    EXPECT_LE(st.writes, st.reads + 2) << "one gather write per read turn at most (plus partial writes)";
    EXPECT_LT(st.writes, 100u);
    ::close(fd);
}

TEST(echo, unix_socket_runs_the_same_session_code) {
    server_config cfg;
    cfg.tcp = false;
    cfg.unix_path = "/tmp/strix-echo-test-" + std::to_string(::getpid()) + ".sock";
    server_fixture fx(cfg);
    std::mt19937 rng(5);
    // Several connections so the round-robin hand-off reaches every shard.
    for (int c = 0; c < 4; ++c) {
        int fd = -1;
        ASSERT_TRUE(eventually([&] { return (fd = connect_unix(cfg.unix_path)) >= 0; }));
        auto stream = random_stream(rng, 100, 500);
        auto got = echo_in_pieces(fd, stream, [&] { return std::size_t{777}; });
        EXPECT_EQ(got, stream);
        ::close(fd);
    }
    EXPECT_EQ(fx.srv.stats().frames_in, 400u);
    ::unlink(cfg.unix_path.c_str());
}

// The session asks for write readiness only after a write hits a full socket buffer. A peer that
// reads nothing until the server's output has backed up (reading paused at the high-water mark)
// must still get every byte, in order, once it starts reading: the server's writes stopped,
// EPOLLOUT was registered, and its edge resumes them. Over TCP and over a Unix socket, whose
// write-space wakeups differ. 16 MiB: more than the kernel buffers both ways can hold, so the
// output must back up into the session whatever the socket buffers autotune to.
TEST(echo, a_peer_that_starts_reading_late_gets_every_byte_over_tcp_and_unix) {
    for (bool unix_socket : {false, true}) {
        SCOPED_TRACE(unix_socket ? "unix" : "tcp");
        server_config cfg;
        cfg.tcp = !unix_socket;
        if (unix_socket) cfg.unix_path = "/tmp/strix-echo-late-" + std::to_string(::getpid()) + ".sock";
        server_fixture fx(cfg, {}, 1);
        int fd = -1;
        if (unix_socket)
            ASSERT_TRUE(eventually([&] { return (fd = connect_unix(cfg.unix_path)) >= 0; }));
        else
            fd = connect_tcp(fx.srv.port());
        ASSERT_GE(fd, 0);
        std::mt19937 rng(11);
        bytes stream;
        const auto body = random_bytes(rng, 1000);
        for (int i = 0; i < 16000; ++i) append(stream, frame_le32(body));
        bytes got(stream.size());
        bool ok = true, backed_up = false;
        std::thread reader([&] {
            backed_up = eventually([&] { return fx.srv.stats().read_pauses > 0; }, std::chrono::seconds(20));
            ok = recv_exact(fd, got.data(), got.size());
        });
        const bool sent = send_all(fd, stream.data(), stream.size());
        reader.join();
        EXPECT_TRUE(backed_up) << "the server's output never backed up to its high-water mark";
        EXPECT_TRUE(sent);
        EXPECT_TRUE(ok);
        EXPECT_TRUE(got == stream) << "echo differs from what was sent";
        EXPECT_EQ(fx.srv.stats().frames_in, 16000u);
        ::close(fd);
        if (unix_socket) ::unlink(cfg.unix_path.c_str());
    }
}

}  // namespace

// Output a read's frames made that reaches session_limits::flush_bytes is sent mid-turn, the rest
// at the turn's end: the two must interleave without reordering or losing a byte, also when the
// peer reads slowly (partial writes, io_uring's one send in flight, reading paused at high water).
// flush_bytes 1 sends after every read's frames, 0 never mid-turn, 4096 mixes both.
TEST(echo, output_sent_mid_turn_and_at_the_turns_end_keeps_its_order) {
    for (std::size_t flush_bytes : {std::size_t{1}, std::size_t{4096}, std::size_t{0}}) {
        for (bool slow_reader : {false, true}) {
            SCOPED_TRACE("flush_bytes " + std::to_string(flush_bytes) + (slow_reader ? ", slow reader" : ""));
            server_config cfg;
            cfg.limits.flush_bytes = flush_bytes;
            server_fixture fx(cfg, {}, 1);
            std::mt19937 rng(static_cast<unsigned>(17 + flush_bytes));
            bytes stream;
            std::uniform_int_distribution<std::size_t> size(0, 3000);
            for (int i = 0; i < 3000; ++i) append(stream, frame_le32(random_bytes(rng, size(rng))));
            int fd = connect_tcp(fx.srv.port());
            ASSERT_GE(fd, 0);
            bytes got(stream.size());
            bool ok = true;
            std::thread reader([&] {
                if (slow_reader) std::this_thread::sleep_for(std::chrono::milliseconds(300));
                ok = recv_exact(fd, got.data(), got.size());
            });
            std::uniform_int_distribution<std::size_t> piece(1, 200000);
            std::size_t off = 0;
            bool sent = true;
            while (off < stream.size() && sent) {
                const std::size_t n = std::min(piece(rng), stream.size() - off);
                sent = send_all(fd, stream.data() + off, n);
                off += n;
            }
            reader.join();
            EXPECT_TRUE(sent);
            EXPECT_TRUE(ok);
            EXPECT_TRUE(got == stream) << "echo differs from what was sent";
            EXPECT_EQ(fx.srv.stats().frames_in, 3000u);
            ::close(fd);
        }
    }
}
