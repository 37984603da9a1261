// The engine used as a library: servers that come and go on one running engine, typed session
// state, and the owner checks of debug and sanitizer builds (sharded services: tests/core).
#include "support/echo_fixture.hpp"
#include "support/loopback.hpp"

#include <strix/net/session_group.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <string>

namespace {

using namespace strix;
using namespace std::chrono_literals;

engine_config shards(unsigned n) {
    engine_config c;
    c.shards = n;
    c.pin_threads = false;
    return c;
}

bool echoes(std::uint16_t port) {
    int fd = test::connect_tcp(port);
    if (fd < 0) return false;
    test::bytes body = {std::byte{1}, std::byte{2}, std::byte{3}};
    test::bytes f = test::frame_le32(body), back(f.size());
    bool ok = test::send_all(fd, f) && test::recv_exact(fd, back.data(), back.size()) && back == f;
    ::close(fd);
    return ok;
}

// Counts closes, so a test can see a server's teardown reach its handlers.
struct counting_echo : test::echo_handler {
    std::atomic<int>* closes;
    void on_close(session&, std::error_code) override { ++*closes; }
};

TEST(library, destroying_one_server_leaves_the_engine_and_another_server_running) {
    engine eng(shards(2));
    std::atomic<int> closes_a{0};
    auto make_a = [&](shard&) {
        auto h = std::make_unique<counting_echo>();
        h->closes = &closes_a;
        return h;
    };
    auto a = std::make_unique<server>(eng, server_config{}, make_a);
    server b(eng, server_config{}, [](shard&) { return std::make_unique<test::echo_handler>(); });
    a->start();
    b.start();
    eng.start();
    ASSERT_TRUE(echoes(a->port()));
    ASSERT_TRUE(echoes(b.port()));
    const std::uint16_t port_a = a->port();
    int held = test::connect_tcp(port_a);  // a session of server a that is open at teardown
    ASSERT_GE(held, 0);
    ASSERT_TRUE(test::eventually([&] { return a->stats().accepted == 2 && a->stats().active == 1; }));

    a.reset();  // while the engine runs
    EXPECT_TRUE(eng.running());
    EXPECT_EQ(closes_a.load(), 2) << "the echo probe and the held session each got on_close";
    EXPECT_TRUE(test::wait_closed(held, 2s)) << "the held connection was closed";
    ::close(held);
    EXPECT_LT(test::connect_tcp(port_a, 300ms), 0) << "server a no longer listens";
    EXPECT_TRUE(echoes(b.port())) << "server b still serves on the same engine";
    eng.stop();
    eng.join();
}

TEST(library, a_server_can_be_built_and_started_after_the_engine) {
    engine eng(shards(2));
    eng.start();
    {
        server s(eng, server_config{}, [](shard&) { return std::make_unique<test::echo_handler>(); });
        s.start();
        EXPECT_TRUE(echoes(s.port()));
    }
    server again(eng, server_config{}, [](shard&) { return std::make_unique<test::echo_handler>(); });
    again.start();
    EXPECT_TRUE(echoes(again.port()));
    eng.stop();
    eng.join();
}

struct greeting_state {
    std::string name;
    int frames = 0;
};

TEST(session_state, typed_state_lives_with_the_session_and_is_checked_by_type) {
    std::atomic<int> wrong_type_null{0}, destroyed{0};
    struct stateful : session_handler {
        std::atomic<int>* wrong_type_null;
        std::atomic<int>* destroyed;
        void on_open(session& s) override { s.emplace_state<greeting_state>(greeting_state{"hi", 0}); }
        void on_frame(session& s, std::span<const std::byte> f) override {
            auto* st = s.state<greeting_state>();
            if (s.state<int>() == nullptr) ++*wrong_type_null;
            ++st->frames;
            std::string r = st->name + std::to_string(st->frames);
            (void)f;
            s.send(std::as_bytes(std::span(r)));
        }
        void on_close(session& s, std::error_code) override {
            if (s.state<greeting_state>()) ++*destroyed;  // still there during on_close
        }
    };
    test::server_fixture fx({}, [&](shard&) {
        auto h = std::make_unique<stateful>();
        h->wrong_type_null = &wrong_type_null;
        h->destroyed = &destroyed;
        return h;
    });
    int fd = test::connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    test::bytes f = test::frame_le32({std::byte{0}});
    for (int i = 1; i <= 3; ++i) {
        ASSERT_TRUE(test::send_all(fd, f));
        std::string r(3, '\0');
        ASSERT_TRUE(test::recv_exact(fd, r.data(), 3));
        EXPECT_EQ(r, "hi" + std::to_string(i));
    }
    ::close(fd);
    EXPECT_TRUE(test::eventually([&] { return destroyed.load() == 1; }));
    EXPECT_EQ(wrong_type_null.load(), 3);
}

#if defined(STRIX_THREAD_CHECKS) && STRIX_THREAD_CHECKS
TEST(owner_check_death, touching_a_session_from_another_thread_aborts_naming_both) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            std::atomic<session*> seen{nullptr};
            struct grab : session_handler {
                std::atomic<session*>* out;
                void on_open(session& s) override { *out = &s; }
                void on_frame(session&, std::span<const std::byte>) override {}
            };
            test::server_fixture fx({}, [&](shard&) {
                auto h = std::make_unique<grab>();
                h->out = &seen;
                return h;
            });
            int fd = test::connect_tcp(fx.srv.port());
            test::eventually([&] { return seen.load() != nullptr; });
            std::byte b{1};
            seen.load()->send(std::span(&b, 1));  // from the test's thread: not the owner
            ::close(fd);
        },
        "session::send called on thread [0-9]+ \\(not a shard\\), but the object belongs to shard [0-9]");
}

TEST(owner_check_death, a_shard_touching_another_shards_timers_aborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            engine eng(shards(2));
            eng.start();
            eng.post(1, [&] { eng.at(0).timers(); });
            std::this_thread::sleep_for(2s);
        },
        "shard::timers called on shard 1, but the object belongs to shard 0");
}
#else
TEST(owner_check_death, checks_are_compiled_only_into_debug_and_sanitizer_builds) {
    GTEST_SKIP() << "release build: STRIX_THREAD_CHECKS is off (make test SANITIZE=1 runs these)";
}
#endif

}  // namespace
