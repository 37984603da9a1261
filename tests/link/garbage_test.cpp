// Hostile peers against a strix socket, from plain sockets: garbage, truncated greetings, bad
// signatures and versions, other mechanisms, broken handshakes, oversized and malformed frames.
// Each connection is closed by strix and counted (handshake_failures or protocol_errors),
// oversized frames are refused from their header (nothing allocated: the process's resident
// memory does not grow by the announced size, and the close comes without waiting for a body),
// and all the while a well-behaved libzmq peer on the same strix socket keeps being served.
#include "link/interop_support.hpp"
#include "link/raw_zmtp.hpp"

#include <strix/link/socket.hpp>

#include <gtest/gtest.h>

#include <thread>

namespace {

using namespace strix;
using namespace strix::test;
using namespace strix::test::raw;
using link::link_errc;
using link::socket_type;
using kind = link::socket_event::kind;
using strs = std::vector<std::string>;
using namespace std::chrono_literals;

class garbage : public interop_test_base {
protected:
    inbox* got = nullptr;
    event_log* log = nullptr;
    link::socket* pull = nullptr;
    zmq::socket* push = nullptr;
    std::string addr;
    int alive_n = 0;

    void SetUp() override {
        got = &env.new_inbox();
        log = &env.new_log();
        link::socket_options o;
        o.handshake_ivl = 1500ms;  // a peer that stalls mid-handshake goes after this
        pull = &env.make(0, socket_type::pull, o, got, log);
        addr = env.on(0, [&] { return pull->bind("tcp://127.0.0.1:*"); });
        push = &zsock(ZMQ_PUSH);
        push->connect(addr);
        alive();
    }

    // The libzmq peer is still served: a message from it arrives.
    void alive() {
        const std::string m = "alive-" + std::to_string(alive_n++);
        ASSERT_EQ(push->send({m}), 0);
        EXPECT_EQ(got->pop(), strs{m});
    }

    link::socket_stats st() { return stats(*pull); }

    // The error of the last event of kind k (a default error_code if none).
    std::error_code last(kind k) {
        std::error_code ec;
        for (auto& e : log->all())
            if (e.what == k) ec = e.error;
        return ec;
    }

    // Waits for the failure counters to reach their expected values.
    void expect_counts(std::uint64_t handshake_failures, std::uint64_t protocol_errors) {
        EXPECT_TRUE(eventually([&] {
            const auto s = st();
            return s.handshake_failures == handshake_failures && s.protocol_errors == protocol_errors;
        })) << "handshake_failures "
            << st().handshake_failures << " (want " << handshake_failures << "), protocol_errors "
            << st().protocol_errors << " (want " << protocol_errors << ")\n"
            << describe(*log);
    }
};

// --- refused during the handshake -------------------------------------------------------------

TEST_F(garbage, garbage_bytes_are_refused_at_the_first_byte) {
    client c(addr);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c.send(of("GET / HTTP/1.1\r\nHost: strix\r\n\r\n")));
    EXPECT_TRUE(wait_closed(c.fd(), 2s));
    expect_counts(1, 0);
    EXPECT_EQ(last(kind::handshake_failed), link_errc::bad_greeting);
    alive();
}

TEST_F(garbage, a_bad_signature_is_refused) {
    client c(addr);
    ASSERT_TRUE(c.send(greeting(3, 1, "NULL", 0x7e)));  // byte 9's low bit clear: not ZMTP 2+
    EXPECT_TRUE(wait_closed(c.fd(), 2s));
    expect_counts(1, 0);
    EXPECT_EQ(last(kind::handshake_failed), link_errc::bad_greeting);
    alive();
}

TEST_F(garbage, a_major_version_below_3_is_refused_from_its_first_11_bytes) {
    for (std::uint8_t major : {std::uint8_t{1}, std::uint8_t{2}}) {
        client c(addr);
        bytes g = greeting(major, 0);
        g.resize(11);  // signature and major version only: strix need not wait for the rest
        ASSERT_TRUE(c.send(g));
        EXPECT_TRUE(wait_closed(c.fd(), 2s)) << "major " << int(major);
        EXPECT_EQ(last(kind::handshake_failed), link_errc::unsupported_version);
    }
    expect_counts(2, 0);
    alive();
}

TEST_F(garbage, a_truncated_greeting_then_close_is_counted) {
    {
        client c(addr);
        bytes g = greeting();
        g.resize(20);
        ASSERT_TRUE(c.send(g));
    }  // closed
    expect_counts(1, 0);
    EXPECT_EQ(log->count(kind::handshake_failed), 1u);
    EXPECT_EQ(log->count(kind::disconnected), 0u) << "it never connected as a peer";
    alive();
}

TEST_F(garbage, a_greeting_stalled_midway_is_closed_at_the_handshake_interval) {
    client c(addr);
    bytes g = greeting();
    g.resize(30);
    ASSERT_TRUE(c.send(g));
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(wait_closed(c.fd(), 5s));
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 1s) << "closed before the handshake interval";
    expect_counts(1, 0);
    EXPECT_EQ(last(kind::handshake_failed), link_errc::handshake_timeout);
    alive();
}

TEST_F(garbage, another_security_mechanism_gets_an_error_command) {
    client c(addr);
    ASSERT_TRUE(c.send(greeting(3, 1, "CURVE")));
    ASSERT_TRUE(read_greeting(c.fd()));
    auto f = read_frame(c.fd());
    ASSERT_TRUE(f);
    EXPECT_EQ(f->name(), "ERROR") << "strix answers with ERROR (and no READY)";
    EXPECT_TRUE(wait_closed(c.fd(), 2s));
    expect_counts(1, 0);
    EXPECT_EQ(last(kind::handshake_failed), link_errc::unsupported_mechanism);
    alive();
}

TEST_F(garbage, broken_handshakes_are_refused) {
    const bytes cases[] = {
        frame(0, "a message before READY"),
        command("HELLO", "x"),                                                 // not READY
        command("READY", property("Identity", "x")),                          // no Socket-Type
        command("READY", property("Socket-Type", "PUSH").substr(0, 12)),      // property cut short
        command("READY", property("Socket-Type", "NOSUCH")),                  // unknown type
        frame(command_flag, std::string(1, '\x30')),                          // name runs past the body
    };
    for (auto& bad : cases) {
        client c(addr);
        ASSERT_TRUE(c.send(greeting() + bad));
        EXPECT_TRUE(wait_closed(c.fd(), 2s));
    }
    expect_counts(std::size(cases), 0);
    for (auto& e : log->all())
        if (e.what == kind::handshake_failed) {
            EXPECT_TRUE(e.error == link_errc::bad_handshake || e.error == link_errc::socket_type_mismatch)
                << e.error.message();
        }
    alive();
}

TEST_F(garbage, an_incompatible_socket_type_gets_an_error_command) {
    client c(addr);
    ASSERT_TRUE(c.send(greeting() + ready("PUB")));
    ASSERT_TRUE(read_greeting(c.fd()));
    auto f = read_frame(c.fd());
    ASSERT_TRUE(f);
    if (f->name() == "READY") f = read_frame(c.fd());  // strix's READY may go out first
    ASSERT_TRUE(f);
    EXPECT_EQ(f->name(), "ERROR");
    EXPECT_TRUE(wait_closed(c.fd(), 2s));
    expect_counts(1, 0);
    EXPECT_EQ(last(kind::handshake_failed), link_errc::socket_type_mismatch);
    EXPECT_EQ(st().peers, 1u) << "only the libzmq peer";
    alive();
}

TEST_F(garbage, a_peer_error_during_the_handshake_is_counted) {
    client c(addr);
    ASSERT_TRUE(c.send(greeting() + command("ERROR", std::string(1, '\x04') + "nope")));
    EXPECT_TRUE(wait_closed(c.fd(), 2s));
    expect_counts(1, 0);
    EXPECT_EQ(last(kind::handshake_failed), link_errc::peer_error);
    alive();
}

// --- refused after the handshake --------------------------------------------------------------

TEST_F(garbage, an_oversized_size_field_closes_the_connection_before_anything_is_allocated) {
    // max_msg_size + 1, 256 MiB, 1 TiB, 2^63 and 2^64 - 1: announced in a LONG header, never sent.
    const std::uint64_t sizes[] = {1024 * 1024 + 1, 256ull << 20, 1ull << 40, 1ull << 63, ~0ull};
    const std::size_t rss0 = resident_bytes();
    for (auto n : sizes) {
        client c(addr);
        ASSERT_TRUE(c.handshake("PUSH")) << "handshake";
        ASSERT_TRUE(c.send(header(0, n)));
        const auto t0 = std::chrono::steady_clock::now();
        EXPECT_TRUE(wait_closed(c.fd(), 2s)) << n << " bytes announced: strix waits for a body";
        EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
        const std::size_t rss = resident_bytes();
        EXPECT_LT(rss, rss0 + 32 * 1024 * 1024)
            << n << " bytes announced: resident memory grew from " << rss0 << " to " << rss;
        EXPECT_EQ(last(kind::disconnected), link_errc::message_too_large) << describe(*log);
    }
    expect_counts(0, std::size(sizes));
    EXPECT_EQ(log->count(kind::disconnected), std::size(sizes)) << "one event per connection\n" << describe(*log);
    EXPECT_EQ(st().messages_in, 1u) << "only the first alive message";
    alive();
}

TEST_F(garbage, a_body_that_follows_an_oversized_header_is_not_read) {
    client c(addr);
    ASSERT_TRUE(c.handshake("PUSH"));
    const std::size_t rss0 = resident_bytes();
    // 64 MiB announced, the first 8 MiB of it sent at once: the close comes at the header.
    bytes b = header(0, 64ull << 20);
    b.resize(b.size() + (8u << 20), std::byte{'x'});
    ::send(c.fd(), b.data(), b.size(), MSG_NOSIGNAL | MSG_DONTWAIT);  // partial is fine
    EXPECT_TRUE(wait_closed(c.fd(), 2s));
    EXPECT_LT(resident_bytes(), rss0 + 32 * 1024 * 1024);
    expect_counts(0, 1);
    alive();
}

TEST_F(garbage, endless_multipart_is_bounded) {
    // Five parts of 1 MiB, each within max_msg_size, all with MORE: strix buffers at most
    // 4 x max_msg_size of one message and closes the peer past that.
    {
        client c(addr);
        ASSERT_TRUE(c.handshake("PUSH"));
        const std::string part(1024 * 1024, 'p');
        bool closed = false;
        for (int i = 0; i < 5 && !closed; ++i) closed = !c.send(frame(more, part));
        EXPECT_TRUE(closed || wait_closed(c.fd(), 2s));
    }
    // 2000 empty parts with MORE: too many parts.
    {
        client c(addr);
        ASSERT_TRUE(c.handshake("PUSH"));
        bytes b;
        for (int i = 0; i < 2000; ++i) append(b, frame(more, ""));
        c.send(b);
        EXPECT_TRUE(wait_closed(c.fd(), 2s));
    }
    expect_counts(0, 2);
    EXPECT_EQ(last(kind::disconnected), link_errc::message_too_large);
    EXPECT_EQ(log->count(kind::disconnected), 2u) << describe(*log);
    EXPECT_TRUE(got->stays_empty(100ms)) << "no partial message is delivered";
    alive();
}

TEST_F(garbage, malformed_frames_after_the_handshake_are_protocol_errors) {
    const bytes cases[] = {
        bytes{std::byte{0x80}, std::byte{1}, std::byte{'x'}},  // reserved flag bit
        bytes{std::byte{0x08}, std::byte{0}},                   // another reserved bit
        frame(command_flag, ""),                                // a command with no name
        frame(command_flag, std::string(1, '\x20') + "short"),  // name longer than the body
    };
    for (auto& bad : cases) {
        client c(addr);
        ASSERT_TRUE(c.handshake("PUSH"));
        ASSERT_TRUE(c.send(frame(0, "fine") + bad));
        EXPECT_TRUE(wait_closed(c.fd(), 2s));
    }
    expect_counts(0, std::size(cases));
    EXPECT_EQ(log->count(kind::disconnected), std::size(cases)) << describe(*log);
    for (std::size_t i = 0; i < std::size(cases); ++i)
        EXPECT_EQ(got->pop(), strs{"fine"}) << "what came before the bad frame";
    alive();
}

// --- all at once, with libzmq streaming -------------------------------------------------------

TEST_F(garbage, a_storm_of_bad_peers_does_not_disturb_a_streaming_libzmq_peer) {
    constexpr int n = 3000;
    std::thread streamer([&] {
        // The libzmq socket moves to this thread for the stream and back at join().
        for (int i = 0; i < n; ++i)
            if (push->send({"s", std::to_string(i), payload(static_cast<std::size_t>(i % 600), i)}) != 0) return;
    });
    int handshake_bad = 0, frame_bad = 0;
    for (int round = 0; round < 10; ++round) {
        {
            client c(addr);
            c.send(of("\x01\x02garbage"));
            EXPECT_TRUE(wait_closed(c.fd(), 2s));
            ++handshake_bad;
        }
        {
            client c(addr);
            bytes g = greeting();
            g.resize(static_cast<std::size_t>(5 + round));
            c.send(g);
            ++handshake_bad;
        }
        {
            client c(addr);
            EXPECT_TRUE(c.handshake("PUSH"));  // no ASSERT while the streamer runs
            c.send(frame(0, "partial") + header(0, 1ull << 40));
            EXPECT_TRUE(wait_closed(c.fd(), 2s));
            ++frame_bad;
        }
    }
    streamer.join();
    // One "partial" message per round came before its bad header; the stream in order around them.
    int next = 0, partial = 0;
    while (next < n) {
        auto m = got->pop();
        ASSERT_FALSE(m.empty()) << "stream stopped at " << next;
        if (m == strs{"partial"}) {
            ++partial;
            continue;
        }
        ASSERT_EQ(m.size(), 3u);
        ASSERT_EQ(m[1], std::to_string(next)) << "lost or reordered";
        ASSERT_EQ(m[2], payload(static_cast<std::size_t>(next % 600), next));
        ++next;
    }
    while (!got->stays_empty(50ms)) {
        ASSERT_EQ(got->pop(), strs{"partial"});
        ++partial;
    }
    EXPECT_EQ(partial, 10);
    expect_counts(static_cast<std::uint64_t>(handshake_bad), static_cast<std::uint64_t>(frame_bad));
    EXPECT_EQ(st().peers, 1u);
    alive();
}

}  // namespace
