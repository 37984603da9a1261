// unbind and disconnect, as zmq_unbind and zmq_disconnect: the endpoint as bind() returned it
// (or as given, when it named a port); the listener goes (the port, path or name is free at
// return) with the connections it accepted; a disconnect ends its connection and its
// reconnecting; an endpoint the socket never used is ENOENT, a malformed one invalid_argument.
#include "link/link_fixture.hpp"

#include <strix/link/blocking.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <stdexcept>
#include <system_error>

namespace {

using namespace strix::link;
using namespace std::chrono_literals;
using strix::test::eventually;
using strix::test::link_env;
using kind = socket_event::kind;

std::string unique_name(const char* what) {
    static std::atomic<int> seq{0};
    return "strix-unbind-" + std::to_string(::getpid()) + "-" + what + "-" + std::to_string(seq.fetch_add(1));
}

// The error code a call threw, or an empty one.
template <class F>
std::error_code thrown(F&& f) {
    try {
        f();
    } catch (const std::system_error& e) {
        return e.code();
    }
    return {};
}

bool is_enoent(std::error_code ec) { return ec == std::errc::no_such_file_or_directory; }

std::size_t count_of(strix::test::event_log& log, kind k, const std::string& ep) {
    std::size_t n = 0;
    for (auto& e : log.all()) n += e.what == k && e.endpoint == ep;
    return n;
}

TEST(unbind, frees_the_tcp_port_so_another_socket_binds_it_and_closes_the_accepted_peers) {
    link_env env;
    auto& log = env.new_log();
    auto& peer_log = env.new_log();
    auto& pull = env.make(0, socket_type::pull, {}, nullptr, &log);
    const std::string where = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });
    ASSERT_NE(where.find(":0"), where.size() - 2) << "bind returns the real port";
    socket_options slow;
    slow.reconnect_ivl = 5s;  // the peer must not come back within the test
    auto& push = env.make(1, socket_type::push, slow, nullptr, &peer_log);
    env.on(1, [&] { push.connect(where); });
    ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return pull.peers(); }) == 1; }));

    env.on(0, [&] { pull.unbind(where); });
    EXPECT_EQ(count_of(log, kind::closed, where), 1u);  // the listener, as libzmq's ZMQ_EVENT_CLOSED
    // libzmq 4.3 closes the connections the listener accepted too.
    EXPECT_TRUE(eventually([&] { return env.on(0, [&] { return pull.peers(); }) == 0; }));
    EXPECT_TRUE(peer_log.saw(kind::disconnected));

    // The port is free at return: a second socket binds exactly that address, and talks.
    auto& box = env.new_inbox();
    auto& again = env.make(0, socket_type::pull, {}, &box);
    EXPECT_EQ(env.on(0, [&] { return again.bind(where); }), where);
    auto& push2 = env.make(1, socket_type::push);
    env.on(1, [&] { push2.connect(where); });
    ASSERT_FALSE(env.send(push2, {"after"}));
    EXPECT_EQ(box.pop(), (std::vector<std::string>{"after"}));
    // Unbound once: a second unbind of it is ENOENT.
    EXPECT_TRUE(is_enoent(thrown([&] { env.on(0, [&] { pull.unbind(where); }); })));
}

TEST(unbind, takes_the_address_given_to_bind_when_it_named_a_port) {
    link_env env;
    auto& pull = env.make(0, socket_type::pull);
    const std::string any = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });
    env.on(0, [&] { pull.unbind(any); });
    const std::string port = any.substr(any.rfind(':') + 1);
    // The same port again, by number this time, and on every address: "tcp://*:N" and
    // "tcp://0.0.0.0:N" name it.
    const std::string given = "tcp://*:" + port;
    env.on(0, [&] { pull.bind(given); });
    env.on(0, [&] { pull.unbind("tcp://0.0.0.0:" + port); });
    env.on(0, [&] { pull.bind(given); });
    env.on(0, [&] { pull.unbind(given); });
    // A wildcard port names no bind (libzmq resolves it to port 0, which nothing is bound to).
    env.on(0, [&] { pull.bind("tcp://127.0.0.1:" + port); });
    EXPECT_TRUE(is_enoent(thrown([&] { env.on(0, [&] { pull.unbind("tcp://127.0.0.1:*"); }); })));
}

TEST(unbind, frees_an_ipc_path_and_an_inproc_name) {
    link_env env;
    auto& pull = env.make(0, socket_type::pull);
    const std::string path = "/tmp/" + unique_name("ipc") + ".sock";
    const std::string ipc = "ipc://" + path;
    EXPECT_EQ(env.on(0, [&] { return pull.bind(ipc); }), ipc);
    EXPECT_EQ(::access(path.c_str(), F_OK), 0);
    env.on(0, [&] { pull.unbind(ipc); });
    EXPECT_NE(::access(path.c_str(), F_OK), 0) << "the socket file is removed";
    auto& other = env.make(1, socket_type::pull);
    env.on(1, [&] { other.bind(ipc); });

    // inproc: the name is free again; a connection made before stays, as in libzmq.
    auto& box = env.new_inbox();
    auto& pull2 = env.make(0, socket_type::pull, {}, &box);
    const std::string name = "inproc://" + unique_name("inproc");
    env.on(0, [&] { pull2.bind(name); });
    auto& push = env.make(1, socket_type::push);
    env.on(1, [&] { push.connect(name); });
    env.on(0, [&] { pull2.unbind(name); });
    auto& taker = env.make(1, socket_type::pull);
    env.on(1, [&] { taker.bind(name); });
    ASSERT_FALSE(env.send(push, {"still"}));
    EXPECT_EQ(box.pop(), (std::vector<std::string>{"still"}));
}

TEST(disconnect, stops_reconnecting_to_an_endpoint_that_never_answers) {
    link_env env;
    auto& log = env.new_log();
    socket_options o;
    o.reconnect_ivl = 20ms;
    o.reconnect_ivl_max = 20ms;
    auto& push = env.make(0, socket_type::push, o, nullptr, &log);
    const std::string dead = "tcp://127.0.0.1:1";
    env.on(0, [&] { push.connect(dead); });
    ASSERT_TRUE(eventually([&] { return log.count(kind::connect_retried) >= 3; }));
    env.on(0, [&] { push.disconnect(dead); });
    const std::size_t at_disconnect = log.count(kind::connect_retried);
    std::this_thread::sleep_for(300ms);  // 15 reconnect intervals
    EXPECT_EQ(log.count(kind::connect_retried), at_disconnect);
    EXPECT_TRUE(is_enoent(thrown([&] { env.on(0, [&] { push.disconnect(dead); }); })));
}

TEST(disconnect, ends_a_live_connection_for_good_and_leaves_the_others) {
    link_env env;
    auto& box_a = env.new_inbox();
    auto& box_b = env.new_inbox();
    auto& a = env.make(0, socket_type::pull, {}, &box_a);
    auto& b = env.make(0, socket_type::pull, {}, &box_b);
    const std::string ea = env.on(0, [&] { return a.bind("tcp://127.0.0.1:*"); });
    const std::string eb = env.on(0, [&] { return b.bind("ipc://@" + unique_name("live")); });
    socket_options o;
    o.reconnect_ivl = 20ms;
    auto& push = env.make(1, socket_type::push, o);
    env.on(1, [&] {
        push.connect(ea);
        push.connect(eb);
    });
    ASSERT_TRUE(eventually([&] { return env.on(1, [&] { return push.peers(); }) == 2; }));
    env.on(1, [&] { push.disconnect(ea); });
    EXPECT_TRUE(eventually([&] { return env.on(0, [&] { return a.peers(); }) == 0; }));
    std::this_thread::sleep_for(200ms);  // ten reconnect intervals: it does not come back
    EXPECT_EQ(env.on(0, [&] { return a.peers(); }), 0u);
    EXPECT_EQ(env.on(1, [&] { return push.peers(); }), 1u);
    for (int i = 0; i < 5; ++i) ASSERT_FALSE(env.send(push, {"m" + std::to_string(i)}));
    for (int i = 0; i < 5; ++i) EXPECT_EQ(box_b.pop(), (std::vector<std::string>{"m" + std::to_string(i)}));
    EXPECT_TRUE(box_a.stays_empty());
}

TEST(disconnect, ends_an_inproc_connection_and_a_connect_waiting_for_its_bind) {
    link_env env;
    auto& box = env.new_inbox();
    auto& pull = env.make(0, socket_type::pull, {}, &box);
    const std::string name = "inproc://" + unique_name("dis");
    env.on(0, [&] { pull.bind(name); });
    auto& push = env.make(1, socket_type::push);
    env.on(1, [&] { push.connect(name); });
    ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return pull.peers(); }) == 1; }));
    env.on(1, [&] { push.disconnect(name); });
    EXPECT_TRUE(eventually([&] { return env.on(0, [&] { return pull.peers(); }) == 0; }));
    EXPECT_EQ(env.on(1, [&] { return push.peers(); }), 0u);

    // A connect that waits for its bind is withdrawn: the later bind gets no peer.
    const std::string later = "inproc://" + unique_name("later");
    env.on(1, [&] { push.connect(later); });
    env.on(1, [&] { push.disconnect(later); });
    auto& binder = env.make(0, socket_type::pull);
    env.on(0, [&] { binder.bind(later); });
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(env.on(0, [&] { return binder.peers(); }), 0u);
}

// A shard application may end an endpoint from a callback of the very connection it ends.
TEST(endpoints, unbind_and_disconnect_from_inside_on_message_of_that_connection) {
    link_env env;
    auto& binder = env.make(0, socket_type::pull);
    auto& connector = env.make(1, socket_type::pull);
    std::string bound;
    auto& push_a = env.make(0, socket_type::push);
    const std::string a_ep = env.on(0, [&] { return push_a.bind("tcp://127.0.0.1:*"); });
    std::atomic<int> seen_binder{0}, seen_connector{0};
    bound = env.on(0, [&] {
        binder.on_message([&](message_view) {
            if (seen_binder++ == 0) binder.unbind(bound);
        });
        return binder.bind("tcp://127.0.0.1:*");
    });
    env.on(1, [&] {
        connector.on_message([&](message_view) {
            if (seen_connector++ == 0) connector.disconnect(a_ep);
        });
        connector.connect(a_ep);
    });
    auto& push_b = env.make(1, socket_type::push);
    env.on(1, [&] { push_b.connect(bound); });
    // Multipart, so the receiving pipe has work left after the callback returns.
    ASSERT_FALSE(env.send(push_b, {"one", "two", "three"}));
    ASSERT_FALSE(env.send(push_a, {"one", "two", "three"}));
    EXPECT_TRUE(eventually([&] { return seen_binder.load() >= 1 && seen_connector.load() >= 1; }));
    EXPECT_TRUE(eventually([&] { return env.on(0, [&] { return binder.peers(); }) == 0; }));
    EXPECT_TRUE(eventually([&] { return env.on(1, [&] { return connector.peers(); }) == 0; }));
    EXPECT_TRUE(is_enoent(thrown([&] { env.on(0, [&] { binder.unbind(bound); }); })));
    EXPECT_TRUE(is_enoent(thrown([&] { env.on(1, [&] { connector.disconnect(a_ep); }); })));
}

TEST(endpoints, unknown_ones_are_enoent_and_malformed_ones_invalid_argument) {
    link_env env;
    auto& s = env.make(0, socket_type::dealer);
    const std::string bound = env.on(0, [&] { return s.bind("tcp://127.0.0.1:*"); });
    env.on(0, [&] { s.connect("ipc://@" + unique_name("conn")); });
    const auto unbind = [&](const std::string& ep) { return thrown([&] { env.on(0, [&] { s.unbind(ep); }); }); };
    const auto disconnect = [&](const std::string& ep) {
        return thrown([&] { env.on(0, [&] { s.disconnect(ep); }); });
    };
    // Never bound or connected, per transport (including one the socket never used at all).
    EXPECT_TRUE(is_enoent(unbind("tcp://127.0.0.1:1")));
    EXPECT_TRUE(is_enoent(unbind("ipc:///tmp/" + unique_name("none"))));
    EXPECT_TRUE(is_enoent(unbind("inproc://" + unique_name("none"))));
    EXPECT_TRUE(is_enoent(disconnect("tcp://127.0.0.1:1")));
    EXPECT_TRUE(is_enoent(disconnect("inproc://" + unique_name("none"))));
    // A bind is not a connect, nor the reverse.
    EXPECT_TRUE(is_enoent(disconnect(bound)));
    // Malformed: no transport, no port, a host name.
    EXPECT_THROW(env.on(0, [&] { s.unbind("nope://x"); }), std::invalid_argument);
    EXPECT_THROW(env.on(0, [&] { s.unbind("tcp://127.0.0.1"); }), std::invalid_argument);
    EXPECT_THROW(env.on(0, [&] { s.disconnect("tcp://"); }), std::invalid_argument);
    EXPECT_THROW(env.on(0, [&] { s.disconnect("inproc://"); }), std::invalid_argument);
    // What was bound is still there.
    env.on(0, [&] { s.unbind(bound); });
}

TEST(endpoints, the_blocking_api_unbinds_and_disconnects_on_the_callers_thread) {
    context ctx(2);
    socket_options o;
    o.linger = 0ms;
    blocking_socket pull(ctx, socket_type::pull, o);
    const std::string where = pull.bind("tcp://127.0.0.1:*");
    blocking_socket push(ctx, socket_type::push, o);
    push.connect(where);
    ASSERT_FALSE(push.send("one", 5s));
    ASSERT_TRUE(pull.recv(5s));
    push.disconnect(where);
    EXPECT_TRUE(is_enoent(thrown([&] { push.disconnect(where); })));
    pull.unbind(where);
    EXPECT_TRUE(is_enoent(thrown([&] { pull.unbind(where); })));
    EXPECT_THROW(pull.unbind("tcp://x"), std::invalid_argument);
    // The port is free for another socket.
    blocking_socket again(ctx, socket_type::pull, o);
    EXPECT_EQ(again.bind(where), where);
}

// libzmq's peer takes the disconnect's command before its next send: the blocking API's
// disconnect returns once the peers it ended have detached, on one shard or across two.
TEST(endpoints, an_inproc_peer_has_heard_the_disconnect_when_it_returns) {
    for (unsigned shards : {1u, 2u}) {
        context ctx(shards);
        socket_options o;
        o.linger = 0ms;
        for (int round = 0; round < 100; ++round) {
            const std::string name = "inproc://" + unique_name("heard");
            blocking_socket push(ctx, socket_type::push, o);
            push.bind(name);
            blocking_socket pull(ctx, socket_type::pull, o);
            pull.connect(name);
            ASSERT_FALSE(push.send("hi", 5s));
            ASSERT_TRUE(pull.recv(5s));
            pull.disconnect(name);
            ASSERT_FALSE(push.wait_for_peers(1, 0ms)) << shards << " shards, round " << round;
        }
    }
}

}  // namespace
