// The blocking API: ordinary threads with a few lines each, a slow reader pushing back on its
// sender instead of growing memory, and PUB/SUB without losing the first messages.
#include "support/loopback.hpp"

#include <strix/link/blocking.hpp>

#include <gtest/gtest.h>

#include <thread>

namespace {

using namespace strix::link;
using namespace std::chrono_literals;

TEST(blocking, a_req_rep_client_and_server_in_a_few_lines) {
    context ctx(2);
    blocking_socket rep(ctx, socket_type::rep);
    const std::string where = rep.bind("tcp://127.0.0.1:*");
    std::thread server([&] {
        for (int i = 0; i < 3; ++i) {
            auto q = rep.recv(5s);
            ASSERT_TRUE(q);
            rep.send("re:" + std::string((*q)[0].text()));
        }
    });
    blocking_socket req(ctx, socket_type::req);
    req.connect(where);
    for (int i = 0; i < 3; ++i) {
        ASSERT_FALSE(req.send("q" + std::to_string(i), 5s));
        auto r = req.recv(5s);
        ASSERT_TRUE(r);
        EXPECT_EQ((*r)[0].text(), "re:q" + std::to_string(i));
    }
    server.join();
}

TEST(blocking, a_slow_reader_pushes_back_on_the_sender_and_loses_nothing) {
    context ctx(2);
    socket_options small;
    small.rcvhwm = 8;
    small.sndhwm = 8;
    blocking_socket pull(ctx, socket_type::pull, small);
    const std::string where = pull.bind("tcp://127.0.0.1:*");
    blocking_socket push(ctx, socket_type::push, small);
    push.connect(where);
    ASSERT_TRUE(push.wait_for_peers(1, 5s));
    // Nobody reads: with 64 KiB messages the kernel buffers, then the marks, fill up and a send
    // with a short timeout says would_block.
    const std::string body(64 * 1024, 'b');
    int sent = 0;
    std::error_code last;
    while (sent < 2000) {
        message m;
        std::string stamp = std::to_string(sent);
        m.add(stamp).add(body);
        last = push.send(m, 200ms);
        if (last) break;
        ++sent;
    }
    EXPECT_EQ(last, link_errc::would_block) << "the sender was never held back";
    EXPECT_LT(sent, 2000);
    // Now read everything: every message arrives once, in order, and the sender goes on.
    std::thread more([&] {
        for (int i = sent; i < sent + 50; ++i) {
            message m;
            m.add(std::to_string(i)).add(body);
            ASSERT_FALSE(push.send(m, 10s));
        }
    });
    for (int i = 0; i < sent + 50; ++i) {
        auto m = pull.recv(10s);
        ASSERT_TRUE(m) << "message " << i << " of " << sent + 50;
        ASSERT_EQ((*m)[0].text(), std::to_string(i));
        ASSERT_EQ((*m)[1].size(), body.size());
    }
    more.join();
    EXPECT_FALSE(pull.recv(100ms)) << "nothing more than what was sent";
}

TEST(blocking, a_publisher_that_waits_for_its_subscribers_loses_no_message) {
    context ctx(2);
    blocking_socket pub(ctx, socket_type::pub);
    const std::string where = pub.bind("ipc://@strix-blocking-" + std::to_string(::getpid()));
    blocking_socket sub(ctx, socket_type::sub);
    sub.subscribe("");
    sub.connect(where);
    ASSERT_TRUE(pub.wait_for_subscribers(1, 5s));
    for (int i = 0; i < 100; ++i) ASSERT_FALSE(pub.send(std::to_string(i)));
    for (int i = 0; i < 100; ++i) {
        auto m = sub.recv(5s);
        ASSERT_TRUE(m);
        EXPECT_EQ((*m)[0].text(), std::to_string(i)) << "the first messages were lost (slow joiner)";
    }
    bool saw_subscribed = false;
    while (auto e = pub.next_event()) saw_subscribed |= e->what == socket_event::kind::subscribed;
    EXPECT_TRUE(saw_subscribed);
}

TEST(blocking, inproc_between_threads_with_a_dealer_and_a_router) {
    context ctx(2);
    blocking_socket router(ctx, socket_type::router);
    router.bind("inproc://blocking-router");
    socket_options named;
    named.routing_id = "worker";
    blocking_socket dealer(ctx, socket_type::dealer, named);
    dealer.connect("inproc://blocking-router");
    ASSERT_FALSE(dealer.send(message{as_bytes("ready")}, 5s));
    auto m = router.recv(5s);
    ASSERT_TRUE(m);
    ASSERT_EQ(m->size(), 2u);
    EXPECT_EQ((*m)[0].text(), "worker");
    message reply;
    reply.add("worker").add("job-1");
    ASSERT_FALSE(router.send(reply, 5s));
    auto j = dealer.recv(5s);
    ASSERT_TRUE(j);
    EXPECT_EQ((*j)[0].text(), "job-1");
}

}  // namespace
