// Each I/O backend echoes through a server (the engine's choice of backend: tests/core/io_backend_test.cpp).
#include "support/echo_fixture.hpp"
#include "support/loopback.hpp"

#include <gtest/gtest.h>

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

}  // namespace
