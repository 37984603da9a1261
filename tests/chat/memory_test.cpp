// The hardening's memory row, rerun: 500 rooms exist, four sessions each send 20,000 list_rooms_req
// (~18 KB per reply) and never read. Before, each was cut as a slow consumer but the server's RSS
// rose 1.0-1.5 GiB and ~1 GiB stayed held. Now a session has one list in flight at a time, replies
// count against its output limit, reading pauses at the high-water mark, and the session is cut by
// the stall timeout; the memory it held goes back. The test prints RSS before, at the peak during
// the flood and after the cuts, and bounds each against the documented worst case (docs/protocol.md,
// "Memory").
#include "chat_fixture.hpp"
#include "metrics_scrape.hpp"

#include <fcntl.h>
#include <poll.h>

#include <cstdio>

using namespace strix;
using namespace strix::chat;
using namespace strix::test;
using namespace std::chrono_literals;
using proto::msg_type;

namespace {

class memory : public chat_test {};

std::vector<std::byte> list_rooms_frame() {
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(proto::Createlist_rooms_req(fbb));
    auto b = strix::chat::finish_frame(fbb, msg_type::list_rooms_req);
    return {b->data(), b->data() + b->size()};
}

long rss_kib(pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}

// Writes as much of `data` as the peer takes within `within`, without ever blocking for longer
// than a poll slice; stops at an error (the server cut the connection). Returns the bytes written.
std::size_t write_for(int fd, const std::vector<std::byte>& data, std::chrono::milliseconds within) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    std::size_t off = 0;
    while (off < data.size() && std::chrono::steady_clock::now() < deadline) {
        ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            off += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) break;
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 20);
        if (p.revents & (POLLERR | POLLHUP)) break;
    }
    return off;
}

TEST_P(memory, four_list_rooms_floods_that_never_read_are_cut_and_their_memory_goes_back) {
    raise_fd_limit();
    const auto mport = free_port();
    auto srv = start(2, {"--max-connections-per-address", "0", "--metrics-port", std::to_string(mport)});
    ASSERT_TRUE(srv->ready());

    // 500 rooms with 60-byte names, each held by its creator (an emptied room is deleted).
    std::vector<std::unique_ptr<chat_client>> owners;
    for (int i = 0; i < 500; ++i) {
        auto c = std::make_unique<chat_client>(srv->port());
        c->login("owner" + std::to_string(i));
        char name[64];
        std::snprintf(name, sizeof name, "room-%04d-%s", i, std::string(50, 'x').c_str());
        ASSERT_NE(c->create(name), 0u) << "room " << i;
        owners.push_back(std::move(c));
    }

    // Four flooders with small receive buffers, logged in; one list is answered normally first.
    std::vector<std::unique_ptr<chat_client>> flooders;
    std::size_t reply_bytes = 0;
    for (int i = 0; i < 4; ++i) {
        auto c = std::make_unique<chat_client>(srv->port(), 4096);
        c->login("flooder" + std::to_string(i));
        flooders.push_back(std::move(c));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createlist_rooms_req(fbb));
        ASSERT_TRUE(flooders[0]->send(fbb, msg_type::list_rooms_req));
        auto f = flooders[0]->expect(msg_type::list_rooms_res);
        ASSERT_EQ(f.as<proto::list_rooms_res>()->rooms()->size(), 500u);
        reply_bytes = f.bytes.size();
    }
    std::vector<std::byte> burst;
    const auto one = list_rooms_frame();
    for (int i = 0; i < 20000; ++i) burst.insert(burst.end(), one.begin(), one.end());

    std::this_thread::sleep_for(1500ms);  // the idle sweep has run; the server is settled
    const long before = rss_kib(srv->pid());
    ASSERT_GT(before, 0);

    // Flood from four threads; sample RSS until all four are cut.
    std::atomic<int> done{0};
    std::vector<std::thread> senders;
    std::vector<std::size_t> written(4);
    for (int i = 0; i < 4; ++i)
        senders.emplace_back([&, i] {
            written[static_cast<std::size_t>(i)] = write_for(flooders[static_cast<std::size_t>(i)]->fd(), burst, 30s);
            ++done;
        });
    long peak = before;
    const long long cut_before = metric_value(http_get(mport, "/metrics"), "strix_slow_consumer_disconnects_total");
    const auto deadline = std::chrono::steady_clock::now() + 40s;
    long long cut = cut_before;
    while (std::chrono::steady_clock::now() < deadline) {
        peak = std::max(peak, rss_kib(srv->pid()));
        cut = metric_value(http_get(mport, "/metrics"), "strix_slow_consumer_disconnects_total");
        if (cut - cut_before >= 4) break;
        std::this_thread::sleep_for(20ms);
    }
    for (auto& t : senders) t.join();
    EXPECT_EQ(cut - cut_before, 4) << "each flooder is cut as a slow consumer";
    for (auto& f : flooders) EXPECT_TRUE(wait_closed(f->fd(), 10s));

    // The idle sweep (once a second) hands what the cut sessions held back to the kernel; wait
    // up to 6 s for RSS to come down.
    long after = rss_kib(srv->pid());
    for (int i = 0; i < 60 && after - before >= 8 * 1024; ++i) {
        std::this_thread::sleep_for(100ms);
        after = rss_kib(srv->pid());
    }

    // The owners were never disturbed: one of them still gets its own chat back.
    owners[7]->send_chat("still here");
    EXPECT_EQ(owners[7]->expect(msg_type::chat_msg).as<proto::chat_msg>()->text()->str(), "still here");

    std::printf("list_rooms flood: reply %zu bytes; sent per flooder %zu..%zu of %zu bytes; server RSS "
                "before %ld KiB, peak %ld KiB (+%ld), after %ld KiB (+%ld)\n",
                reply_bytes, *std::min_element(written.begin(), written.end()),
                *std::max_element(written.begin(), written.end()), burst.size(), before, peak, peak - before, after,
                after - before);
    // Worst case per flooder at the default limits: max_queued (4 MiB) of output, plus the receive
    // ring (64 KiB) and one reply being built. Four of them: ~17 MiB; the peak bound leaves room
    // for allocator slack, not for the 1-2 GiB of before. After the cuts malloc_trim (the idle
    // sweep, once megabytes were released) gives most of it back: measured +0.7..12.7 MiB (glibc
    // keeps pages it cannot trim around live blocks), so the bound is the four flooders' worst
    // case, not less: what is held after can never exceed what the limits let them pin.
    // (Not under ASan: its allocator keeps freed memory in quarantine and pads every block.)
    if (!sanitized) {
        EXPECT_LT(peak - before, 48 * 1024) << "RSS during the flood";
        EXPECT_LT(after - before, 4 * (4096 + 64 + 46) + 1024) << "RSS after the flooders were cut";
    }
    stop_cleanly(*srv);
}

STRIX_CHAT_BACKENDS(memory);

}  // namespace
