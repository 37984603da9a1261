// The framing seam: built-in framers through a real session, a framer the test defines (a new
// protocol needs no change to the session), switching framers mid-stream, and the limits the
// session enforces whatever the framer says.
#include "support/echo_fixture.hpp"
#include "support/loopback.hpp"

#include <strix/net/framer.hpp>
#include <strix/net/net_errc.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace strix;
using namespace std::chrono_literals;

test::bytes to_bytes(const std::string& s) {
    test::bytes b(s.size());
    std::memcpy(b.data(), s.data(), s.size());
    return b;
}

std::string recv_string(int fd, std::size_t n) {
    std::string s(n, '\0');
    if (!test::recv_exact(fd, s.data(), n)) return {};
    return s;
}

// Lines ending in '\n': a protocol the engine does not ship.
class line_framer final : public framer {
public:
    frame_cut cut(std::span<const std::byte> b, std::size_t max_frame) const noexcept override {
        for (std::size_t i = 0; i < b.size(); ++i) {
            if (i >= max_frame) return {i + 1, {}};  // already longer than allowed: say so now
            if (b[i] == std::byte{'\n'}) return {i + 1, {}};
        }
        return {};
    }
    const char* name() const noexcept override { return "line"; }
};
const line_framer lines;

// Records frames and replies "<frame size>:" for each, so the client sees how the stream was cut.
class cut_reporter : public session_handler {
public:
    void on_frame(session& s, std::span<const std::byte> f) override {
        std::string r = std::to_string(f.size()) + ":";
        s.send(std::as_bytes(std::span(r)));
        // A frame "SWITCH\n" moves this session to 4-byte length prefixes from the next frame on.
        if (std::string(reinterpret_cast<const char*>(f.data()), f.size()) == "SWITCH\n")
            s.set_framer(length_prefix_framer());
    }
    void on_protocol_error(session&, std::error_code ec) override {
        std::lock_guard lk(mu);
        errors.push_back(ec);
    }
    std::mutex mu;
    std::vector<std::error_code> errors;
};

TEST(framer, a_framer_defined_by_the_application_cuts_the_stream) {
    server_config cfg;
    cfg.framing = &lines;
    test::server_fixture fx(cfg, [](shard&) { return std::make_unique<cut_reporter>(); });
    int fd = test::connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    // Three lines in one write, one line in three writes.
    ASSERT_TRUE(test::send_all(fd, to_bytes("a\nbb\nccc\n")));
    EXPECT_EQ(recv_string(fd, 6), "2:3:4:");
    ASSERT_TRUE(test::send_all(fd, to_bytes("dd")));
    std::this_thread::sleep_for(20ms);
    ASSERT_TRUE(test::send_all(fd, to_bytes("dd")));
    std::this_thread::sleep_for(20ms);
    ASSERT_TRUE(test::send_all(fd, to_bytes("d\n")));
    EXPECT_EQ(recv_string(fd, 2), "6:");
    ::close(fd);
}

TEST(framer, a_handler_switches_framing_mid_stream_even_within_one_read) {
    server_config cfg;
    cfg.framing = &lines;
    test::server_fixture fx(cfg, [](shard&) { return std::make_unique<cut_reporter>(); });
    int fd = test::connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    // One write: a line, the switch, then two length-prefixed frames (which contain '\n' bytes
    // a line framer would have cut at).
    test::bytes all = to_bytes("hi\nSWITCH\n");
    test::append(all, test::frame_le32(to_bytes("x\ny")));
    test::append(all, test::frame_le32(to_bytes("\n")));
    ASSERT_TRUE(test::send_all(fd, all));
    EXPECT_EQ(recv_string(fd, 8), "3:7:7:5:");
    ::close(fd);
}

TEST(framer, raw_hands_over_the_bytes_as_they_arrive) {
    server_config cfg;
    cfg.framing = &raw_framer();
    std::atomic<std::size_t> total{0};
    struct counter : session_handler {
        std::atomic<std::size_t>* n;
        void on_frame(session& s, std::span<const std::byte> f) override {
            *n += f.size();
            s.send(f);  // echo the stream as is
        }
    };
    test::server_fixture fx(cfg, [&](shard&) {
        auto h = std::make_unique<counter>();
        h->n = &total;
        return h;
    });
    int fd = test::connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    std::mt19937 rng(7);
    test::bytes data = test::random_bytes(rng, 300'000);  // more than one ring's worth
    std::thread writer([&] { test::send_all(fd, data); });
    test::bytes back(data.size());
    ASSERT_TRUE(test::recv_exact(fd, back.data(), back.size()));
    writer.join();
    EXPECT_EQ(back, data);
    EXPECT_EQ(total.load(), data.size());
    ::close(fd);
}

TEST(framer, the_session_refuses_a_frame_above_max_frame_whatever_the_framer) {
    server_config cfg;
    cfg.framing = &lines;
    cfg.limits.max_frame = 16;
    std::vector<cut_reporter*> handlers;
    test::server_fixture fx(cfg, [&](shard&) {
        auto h = std::make_unique<cut_reporter>();
        handlers.push_back(h.get());
        return h;
    });
    int fd = test::connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(test::send_all(fd, to_bytes("ok\n" + std::string(40, 'x'))));  // no newline in sight
    EXPECT_EQ(recv_string(fd, 2), "3:");
    EXPECT_TRUE(test::wait_closed(fd, 5s)) << "an over-long frame closes the connection";
    ::close(fd);
    EXPECT_TRUE(test::eventually([&] { return fx.srv.stats().frame_errors == 1; }));
    bool saw = false;
    for (auto* h : handlers) {
        std::lock_guard lk(h->mu);
        for (auto& e : h->errors) saw |= e == net_errc::frame_too_large;
    }
    EXPECT_TRUE(saw);
}

// Replies "<size>:<FNV-1a of the bytes>\n" for each frame: what arrived, and whether it is whole.
class digest_reporter : public session_handler {
public:
    static std::string line(std::span<const std::byte> f) {
        std::uint64_t h = 1469598103934665603ull;
        for (std::byte b : f) h = (h ^ static_cast<std::uint8_t>(b)) * 1099511628211ull;
        return std::to_string(f.size()) + ":" + std::to_string(h) + "\n";
    }
    void on_frame(session& s, std::span<const std::byte> f) override {
        const std::string r = line(f);
        s.send(std::as_bytes(std::span(r)));
    }
    void on_protocol_error(session&, std::error_code ec) override {
        std::lock_guard lk(mu);
        errors.push_back(ec);
    }
    std::mutex mu;
    std::vector<std::error_code> errors;
};

// A length-prefixed frame of n bytes (header included), its body random.
test::bytes prefixed_frame(std::mt19937& rng, std::size_t n) {
    test::bytes f = test::random_bytes(rng, n);
    for (std::size_t i = 0; i < 4; ++i) f[i] = static_cast<std::byte>(n >> (8 * i));
    return f;
}

TEST(framer, frames_above_max_frame_within_max_large_frame_arrive_whole_and_in_order) {
    server_config cfg;
    cfg.limits.max_frame = 64 * 1024;             // the ring: 64 KiB
    cfg.limits.max_large_frame = 8 * 1024 * 1024;  // collected outside it up to 8 MiB
    std::vector<digest_reporter*> handlers;
    std::mutex handlers_mu;
    test::server_fixture fx(cfg, [&](shard&) {
        auto h = std::make_unique<digest_reporter>();
        std::lock_guard lk(handlers_mu);
        handlers.push_back(h.get());
        return h;
    });
    int fd = test::connect_tcp(fx.srv.port());
    ASSERT_GE(fd, 0);
    std::mt19937 rng(11);
    // Small frames around large ones, one large frame right after another, and the limit itself:
    // every frame's reply must come back in order with the digest of exactly its bytes.
    test::bytes data;
    std::string expected;
    for (std::size_t n : {10u, 3'000'001u, 70'000u, 20u, 65'536u, 65'537u, 8u * 1024 * 1024, 4u}) {
        const test::bytes f = prefixed_frame(rng, n);
        expected += digest_reporter::line(std::as_bytes(std::span(f)));
        data.insert(data.end(), f.begin(), f.end());
    }
    std::thread writer([&] { test::send_all(fd, data); });
    EXPECT_EQ(recv_string(fd, expected.size()), expected);
    writer.join();

    // One byte over max_large_frame: refused from its header, before anything is collected.
    const test::bytes over = prefixed_frame(rng, 8u * 1024 * 1024 + 1);
    ASSERT_TRUE(test::send_all(fd, test::bytes(over.begin(), over.begin() + 4096)));
    EXPECT_TRUE(test::wait_closed(fd, 5s)) << "a frame over max_large_frame closes the connection";
    ::close(fd);
    EXPECT_TRUE(test::eventually([&] { return fx.srv.stats().frame_errors == 1; }));
    bool saw = false;
    std::lock_guard lk(handlers_mu);
    for (auto* h : handlers) {
        std::lock_guard hl(h->mu);
        for (auto& e : h->errors) saw |= e == net_errc::frame_too_large;
    }
    EXPECT_TRUE(saw);
}

TEST(framer, built_in_framers_size_frames_from_their_headers) {
    const framer& lp = length_prefix_framer();
    std::byte b[8] = {std::byte{9}, std::byte{0}, std::byte{0}, std::byte{0}};
    EXPECT_EQ(lp.cut(std::span(b, 3), 100).size, 0u) << "header incomplete";
    EXPECT_EQ(lp.cut(std::span(b, 4), 100).size, 9u) << "size known before the body";
    b[0] = std::byte{3};
    EXPECT_EQ(lp.cut(std::span(b, 4), 100).error, net_errc::frame_too_small);
    EXPECT_EQ(raw_framer().cut(std::span(b, 8), 5).size, 5u);
    std::byte h[12] = {std::byte{200}};  // strix header: length 200, type 0, no flags, crc 0
    EXPECT_EQ(strix_header_framer().cut(std::span(h, 11), 1000).size, 0u);
    EXPECT_EQ(strix_header_framer().cut(std::span(h, 12), 1000).size, 200u);
    EXPECT_EQ(strix_header_framer().cut(std::span(h, 12), 100).size, 200u) << "the session compares with max_frame";
    h[0] = std::byte{4};
    EXPECT_EQ(strix_header_framer().cut(std::span(h, 12), 1000).error, net_errc::frame_too_small);
}

}  // namespace
