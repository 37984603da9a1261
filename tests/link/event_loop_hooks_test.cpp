// The blocking API's hooks for event loops and the C API: recv_into (parts without a message
// object), notify_fd/clear_notify (libzmq's ZMQ_FD, edge-triggered), interrupt (zmq_ctx_term's
// ETERM) and on_shard_event (zmq_socket_monitor).
#include <strix/link/blocking.hpp>
#include <strix/link/poll.hpp>
#include <strix/link/proxy.hpp>

#include <gtest/gtest.h>

#include <poll.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace strix::link;
using namespace std::chrono_literals;

struct collected {
    std::vector<std::string> parts;
    std::vector<bool> more;
    int refs = 0;
};

void collect(void* user, bytes_view b, part* ref, bool more) {
    auto& c = *static_cast<collected*>(user);
    c.parts.emplace_back(as_text(b));
    c.more.push_back(more);
    c.refs += ref != nullptr;
}

bool fd_readable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) == 1;
}

TEST(event_loop_hooks, recv_into_hands_over_every_part_in_order_with_more_flags) {
    context ctx;
    blocking_socket pull(ctx, socket_type::pull), push(ctx, socket_type::push);
    const std::string where = pull.bind("inproc://hooks-recv-into");
    push.connect(where);
    const std::string big(2000, 'b');  // above the pipe's inline size: passed by reference
    message m;
    m.add("one").add("").add(big);
    ASSERT_FALSE(push.send(m));
    collected c;
    ASSERT_TRUE(pull.recv_into(&collect, &c, 5s));
    ASSERT_EQ(c.parts.size(), 3u);
    EXPECT_EQ(c.parts[0], "one");
    EXPECT_EQ(c.parts[1], "");
    EXPECT_EQ(c.parts[2], big);
    EXPECT_EQ(c.more, (std::vector<bool>{true, true, false}));
    EXPECT_EQ(c.refs, 1);
    collected none;
    EXPECT_FALSE(pull.recv_into(&collect, &none, 50ms));
    EXPECT_TRUE(none.parts.empty());
}

TEST(event_loop_hooks, notify_fd_turns_readable_for_a_message_after_it_was_cleared) {
    context ctx;
    blocking_socket pull(ctx, socket_type::pull), push(ctx, socket_type::push);
    const std::string where = pull.bind("tcp://127.0.0.1:*");
    push.connect(where);
    const int fd = pull.notify_fd();
    ASSERT_GE(fd, 0);
    EXPECT_EQ(pull.notify_fd(), fd);  // one per socket
    EXPECT_TRUE(fd_readable(fd, 0));  // readable at first: look before waiting
    pull.clear_notify();
    EXPECT_FALSE(readable(pull));
    // The connection's own events may set it once more; clear until quiet.
    while (fd_readable(fd, 200)) pull.clear_notify();
    ASSERT_FALSE(push.send("ping"));
    ASSERT_TRUE(fd_readable(fd, 5000));
    pull.clear_notify();
    EXPECT_TRUE(readable(pull));
    auto m = pull.recv(0ms);
    ASSERT_TRUE(m);
    EXPECT_EQ((*m)[0].text(), "ping");
}

TEST(event_loop_hooks, interrupt_ends_a_blocked_recv_poll_and_proxy) {
    context ctx;
    blocking_socket a(ctx, socket_type::pull), b(ctx, socket_type::push), c(ctx, socket_type::pull);
    a.bind("inproc://hooks-interrupt-a");
    c.bind("inproc://hooks-interrupt-c");
    std::atomic<int> ended{0};
    std::thread r([&] {
        EXPECT_FALSE(a.recv(blocking_socket::forever));
        ++ended;
    });
    std::thread p([&] {
        poll_item items[] = {{&c, poll_in, 0}};
        EXPECT_EQ(poll(items, -1ms), 0u);
        ++ended;
    });
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(ended.load(), 0);
    EXPECT_FALSE(a.interrupted());
    a.interrupt();
    c.interrupt();
    r.join();
    p.join();
    EXPECT_EQ(ended.load(), 2);
    EXPECT_TRUE(a.interrupted());
    // Later waits return at once too.
    EXPECT_FALSE(a.recv(blocking_socket::forever));
    blocking_socket front(ctx, socket_type::pull), back(ctx, socket_type::push);
    front.interrupt();
    const auto st = proxy(front, back);
    EXPECT_EQ(st.frontend.messages_in, 0u);
}

TEST(event_loop_hooks, on_shard_event_runs_on_the_sockets_shard_for_each_event) {
    context ctx;
    blocking_socket pull(ctx, socket_type::pull);
    std::atomic<int> listening{0}, accepted{0};
    std::atomic<bool> off_shard{false};
    const std::thread::id app = std::this_thread::get_id();
    pull.on_shard_event([&](const socket_event& e) {
        if (std::this_thread::get_id() == app) off_shard = true;
        if (e.what == socket_event::kind::listening) ++listening;
        if (e.what == socket_event::kind::accepted) ++accepted;
    });
    const std::string where = pull.bind("tcp://127.0.0.1:*");
    blocking_socket push(ctx, socket_type::push);
    push.connect(where);
    ASSERT_TRUE(pull.wait_for_peers(1, 5s));
    EXPECT_EQ(listening.load(), 1);
    EXPECT_EQ(accepted.load(), 1);
    EXPECT_FALSE(off_shard.load());
    pull.on_shard_event({});  // stops before the socket goes
}

}  // namespace
