// Each I/O backend echoes through a server (the engine's choice of backend: tests/core/io_backend_test.cpp).
#include "support/echo_fixture.hpp"
#include "support/loopback.hpp"

#include <strix/net/net_errc.hpp>

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace {

using namespace strix;

bool echoes(std::uint16_t port) {
    int fd = test::connect_tcp(port);
    if (fd < 0) return false;
    test::bytes body(300, std::byte{7});
    test::bytes f = test::frame_le32(body), back(f.size());
    bool ok = test::send_all(fd, f) && test::recv_exact(fd, back.data(), back.size()) && back == f;
    ::close(fd);
    return ok;
}

TEST(io_backend, both_backends_echo) {
    for (io_backend b : {io_backend::epoll, io_backend::uring}) {
        engine_config c;
        c.io = b;
        test::server_fixture fx({}, {}, 2, c);
        EXPECT_TRUE(echoes(fx.srv.port())) << fx.eng.io_name();
        EXPECT_TRUE(echoes(fx.srv.port())) << fx.eng.io_name();
    }
}

// A session closed with a receive queued for submission (input resumed, then aborted in the same
// callback) must not leave that receive to the descriptor's next owner. Here the next owner is
// a socket pair the handler opens in on_close, on the same thread, so it takes the number the
// session's socket gave up: bytes written into the pair before the shard's next submit must still
// be there afterwards, not eaten by the dead session's receive. (Found with cooperative task
// work, where an accept's completion could take the number between the close and the submit.)
class resume_then_abort : public session_handler {
public:
    std::atomic<session*> held{nullptr};
    std::atomic<int> pair_end{-1};  // the end of the pair that may have the closed socket's number
    int other_end = -1;

    void on_frame(session& s, std::span<const std::byte>) override {
        s.suspend_reading(true);
        held = &s;
    }
    void on_close(session&, std::error_code) override {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) return;
        other_end = sv[1];
        if (::write(sv[1], "probe", 5) != 5) return;
        pair_end = sv[0];
    }
};

TEST(io_backend, a_closed_sessions_queued_receive_does_not_read_its_numbers_next_owner) {
    for (io_backend b : {io_backend::epoll, io_backend::uring}) {
        engine_config c;
        c.io = b;
        auto* h = new resume_then_abort;
        test::server_fixture fx(
            {}, [h](shard&) { return std::unique_ptr<session_handler>(h); }, 1, c);
        int fd = test::connect_tcp(fx.srv.port());
        ASSERT_GE(fd, 0);
        ASSERT_TRUE(test::send_all(fd, test::frame_le32(test::bytes(8, std::byte{1}))));
        ASSERT_TRUE(test::eventually([&] { return h->held.load() != nullptr; })) << fx.eng.io_name();
        // Two turns later the paused receive's cancel has completed: resuming arms a new one.
        test::on_shard(fx.eng, 0, [] {});
        test::on_shard(fx.eng, 0, [] {});
        test::on_shard(fx.eng, 0, [&] {
            session* s = h->held.load();
            s->suspend_reading(false);
            s->abort(make_error_code(net_errc::closed_by_app));
        });
        ASSERT_GE(h->pair_end.load(), 0) << fx.eng.io_name();
        test::on_shard(fx.eng, 0, [] {});  // the shard's next submit has happened
        char got[8] = {};
        ssize_t n = -1;
        EXPECT_TRUE(test::eventually(
            [&] {
                n = ::recv(h->pair_end.load(), got, sizeof got, MSG_DONTWAIT);
                return n == 5;
            },
            std::chrono::milliseconds(500)))
            << fx.eng.io_name() << ": the pair's bytes are gone (recv " << n << ")";
        EXPECT_EQ(std::memcmp(got, "probe", 5), 0);
        ::close(h->pair_end.load());
        ::close(h->other_end);
        ::close(fd);
    }
}

}  // namespace
