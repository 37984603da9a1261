// Which I/O backend the shards run: engine_config::io picks it, STRIX_IO chooses for `automatic`
// (ctest runs the engine, net, link and chat suites once with STRIX_IO=epoll and once with
// STRIX_IO=uring), and io_uring falls back to epoll only where the kernel refuses it. That each
// backend echoes through a server: tests/net/io_backend_echo_test.cpp.
#include <strix/core/engine.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include <liburing.h>

namespace {

using namespace strix;

// Whether this kernel lets a process set up a ring at all (a sandbox may forbid io_uring_setup).
bool kernel_allows_uring() {
    io_uring ring;
    if (io_uring_queue_init(4, &ring, 0) != 0) return false;
    io_uring_queue_exit(&ring);
    return true;
}

std::string backend_of(io_backend want) {
    engine_config c;
    c.shards = 1;
    c.pin_threads = false;
    c.io = want;
    engine e(c);
    return e.io_name();
}

TEST(io_backend, an_explicit_choice_is_honoured) {
    EXPECT_EQ(backend_of(io_backend::epoll), "epoll");
    if (!kernel_allows_uring()) GTEST_SKIP() << "io_uring_setup refused here: the engine falls back to epoll";
    EXPECT_EQ(backend_of(io_backend::uring), "io_uring");
}

TEST(io_backend, automatic_follows_STRIX_IO) {
    const char* env = std::getenv("STRIX_IO");
    const std::string got = backend_of(io_backend::automatic);
    if (env && std::strcmp(env, "epoll") == 0) {
        EXPECT_EQ(got, "epoll");
        return;
    }
    // STRIX_IO=uring, or anything else (the default): io_uring unless the kernel refuses it. The
    // probe runs after the engine, so a ring refused for a moment while parallel tests hold theirs
    // (RLIMIT_MEMLOCK on older kernels) cannot fail a run that got io_uring.
    EXPECT_EQ(got == "io_uring" || !kernel_allows_uring(), true)
        << "automatic ran " << got << " where io_uring works (STRIX_IO=" << (env ? env : "unset")
        << "): ctest's .uring. suites must really run on io_uring";
}

TEST(io_backend, the_default_is_io_uring_where_the_kernel_allows_it) {
    ::unsetenv("STRIX_IO");  // this test runs in a process of its own under ctest
    const std::string got = backend_of(io_backend::automatic);
    EXPECT_EQ(got == "io_uring" || !kernel_allows_uring(), true) << "the default ran " << got;
    EXPECT_TRUE(got == "io_uring" || got == "epoll");
}

}  // namespace
