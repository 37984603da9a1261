// Deadlines and caps against hostile peers: a frame whose bytes trickle in is closed by
// frame_timeout although every read resets the idle timeout; a peer that never completes the
// application's handshake is closed by handshake_timeout; a server's max_sessions and
// max_sessions_per_address refuse connections at accept (and admit again once some close).
#include <strix/net/admission.hpp>
#include <strix/net/net_errc.hpp>

#include <support/echo_fixture.hpp>
#include <support/loopback.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

using namespace strix;
using namespace strix::test;
using namespace std::chrono_literals;

namespace {

// A connection the server must refuse at accept. The kernel completes the handshake, so
// connect() normally succeeds and the server's close shows as EOF or a reset; but the server
// may accept and reset the connection before the connecting thread returns from connect(),
// which then fails with ECONNRESET. Both are a refusal; anything else is not.
::testing::AssertionResult refused_at_accept(const char* from, std::uint16_t port) {
    const int fd = connect_from(from, port);
    if (fd == -ECONNRESET) return ::testing::AssertionSuccess() << "reset during connect()";
    if (fd < 0) return ::testing::AssertionFailure() << "connect from " << from << ": " << std::strerror(-fd);
    const bool closed = wait_closed(fd, 2s);
    ::close(fd);
    if (closed) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "the connection from " << from << " was kept";
}

bool echoes(int fd, std::uint8_t tag = 1) {
    auto f = frame_le32(bytes(5, std::byte{tag}));
    if (!send_all(fd, f)) return false;
    bytes got(f.size());
    return recv_exact(fd, got.data(), got.size()) && got == f;
}

// Records every close reason; echoes frames; optionally completes the handshake on the first
// frame and answers protocol errors with one byte.
class recording_echo : public session_handler {
public:
    struct log {
        std::mutex mu;
        std::vector<std::error_code> closes, protocol_errors;
    };
    explicit recording_echo(log& l, bool handshake_on_frame = false) : log_(l), handshake_(handshake_on_frame) {}
    void on_frame(session& s, std::span<const std::byte> f) override {
        if (handshake_) s.handshake_done();
        s.send(f);
    }
    void on_protocol_error(session& s, std::error_code ec) override {
        {
            std::lock_guard g(log_.mu);
            log_.protocol_errors.push_back(ec);
        }
        const std::byte why{0xEE};
        s.send(std::span(&why, 1));  // flushed before the close
    }
    void on_close(session&, std::error_code ec) override {
        std::lock_guard g(log_.mu);
        log_.closes.push_back(ec);
    }

private:
    log& log_;
    bool handshake_;
};

std::size_t count_of(recording_echo::log& l, std::vector<std::error_code> recording_echo::log::*which, net_errc e) {
    std::lock_guard g(l.mu);
    std::size_t n = 0;
    for (auto& ec : l.*which) n += ec == make_error_code(e) ? 1 : 0;
    return n;
}

TEST(timeouts, a_trickled_frame_is_closed_by_frame_timeout_although_reads_reset_idle) {
    recording_echo::log rec;
    server_config cfg;
    cfg.limits.idle_timeout = 600ms;   // every trickled byte resets this one
    cfg.limits.frame_timeout = 1000ms; // this one runs from the frame's first byte
    server_fixture fx(cfg, [&](shard&) { return std::make_unique<recording_echo>(rec); });
    int fd = connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    // A 64-byte frame, one byte every 200 ms: it would take 12.8 s to complete.
    auto f = frame_le32(bytes(60, std::byte{7}));
    const auto start = std::chrono::steady_clock::now();
    bool closed = false;
    for (std::size_t i = 0; i < f.size() && !closed; ++i) {
        if (::send(fd, &f[i], 1, MSG_NOSIGNAL) != 1) break;
        closed = wait_closed(fd, 200ms);
    }
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_TRUE(closed || wait_closed(fd, 2s)) << "the trickle was not cut";
    EXPECT_GE(took, 900ms) << "closed before the frame timeout";
    EXPECT_LT(took, 2500ms) << "frame timeout is 1 s from the first byte";
    ::close(fd);
    EXPECT_TRUE(eventually([&] { return fx.srv.stats().frame_timeouts == 1; }));
    EXPECT_EQ(fx.srv.stats().idle_timeouts, 0u) << "the trickle kept the idle timeout from firing";
    EXPECT_EQ(fx.srv.stats().frame_errors, 0u);
    EXPECT_TRUE(eventually([&] { return count_of(rec, &recording_echo::log::closes, net_errc::frame_timeout) == 1; }));
    EXPECT_EQ(count_of(rec, &recording_echo::log::protocol_errors, net_errc::frame_timeout), 1u);
}

TEST(timeouts, the_handler_may_answer_a_frame_timeout_before_the_close) {
    recording_echo::log rec;
    server_config cfg;
    cfg.limits.frame_timeout = 300ms;
    server_fixture fx(cfg, [&](shard&) { return std::make_unique<recording_echo>(rec); });
    int fd = connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    auto f = frame_le32(bytes(10, std::byte{1}));
    ASSERT_TRUE(send_all(fd, f.data(), 3));  // a header fragment, then nothing
    std::byte got{};
    ASSERT_TRUE(recv_exact(fd, &got, 1)) << "on_protocol_error's reply was not flushed";
    EXPECT_EQ(got, std::byte{0xEE});
    EXPECT_TRUE(wait_closed(fd, 2s));
    ::close(fd);
}

TEST(timeouts, frames_completed_in_time_keep_the_connection_open_however_long_it_lives) {
    server_config cfg;
    cfg.limits.frame_timeout = 300ms;
    server_fixture fx(cfg);
    int fd = connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    // 1.5 s (5x the frame timeout) of frames, each split in two halves 100 ms apart, plus a
    // batch that leaves a partial frame behind completed frames: the new frame's clock starts at
    // its own first byte, not at the first byte of the batch.
    const auto start = std::chrono::steady_clock::now();
    std::uint8_t tag = 0;
    while (std::chrono::steady_clock::now() - start < 1500ms) {
        auto f = frame_le32(bytes(20, std::byte{++tag}));
        ASSERT_TRUE(send_all(fd, f.data(), 9));
        std::this_thread::sleep_for(100ms);
        ASSERT_TRUE(send_all(fd, f.data() + 9, f.size() - 9));
        bytes got(f.size());
        ASSERT_TRUE(recv_exact(fd, got.data(), got.size())) << "frame " << int(tag);
        ASSERT_EQ(got, f);
    }
    for (int round = 0; round < 6; ++round) {
        auto a = frame_le32(bytes(20, std::byte{0xA0}));
        auto b = frame_le32(bytes(20, std::byte{0xB0}));
        bytes batch = a;
        append(batch, bytes(b.begin(), b.begin() + 10));
        ASSERT_TRUE(send_all(fd, batch));
        std::this_thread::sleep_for(200ms);  // b's first byte came 200 ms ago: 100 ms left
        ASSERT_TRUE(send_all(fd, b.data() + 10, b.size() - 10));
        bytes got(a.size() + b.size());
        ASSERT_TRUE(recv_exact(fd, got.data(), got.size())) << "round " << round;
    }
    EXPECT_EQ(fx.srv.stats().frame_timeouts, 0u);
    ::close(fd);
}

// Suspends reading after the first frame and resumes from another thread `pause` later.
class suspending_echo : public session_handler {
public:
    suspending_echo(engine& e, std::chrono::milliseconds pause) : eng_(e), pause_(pause) {}
    ~suspending_echo() override {
        for (auto& t : threads_) t.join();
    }
    void on_frame(session& s, std::span<const std::byte> f) override {
        s.send(f);
        if (done_) return;
        done_ = true;
        s.suspend_reading(true);
        session_ptr keep(&s);
        const unsigned shard_id = s.owner().id();
        threads_.emplace_back([this, keep, shard_id] {
            std::this_thread::sleep_for(pause_);
            eng_.post(shard_id, [keep] { keep->suspend_reading(false); });
        });
    }

private:
    engine& eng_;
    std::chrono::milliseconds pause_;
    bool done_ = false;
    std::vector<std::thread> threads_;
};

TEST(timeouts, time_with_reading_suspended_does_not_count_against_a_frame) {
    server_config cfg;
    cfg.limits.frame_timeout = 300ms;
    engine_config ecfg;
    ecfg.shards = 1;
    ecfg.pin_threads = false;
    engine eng(ecfg);
    {
        server srv(eng, cfg, [&](shard&) { return std::make_unique<suspending_echo>(eng, 1000ms); });
        srv.start();
        eng.start();
        int fd = connect_tcp(srv.port());
        ASSERT_GE(fd, 0);
        // One frame and half of the next in one write: the half waits in the ring while the
        // application keeps reading suspended for 1 s (3x the frame timeout).
        auto a = frame_le32(bytes(20, std::byte{1}));
        auto b = frame_le32(bytes(20, std::byte{2}));
        bytes batch = a;
        append(batch, bytes(b.begin(), b.begin() + 10));
        ASSERT_TRUE(send_all(fd, batch));
        bytes got(a.size());
        ASSERT_TRUE(recv_exact(fd, got.data(), got.size()));
        std::this_thread::sleep_for(1100ms);  // resumed by now; the half frame gets a fresh 300 ms
        ASSERT_TRUE(send_all(fd, b.data() + 10, b.size() - 10));
        bytes got_b(b.size());
        ASSERT_TRUE(recv_exact(fd, got_b.data(), got_b.size())) << "closed while reading was suspended";
        EXPECT_EQ(got_b, b);
        EXPECT_EQ(srv.stats().frame_timeouts, 0u);
        ::close(fd);
    }
    eng.stop();
    eng.join();
}

TEST(timeouts, a_session_that_never_completes_its_handshake_is_closed_and_one_that_does_is_not) {
    recording_echo::log rec;
    server_config cfg;
    cfg.limits.handshake_timeout = 500ms;
    server_fixture fx(cfg, [&](shard&) { return std::make_unique<recording_echo>(rec, true); });
    int silent = connect_tcp(fx.srv.port());
    int greeter = connect_tcp(fx.srv.port());
    ASSERT_GE(silent, 0);
    ASSERT_GE(greeter, 0);
    ASSERT_TRUE(echoes(greeter));  // the handler calls handshake_done() on the first frame
    const auto start = std::chrono::steady_clock::now();
    std::byte why{};
    ASSERT_TRUE(recv_exact(silent, &why, 1)) << "on_protocol_error's reply was not flushed";
    EXPECT_EQ(why, std::byte{0xEE});
    EXPECT_TRUE(wait_closed(silent, 2s));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
    std::this_thread::sleep_for(600ms);  // past the greeter's deadline too
    EXPECT_TRUE(echoes(greeter, 2)) << "a session that finished its handshake was closed";
    EXPECT_EQ(fx.srv.stats().handshake_timeouts, 1u);
    EXPECT_EQ(count_of(rec, &recording_echo::log::protocol_errors, net_errc::handshake_timeout), 1u);
    EXPECT_TRUE(
        eventually([&] { return count_of(rec, &recording_echo::log::closes, net_errc::handshake_timeout) == 1; }));
    ::close(silent);
    ::close(greeter);
}

TEST(caps, connections_over_the_per_address_and_total_caps_are_refused_at_accept) {
    raise_fd_limit();
    server_config cfg;
    cfg.max_sessions = 5;
    cfg.max_sessions_per_address = 3;
    server_fixture fx(cfg);
    std::vector<int> a, b;
    for (int i = 0; i < 3; ++i) a.push_back(connect_from("127.0.0.1", fx.srv.port()));
    for (int fd : a) ASSERT_TRUE(echoes(fd));
    EXPECT_TRUE(refused_at_accept("127.0.0.1", fx.srv.port())) << "a 4th connection from one address";
    EXPECT_TRUE(eventually([&] { return fx.srv.stats().refused_per_address == 1; }));
    // Another address still gets in, up to the total.
    for (int i = 0; i < 2; ++i) b.push_back(connect_from("127.0.0.2", fx.srv.port()));
    for (int fd : b) ASSERT_TRUE(echoes(fd));
    EXPECT_TRUE(refused_at_accept("127.0.0.3", fx.srv.port())) << "a 6th connection";
    EXPECT_TRUE(eventually([&] { return fx.srv.stats().refused_max_sessions == 1; }));
    ASSERT_NE(fx.srv.caps(), nullptr);
    EXPECT_EQ(fx.srv.caps()->sessions(), 5u);
    EXPECT_EQ(fx.srv.caps()->sessions_from("127.0.0.1:1"), 3u);
    // Closing gives the places back.
    ::close(a[0]);
    a.erase(a.begin());
    EXPECT_TRUE(eventually([&] { return fx.srv.caps()->sessions() == 4; }));
    int again = connect_from("127.0.0.1", fx.srv.port());
    ASSERT_GE(again, 0);
    EXPECT_TRUE(echoes(again)) << "a freed place was not given back";
    for (int fd : a) EXPECT_TRUE(echoes(fd, 3)) << "admitted sessions keep working";
    EXPECT_EQ(fx.srv.stats().accepted, 6u) << "refused connections never became sessions";
    ::close(again);
    for (int fd : a) ::close(fd);
    for (int fd : b) ::close(fd);
    EXPECT_TRUE(eventually([&] { return fx.srv.caps()->sessions() == 0; }));
    EXPECT_EQ(fx.srv.caps()->sessions_from("127.0.0.1:1"), 0u);
}

TEST(caps, unix_socket_peers_count_only_in_the_total) {
    temp_dir dir;
    server_config cfg;
    cfg.tcp = false;
    cfg.unix_path = dir.path() + "/s.sock";
    cfg.max_sessions = 4;
    cfg.max_sessions_per_address = 1;
    server_fixture fx(cfg);
    std::vector<int> fds;
    for (int i = 0; i < 4; ++i) fds.push_back(connect_unix(cfg.unix_path));
    for (int fd : fds) ASSERT_TRUE(echoes(fd)) << "Unix peers have no address to cap";
    int over = connect_unix(cfg.unix_path);
    ASSERT_GE(over, 0);
    EXPECT_TRUE(wait_closed(over, 2s));
    ::close(over);
    EXPECT_TRUE(eventually([&] { return fx.srv.stats().refused_max_sessions == 1; }));
    for (int fd : fds) ::close(fd);
}

TEST(caps, address_of_takes_the_address_part_of_a_peer) {
    EXPECT_EQ(admission::address_of("10.1.2.3:5000"), "10.1.2.3");
    EXPECT_EQ(admission::address_of("[::1]:443"), "[::1]");
    EXPECT_EQ(admission::address_of("[fe80::1:2]:1"), "[fe80::1:2]");
    EXPECT_EQ(admission::address_of("unix"), "");
    EXPECT_EQ(admission::address_of(""), "");
}

}  // namespace
