// Per-message properties (message_properties, what zmq_msg_gets reads): a received message
// points at its connection's set, on shard sockets (message_view::properties) and through the
// blocking API (message::properties after recv), over tcp and ipc, with messages of several
// connections interleaved and a REP's queued requests keeping their own; inproc messages have
// none; names compare without regard to case and Routing-Id finds Identity.
#include "link/interop_support.hpp"

#include <strix/link/blocking.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <map>
#include <mutex>
#include <thread>

namespace {

using namespace strix;
using namespace strix::test;
using link::blocking_socket;
using link::socket_type;

link::socket_options named(std::string id) {
    link::socket_options o;
    o.linger = std::chrono::milliseconds(0);
    o.routing_id = std::move(id);
    return o;
}

std::string prop(const link::message_properties_ptr& p, std::string_view name) {
    if (!p) return "(no properties)";
    const std::string* v = p->get(name);
    return v ? *v : "(none)";
}

TEST(message_properties, lookup_ignores_case_and_routing_id_finds_identity) {
    const link::message_properties p({{"Socket-Type", "DEALER"}, {"Identity", "d1"}, {"X-Extra", ""}});
    ASSERT_TRUE(p.get("socket-type"));
    EXPECT_EQ(*p.get("socket-type"), "DEALER");
    EXPECT_EQ(*p.get("Routing-Id"), "d1");
    EXPECT_EQ(*p.get("identity"), "d1");
    ASSERT_TRUE(p.get("X-Extra"));
    EXPECT_EQ(*p.get("X-Extra"), "");
    EXPECT_EQ(p.get("User-Id"), nullptr);
    EXPECT_EQ(p.entries().size(), 3u);
}

TEST(message_properties, shard_router_sees_each_dealers_own_set_interleaved) {
    link_env env;
    std::mutex mu;
    std::vector<std::pair<std::string, link::message_properties_ptr>> got;  // first part, properties
    auto& router = env.make(0, socket_type::router, named(""));
    env.on(0, [&] {
        router.on_message([&](link::message_view m) {
            std::lock_guard lk(mu);
            got.emplace_back(std::string(m.text(0)), m.properties());
        });
    });
    const std::string where = env.on(0, [&] { return router.bind("tcp://127.0.0.1:*"); });
    auto& a = env.make(1, socket_type::dealer, named("alpha"));
    auto& b = env.make(1, socket_type::dealer, named("beta"));
    env.on(1, [&] {
        a.connect(where);
        b.connect(where);
    });
    ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return router.peers(); }) == 2; }));
    for (int i = 0; i < 100; ++i) {
        ASSERT_FALSE(env.send(a, {"x"}));
        ASSERT_FALSE(env.send(b, {"y"}));
    }
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lk(mu);
        return got.size() == 200;
    }));
    std::lock_guard lk(mu);
    std::map<std::string, const link::message_properties*> sets;
    for (auto& [id, p] : got) {
        ASSERT_TRUE(p);
        EXPECT_EQ(prop(p, "Identity"), id);
        EXPECT_EQ(prop(p, "Routing-Id"), id);
        EXPECT_EQ(prop(p, "Socket-Type"), "DEALER");
        EXPECT_EQ(prop(p, "Peer-Address"), "127.0.0.1");
        EXPECT_EQ(prop(p, "User-Id"), "(none)");  // no ZAP
        // One set per connection, shared by its messages.
        auto [it, fresh] = sets.emplace(id, p.get());
        if (!fresh) {
            EXPECT_EQ(it->second, p.get());
        }
    }
    EXPECT_EQ(sets.size(), 2u);
}

TEST(message_properties, blocking_recv_carries_them_over_tcp_and_ipc_but_not_inproc) {
    temp_dir dir;
    link::context ctx(1);
    blocking_socket pull(ctx, socket_type::pull, named(""));
    const std::string tcp_at = pull.bind("tcp://127.0.0.1:*");
    const std::string ipc_at = pull.bind("ipc://" + dir.path() + "/p.sock");
    pull.bind("inproc://props");
    link::context other(1);
    blocking_socket t(other, socket_type::push, named(""));
    t.connect(tcp_at);
    blocking_socket u(other, socket_type::push, named(""));
    u.connect(ipc_at);
    blocking_socket i(ctx, socket_type::push, named(""));
    i.connect("inproc://props");
    // Taking turns, so that consecutive messages come from different connections.
    for (int n = 0; n < 30; ++n) {
        ASSERT_FALSE(t.send("tcp", std::chrono::seconds(5)));
        ASSERT_FALSE(u.send("ipc", std::chrono::seconds(5)));
        ASSERT_FALSE(i.send("inproc", std::chrono::seconds(5)));
    }
    // libzmq names an ipc peer "localhost:uid:gid:pid"; the peer is this process.
    const std::string me =
        "localhost:" + std::to_string(::getuid()) + ":" + std::to_string(::getgid()) + ":" + std::to_string(::getpid());
    std::map<std::string, int> seen;
    for (int n = 0; n < 90; ++n) {
        auto m = pull.recv(std::chrono::seconds(5));
        ASSERT_TRUE(m);
        const std::string from(m->size() ? (*m)[0].text() : "");
        ++seen[from];
        const auto& p = m->properties();
        if (from == "inproc") {
            EXPECT_FALSE(p);
            continue;
        }
        ASSERT_TRUE(p) << from;
        EXPECT_EQ(prop(p, "Socket-Type"), "PUSH");
        EXPECT_EQ(prop(p, "Identity"), "(none)");  // PUSH announces none
        EXPECT_EQ(prop(p, "Peer-Address"), from == "tcp" ? "127.0.0.1" : me);
    }
    EXPECT_EQ(seen["tcp"], 30);
    EXPECT_EQ(seen["ipc"], 30);
    EXPECT_EQ(seen["inproc"], 30);
}

TEST(message_properties, recv_into_hands_them_over_once) {
    link::context ctx(1);
    blocking_socket pull(ctx, socket_type::pull, named(""));
    const std::string where = pull.bind("tcp://127.0.0.1:*");
    pull.bind("inproc://props-into");
    link::context other(1);
    blocking_socket t(other, socket_type::push, named(""));
    t.connect(where);
    ASSERT_FALSE(t.send("tcp", std::chrono::seconds(5)));
    std::string got;
    auto sink = [](void* user, link::bytes_view b, link::part*, bool) {
        *static_cast<std::string*>(user) += std::string(link::as_text(b));
    };
    ASSERT_TRUE(pull.recv_into(sink, &got, std::chrono::seconds(5)));
    EXPECT_EQ(got, "tcp");
    const auto p = pull.received_properties();
    EXPECT_EQ(prop(p, "Socket-Type"), "PUSH");
    EXPECT_EQ(prop(p, "Peer-Address"), "127.0.0.1");
    EXPECT_FALSE(pull.received_properties());  // handed over already

    blocking_socket i(ctx, socket_type::push, named(""));
    i.connect("inproc://props-into");
    ASSERT_FALSE(i.send("inproc", std::chrono::seconds(5)));
    got.clear();
    ASSERT_TRUE(pull.recv_into(sink, &got, std::chrono::seconds(5)));
    EXPECT_EQ(got, "inproc");
    EXPECT_FALSE(pull.received_properties());
}

TEST(message_properties, a_reps_queued_requests_keep_their_senders_set) {
    link::context ctx(1);
    blocking_socket rep(ctx, socket_type::rep, named(""));
    const std::string where = rep.bind("tcp://127.0.0.1:*");
    link::context other(1);
    std::vector<std::unique_ptr<blocking_socket>> reqs;
    for (int k = 0; k < 4; ++k) {
        reqs.push_back(std::make_unique<blocking_socket>(other, socket_type::req, named("req-" + std::to_string(k))));
        reqs.back()->connect(where);
    }
    // All four ask before the REP answers any: three wait in the REP's queue.
    for (int k = 0; k < 4; ++k) ASSERT_FALSE(reqs[static_cast<std::size_t>(k)]->send("req-" + std::to_string(k)));
    for (int k = 0; k < 4; ++k) {
        auto q = rep.recv(std::chrono::seconds(5));
        ASSERT_TRUE(q);
        EXPECT_EQ(prop(q->properties(), "Identity"), std::string((*q)[0].text()));
        EXPECT_EQ(prop(q->properties(), "Socket-Type"), "REQ");
        ASSERT_FALSE(rep.send("ok"));
    }
    for (auto& r : reqs) EXPECT_TRUE(r->recv(std::chrono::seconds(5)));
}

TEST(message_properties, libzmq_peer_announces_its_own_and_a_view_copy_keeps_them) {
    zmq::context zctx;
    link_env env;
    link::message kept;
    std::mutex mu;
    auto& pull = env.make(0, socket_type::pull, named(""));
    env.on(0, [&] {
        pull.on_message([&](link::message_view m) {
            std::lock_guard lk(mu);
            kept = m.copy();
        });
    });
    const std::string where = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });
    zmq::socket push(zctx, ZMQ_PUSH);
    push.connect(where);
    ASSERT_EQ(push.send({"z"}), 0);
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lk(mu);
        return kept.size() == 1;
    }));
    std::lock_guard lk(mu);
    EXPECT_EQ(kept[0].text(), "z");
    EXPECT_EQ(prop(kept.properties(), "Socket-Type"), "PUSH");
    EXPECT_EQ(prop(kept.properties(), "Peer-Address"), "127.0.0.1");
}

TEST(message_properties, outlive_their_socket_and_context_and_travel_between_threads) {
    // Messages received on one thread and dropped on others, after the socket, the context and
    // the receiving thread are gone: the set stays readable while a message holds it (and the
    // sanitizer build's leak check sees it freed once the last goes).
    std::vector<link::message> kept;
    std::thread receiver([&] {
        link::context ctx(1);
        blocking_socket pull(ctx, socket_type::pull, named(""));
        const std::string where = pull.bind("tcp://127.0.0.1:*");
        link::context other(1);
        blocking_socket push(other, socket_type::push, named(""));
        push.connect(where);
        for (int n = 0; n < 3000; ++n) ASSERT_FALSE(push.send("m", std::chrono::seconds(5)));
        for (int n = 0; n < 3000; ++n) {
            auto m = pull.recv(std::chrono::seconds(5));
            ASSERT_TRUE(m);
            if (n % 2) kept.push_back(std::move(*m));  // the rest go here, on this thread
        }
    });
    receiver.join();
    ASSERT_EQ(kept.size(), 1500u);
    const link::message_properties* set = kept.front().properties().get();
    for (auto& m : kept) ASSERT_EQ(m.properties().get(), set);  // one set, shared
    std::thread dropper([&] { kept.resize(500); });
    dropper.join();
    EXPECT_EQ(prop(kept.back().properties(), "Socket-Type"), "PUSH");
    auto copy = kept.back().properties();
    kept.clear();
    EXPECT_EQ(prop(copy, "Peer-Address"), "127.0.0.1");
}

}  // namespace
