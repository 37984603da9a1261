// A reader that stops and restarts often (the blocking link API's receiver does so at its
// high-water mark, every few hundred messages) takes a multi-megabyte stream whole and in order
// (ctest runs it on epoll and on io_uring). On io_uring one turn's multishot receive can bring megabytes after the
// pause: those bytes wait in the stream and are handed over a piece per resume.
#include "support/echo_fixture.hpp"
#include "support/loopback.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

namespace {

using namespace strix;

constexpr std::size_t body_size = 200;
constexpr std::uint32_t frames = 20000;  // 4 MB of frames

// Checks that frame i's body carries i in every 4-byte word; suspends reading after every `every`
// frames and resumes on a later loop turn.
class stop_and_go : public session_handler {
public:
    stop_and_go(std::atomic<std::uint32_t>& seen, std::atomic<std::uint32_t>& bad, std::atomic<std::uint32_t>& stops,
                std::uint32_t every)
        : seen_(seen), bad_(bad), stops_(stops), every_(every) {}

    void on_frame(session& s, std::span<const std::byte> f) override {
        const std::uint32_t i = seen_.load(std::memory_order_relaxed);
        f = f.subspan(4);  // the frame's length prefix
        bool ok = f.size() == body_size;
        for (std::size_t off = 0; ok && off + 4 <= f.size(); off += 4) {
            std::uint32_t w;
            std::memcpy(&w, f.data() + off, 4);
            ok = w == i;
        }
        if (!ok) bad_.fetch_add(1, std::memory_order_relaxed);
        seen_.store(i + 1, std::memory_order_release);
        if ((i + 1) % every_ != 0) return;
        s.suspend_reading(true);
        stops_.fetch_add(1, std::memory_order_relaxed);
        session_ptr keep(&s);
        s.owner().post_local([keep] { keep->suspend_reading(false); });
    }

private:
    std::atomic<std::uint32_t>& seen_;
    std::atomic<std::uint32_t>& bad_;
    std::atomic<std::uint32_t>& stops_;
    const std::uint32_t every_;
};

TEST(suspend_resume, a_reader_that_stops_every_few_frames_gets_megabytes_whole_and_in_order) {
    test::bytes stream;
    for (std::uint32_t i = 0; i < frames; ++i) {
        test::bytes body(body_size);
        for (std::size_t off = 0; off < body_size; off += 4) std::memcpy(body.data() + off, &i, 4);
        test::append(stream, test::frame_le32(body));
    }
    for (std::uint32_t every : {1u, 50u, 700u}) {
        std::atomic<std::uint32_t> seen{0}, bad{0}, stops{0};
        test::server_fixture fx(
            {}, [&](shard&) { return std::make_unique<stop_and_go>(seen, bad, stops, every); }, 1);
        SCOPED_TRACE(std::string(fx.eng.io_name()) + ", suspended every " + std::to_string(every) + " frames");
        const int fd = test::connect_tcp(fx.srv.port());
        ASSERT_GE(fd, 0);
        ASSERT_TRUE(test::send_all(fd, stream));  // one write: the kernel queues what the reader has not taken
        EXPECT_TRUE(test::eventually([&] { return seen.load() == frames; }, std::chrono::seconds(60)))
            << seen.load() << " of " << frames << " frames arrived";
        EXPECT_EQ(bad.load(), 0u) << "frames out of order or damaged";
        EXPECT_EQ(stops.load(), frames / every);
        EXPECT_EQ(fx.srv.stats().frames_in, frames);
        ::close(fd);
    }
}

}  // namespace
