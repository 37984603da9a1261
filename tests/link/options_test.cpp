// Socket options against libzmq: conflate, probe_router, xpub_manual, xpub_welcome_msg,
// immediate and the reconnect interval, each with a libzmq socket on the other end (and, where
// libzmq's own behaviour is the point, libzmq doing the same thing in the same test).
#include "link/interop_support.hpp"
#include "support/proc_tcp.hpp"

#include <strix/link/blocking.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace {

using namespace strix::link;
using namespace std::chrono_literals;
namespace zmq = strix::test::zmq;
using strs = std::vector<std::string>;
using clock_type = std::chrono::steady_clock;

std::string text(const message& m, std::size_t i = 0) { return std::string(m[i].text()); }

socket_options quick() {
    socket_options o;
    o.linger = 0ms;  // tests whose messages nobody takes must not hold ~context
    o.reconnect_ivl = 20ms;
    return o;
}

TEST(options, conflate_recv_returns_only_the_newest_message_as_libzmq_does) {
    zmq::context zctx;
    // libzmq, for reference: a conflating PULL keeps only the last of ten.
    zmq::socket zpull(zctx, ZMQ_PULL);
    zpull.set(ZMQ_CONFLATE, 1);
    const std::string za = zpull.bind("tcp://127.0.0.1:*");
    zmq::socket zpush(zctx, ZMQ_PUSH);
    zpush.connect(za);
    for (int i = 0; i < 10; ++i) ASSERT_EQ(zpush.send({"m" + std::to_string(i)}), 0);
    std::this_thread::sleep_for(300ms);
    auto zm = zpull.recv();
    ASSERT_TRUE(zm);
    EXPECT_EQ((*zm)[0], "m9");
    EXPECT_FALSE(zpull.recv(200ms));

    context ctx(1);
    socket_options o = quick();
    o.conflate = true;
    blocking_socket pull(ctx, socket_type::pull, o);
    const std::string a = pull.bind("tcp://127.0.0.1:*");
    zmq::socket push(zctx, ZMQ_PUSH);
    push.connect(a);
    for (int i = 0; i < 10; ++i) ASSERT_EQ(push.send({"m" + std::to_string(i)}), 0);
    std::this_thread::sleep_for(300ms);
    auto m = pull.recv(5s);
    ASSERT_TRUE(m);
    EXPECT_EQ(text(*m), "m9");
    EXPECT_FALSE(pull.recv(200ms));
    // Later messages still come, one at a time.
    ASSERT_EQ(push.send({"m10"}), 0);
    m = pull.recv(5s);
    ASSERT_TRUE(m);
    EXPECT_EQ(text(*m), "m10");
}

TEST(options, conflate_send_keeps_only_the_newest_message_waiting_for_a_peer) {
    strix::test::temp_dir dir;
    const std::string a = "ipc://" + dir.path() + "/conflate.sock";
    context ctx(1);
    socket_options o = quick();
    o.conflate = true;
    o.sndhwm = 4;  // conflate must not make sends wait at the mark either
    blocking_socket push(ctx, socket_type::push, o);
    push.connect(a);  // nobody there yet
    for (int i = 0; i < 10; ++i) ASSERT_FALSE(push.send("m" + std::to_string(i), 2s)) << i;
    std::this_thread::sleep_for(100ms);
    zmq::context zctx;
    zmq::socket pull(zctx, ZMQ_PULL);
    pull.bind(a);
    auto m = pull.recv();
    ASSERT_TRUE(m);
    EXPECT_EQ((*m)[0], "m9");
    EXPECT_FALSE(pull.recv(200ms));
}

TEST(options, probe_router_sends_an_empty_message_a_libzmq_router_receives) {
    zmq::context zctx;
    zmq::socket router(zctx, ZMQ_ROUTER);
    const std::string a = router.bind("tcp://127.0.0.1:*");
    context ctx(1);
    socket_options o = quick();
    o.probe_router = true;
    o.routing_id = "probe-dealer";
    blocking_socket dealer(ctx, socket_type::dealer, o);
    dealer.connect(a);
    auto m = router.recv();
    ASSERT_TRUE(m) << "the ROUTER hears the DEALER before the DEALER sends anything";
    EXPECT_EQ(*m, (strs{"probe-dealer", ""}));
    // The ROUTER can now address it.
    ASSERT_EQ(router.send({"probe-dealer", "hi"}), 0);
    auto r = dealer.recv(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(text(*r), "hi");

    // A ROUTER probing a ROUTER, as libzmq's test does.
    o.routing_id = "probe-router";
    blocking_socket r2(ctx, socket_type::router, o);
    r2.connect(a);
    m = router.recv();
    ASSERT_TRUE(m);
    EXPECT_EQ(*m, (strs{"probe-router", ""}));

    // And the other way: a libzmq DEALER's probe reaches a strix ROUTER as [id, ""].
    blocking_socket srouter(ctx, socket_type::router, quick());
    const std::string sa = srouter.bind("tcp://127.0.0.1:*");
    zmq::socket zdealer(zctx, ZMQ_DEALER);
    zdealer.set(ZMQ_ROUTING_ID, std::string("zd"));
    zdealer.set(ZMQ_PROBE_ROUTER, 1);
    zdealer.connect(sa);
    auto p = srouter.recv(5s);
    ASSERT_TRUE(p);
    ASSERT_EQ(p->size(), 2u);
    EXPECT_EQ(text(*p, 0), "zd");
    EXPECT_EQ((*p)[1].size(), 0u);

    // Without the option nothing comes.
    socket_options plain = quick();
    plain.routing_id = "quiet";
    blocking_socket d2(ctx, socket_type::dealer, plain);
    d2.connect(a);
    ASSERT_TRUE(d2.wait_for_peers(1, 5s));
    EXPECT_FALSE(router.recv(200ms));
}

TEST(options, xpub_welcome_msg_reaches_a_libzmq_sub_subscribed_to_it) {
    context ctx(1);
    socket_options o = quick();
    o.xpub_welcome_msg = "W-hello";
    blocking_socket xpub(ctx, socket_type::xpub, o);
    const std::string a = xpub.bind("tcp://127.0.0.1:*");
    zmq::context zctx;
    zmq::socket sub(zctx, ZMQ_SUB);
    sub.subscribe("W");
    sub.connect(a);
    auto m = sub.recv();
    ASSERT_TRUE(m);
    EXPECT_EQ(*m, (strs{"W-hello"}));
    auto s = xpub.recv(5s);
    ASSERT_TRUE(s);
    EXPECT_EQ(text(*s), std::string("\x01") + "W");
    // A SUB subscribed elsewhere filters it out, as with libzmq's XPUB.
    zmq::socket other(zctx, ZMQ_SUB);
    other.subscribe("X");
    other.connect(a);
    EXPECT_FALSE(other.recv(300ms));
}

TEST(options, xpub_manual_passes_every_subscription_and_applies_what_the_application_says) {
    context ctx(1);
    socket_options o = quick();
    o.xpub_manual = true;
    blocking_socket xpub(ctx, socket_type::xpub, o);
    const std::string a = xpub.bind("tcp://127.0.0.1:*");
    zmq::context zctx;
    zmq::socket xsub(zctx, ZMQ_XSUB);  // no local filter: what arrives is what XPUB sent
    xsub.connect(a);
    ASSERT_EQ(xsub.send({std::string("\x01") + "A"}), 0);
    ASSERT_EQ(xsub.send({std::string("\x01") + "A"}), 0);
    for (int i = 0; i < 2; ++i) {
        auto s = xpub.recv(5s);
        ASSERT_TRUE(s) << "manual passes duplicates too";
        EXPECT_EQ(text(*s), std::string("\x01") + "A");
    }
    // Not applied by the socket: nothing published reaches the peer.
    ASSERT_FALSE(xpub.send("A1"));
    EXPECT_FALSE(xsub.recv(200ms));
    // The application subscribes the peer to B instead.
    xpub.subscribe("B");
    ASSERT_FALSE(xpub.send("A2"));
    ASSERT_FALSE(xpub.send("B1"));
    auto m = xsub.recv();
    ASSERT_TRUE(m);
    EXPECT_EQ(*m, (strs{"B1"}));
    EXPECT_FALSE(xsub.recv(200ms));
    xpub.unsubscribe("B");
    ASSERT_FALSE(xpub.send("B2"));
    EXPECT_FALSE(xsub.recv(200ms));
}

TEST(options, immediate_waits_for_a_completed_connection_like_libzmq) {
    zmq::context zctx;
    // libzmq, for reference: with ZMQ_IMMEDIATE and no connection, a send would block.
    zmq::socket zpush(zctx, ZMQ_PUSH);
    zpush.set(ZMQ_IMMEDIATE, 1);
    zpush.connect("tcp://127.0.0.1:1");
    EXPECT_FALSE(zpush.try_send({"x"}));

    context ctx(1);
    socket_options o = quick();
    o.immediate = true;
    blocking_socket push(ctx, socket_type::push, o);
    push.connect("tcp://127.0.0.1:1");
    const auto t0 = clock_type::now();
    EXPECT_EQ(push.send("x", 200ms), link_errc::would_block);
    EXPECT_GE(clock_type::now() - t0, 190ms);
    // Without it, the message waits in the socket (libzmq's default as well).
    blocking_socket queued(ctx, socket_type::push, quick());
    queued.connect("tcp://127.0.0.1:1");
    EXPECT_FALSE(queued.send("x", 0ms));

    // With a live peer beside the dead endpoint, every message goes to the live one.
    zmq::socket pull(zctx, ZMQ_PULL);
    push.connect(pull.bind("tcp://127.0.0.1:*"));
    for (int i = 0; i < 10; ++i) ASSERT_FALSE(push.send("m" + std::to_string(i), 5s)) << i;
    for (int i = 0; i < 10; ++i) {
        auto m = pull.recv();
        ASSERT_TRUE(m) << "message " << i << " was queued for the endpoint that never connected";
        EXPECT_EQ((*m)[0], "m" + std::to_string(i));
    }
}

TEST(options, reconnect_ivl_spaces_attempts_and_doubles_up_to_reconnect_ivl_max) {
    context ctx(1);
    socket_options o = quick();
    o.reconnect_ivl = 100ms;
    o.reconnect_ivl_max = 400ms;
    blocking_socket push(ctx, socket_type::push, o);
    push.connect("tcp://127.0.0.1:1");
    std::vector<clock_type::time_point> retried;
    const auto until = clock_type::now() + 2500ms;
    while (clock_type::now() < until) {
        auto e = push.next_event(100ms);
        if (e && e->what == socket_event::kind::connect_retried) retried.push_back(clock_type::now());
    }
    ASSERT_GE(retried.size(), 5u);
    std::vector<long long> gaps;
    for (std::size_t i = 1; i < retried.size(); ++i)
        gaps.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(retried[i] - retried[i - 1]).count());
    // Delays of 100, 200, then 400 ms for good (libzmq's ZMQ_RECONNECT_IVL doubling up to
    // ZMQ_RECONNECT_IVL_MAX). Each gap is measured as the application hears the event, so one
    // may move by a scheduling delay; their mean may not.
    EXPECT_GE(gaps[0], 70);
    EXPECT_LT(gaps[0], 180);
    EXPECT_GE(gaps[1], 150);
    EXPECT_LT(gaps[1], 330);
    long long sum = 0;
    for (std::size_t i = 2; i < gaps.size(); ++i) {
        EXPECT_GE(gaps[i], 300) << "capped at reconnect_ivl_max, gap " << i;
        EXPECT_LT(gaps[i], 700) << "gap " << i;
        sum += gaps[i];
    }
    const long long mean = sum / static_cast<long long>(gaps.size() - 2);
    EXPECT_GE(mean, 370);
    EXPECT_LT(mean, 470);
}

}  // namespace

namespace {

std::uint16_t port_of(const std::string& address) {
    return static_cast<std::uint16_t>(std::stoul(address.substr(address.rfind(':') + 1)));
}

// The keepalive timer of the client end of a connection to `server_port` (/proc/net/tcp).
std::optional<strix::test::tcp_timer> client_timer(std::uint16_t server_port) {
    std::ifstream f("/proc/net/tcp");
    std::string line;
    std::getline(f, line);
    std::optional<strix::test::tcp_timer> found;
    while (std::getline(f, line)) {
        std::istringstream in(line);
        std::string sl, loc, rem, state;
        in >> sl >> loc >> rem >> state;
        auto port = [](const std::string& x) {
            return static_cast<std::uint16_t>(std::stoul(x.substr(x.find(':') + 1), nullptr, 16));
        };
        // Established connections only: a TIME_WAIT entry left by another test whose server had
        // this port number before (timer 3 for a minute) would otherwise be taken for ours.
        if (state == "01" && port(rem) == server_port) found = strix::test::proc_tcp_timer(port(loc), server_port);
    }
    return found;
}

TEST(options, tcp_keepalive_arms_the_sockets_keepalive_timer_as_libzmqs_does) {
    zmq::context zctx;
    // libzmq, for reference: ZMQ_TCP_KEEPALIVE + _IDLE on a connecting PUSH.
    zmq::socket zpull(zctx, ZMQ_PULL);
    const std::string za = zpull.bind("tcp://127.0.0.1:*");
    zmq::socket zpush(zctx, ZMQ_PUSH);
    zpush.set(ZMQ_TCP_KEEPALIVE, 1);
    zpush.set(ZMQ_TCP_KEEPALIVE_IDLE, 44);
    zpush.connect(za);
    ASSERT_EQ(zpush.send({"z"}), 0);
    ASSERT_TRUE(zpull.recv(5s));
    // Timer 2 once nothing is in flight (right after a send the retransmit timer, 1, may show).
    std::optional<strix::test::tcp_timer> zt;
    ASSERT_TRUE(strix::test::eventually([&] {
        zt = client_timer(port_of(za));
        return zt && zt->kind == 2;
    }));
    EXPECT_GT(zt->due_s, 30);

    // strix, the same options on its connecting PUSH.
    context ctx(1);
    socket_options o = quick();
    o.tcp_keepalive = 1;
    o.tcp_keepalive_idle = 44;
    zmq::socket pull(zctx, ZMQ_PULL);
    const std::string a = pull.bind("tcp://127.0.0.1:*");
    blocking_socket push(ctx, socket_type::push, o);
    push.connect(a);
    ASSERT_FALSE(push.send("s", 5s));
    ASSERT_TRUE(pull.recv(5s));
    std::optional<strix::test::tcp_timer> st;
    ASSERT_TRUE(strix::test::eventually([&] {
        st = client_timer(port_of(a));
        return st && st->kind == 2;
    })) << "keepalive timer armed, as libzmq's";
    EXPECT_GT(st->due_s, 30);
    EXPECT_LE(st->due_s, 44.01);
}

}  // namespace
