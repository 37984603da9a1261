// ZAP through a handler socket, as libzmq 4.3 does it (RFC 27 over inproc://zeromq.zap.01): a
// blocking REP served by a thread of the test (how pyzmq's ThreadAuthenticator and czmq's zauth
// work) decides which CURVE, PLAIN and NULL peers a strix server accepts: the requests' frames,
// every status code's outcome on both sides, the user id and ZAP metadata on the messages, no
// handler bound. zap_edges_test.cpp has the rest.
#include "link/zap_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace {

using namespace strix;
using namespace strix::test;
using namespace strix::test::zap;

TEST(zap_handler, curve_peers_accepted_and_refused_by_a_blocking_rep_on_another_thread) {
    link::context ctx(1);
    const auto server_keys = link::curve_keypair::generate();
    const auto alice = link::curve_keypair::generate();
    const std::string alice_key(reinterpret_cast<const char*>(alice.public_key.data()), 32);
    zap_thread zap(ctx, [&](const strs& r) -> strs {
        const bool ok = r.size() == 7 && r[5] == "CURVE" && r[6] == alice_key;
        return {"1.0",
                r[1],
                ok ? "200" : "400",
                ok ? "OK" : "unknown key",
                ok ? "alice" : "",
                ok ? metadata("Team", "blue") : ""};
    });
    auto so = curve_server(server_keys);
    so.security.zap_domain = "north";
    so.routing_id = "srv";
    blocking_socket pull(ctx, socket_type::pull, so);
    const std::string where = pull.bind("tcp://127.0.0.1:*");

    link::context clients(1);
    blocking_socket stranger(clients, socket_type::push,
                             curve_client(link::curve_keypair::generate(), server_keys.public_z85()));
    stranger.connect(where);
    ASSERT_TRUE(wait_event(pull, failed_with(link::link_errc::auth_failed, "400 unknown key")));
    // The refused client got ERROR "400" (libzmq's CURVE server answers INITIATE the same way).
    EXPECT_TRUE(wait_event(stranger, failed_with(link::link_errc::peer_error, "400")));

    blocking_socket good(clients, socket_type::push, curve_client(alice, server_keys.public_z85()));
    good.connect(where);
    for (int i = 0; i < 20; ++i) ASSERT_FALSE(good.send("m" + std::to_string(i), std::chrono::seconds(5)));
    for (int i = 0; i < 20; ++i) {
        auto m = pull.recv(std::chrono::seconds(5));
        ASSERT_TRUE(m);
        EXPECT_EQ((*m)[0].text(), "m" + std::to_string(i));
        EXPECT_EQ(prop(*m, "User-Id"), "alice");
        EXPECT_EQ(prop(*m, "Team"), "blue");  // ZAP's metadata
        EXPECT_EQ(prop(*m, "Socket-Type"), "PUSH");
        EXPECT_EQ(prop(*m, "Peer-Address"), "127.0.0.1");
    }
    EXPECT_EQ(pull.stats().peers, 1u);

    // The requests' frames: version, request id, domain, address, the server's own routing id
    // (libzmq sends its socket's), mechanism, the client's raw public key.
    const auto reqs = zap.requests();
    ASSERT_GE(reqs.size(), 2u);
    for (auto& r : reqs) {
        ASSERT_EQ(r.size(), 7u);
        EXPECT_EQ(r[0], "1.0");
        EXPECT_FALSE(r[1].empty());
        EXPECT_EQ(r[2], "north");
        EXPECT_EQ(r[3], "127.0.0.1");
        EXPECT_EQ(r[4], "srv");
        EXPECT_EQ(r[5], "CURVE");
        EXPECT_EQ(r[6].size(), 32u);
    }
    EXPECT_TRUE(std::any_of(reqs.begin(), reqs.end(), [&](const strs& r) { return r[6] == alice_key; }));
    std::set<std::string> ids;
    for (auto& r : reqs) ids.insert(r[1]);
    EXPECT_EQ(ids.size(), reqs.size());  // each request its own id
}

TEST(zap_handler, plain_status_codes_as_libzmq_answers_them) {
    link::context ctx(1);
    zap_thread zap(ctx, [](const strs& r) -> strs {
        if (r.size() != 8 || r[5] != "PLAIN") return {"1.0", r.size() > 1 ? r[1] : "", "500", "bad request", "", ""};
        const std::string& user = r[6];
        if (user == "ok" && r[7] == "pw") return {"1.0", r[1], "200", "OK", "user-ok", ""};
        if (user == "temp") return {"1.0", r[1], "300", "try later", "", ""};
        if (user == "boom") return {"1.0", r[1], "500", "db down", "", ""};
        return {"1.0", r[1], "400", "no", "", ""};
    });
    auto so = quick();
    so.security.plain_server = true;
    blocking_socket pull(ctx, socket_type::pull, so);
    const std::string where = pull.bind("tcp://127.0.0.1:*");

    link::context clients(1);
    // 400 and 500: the server reports the code and sends ERROR with it; 300: closes silently.
    for (const auto& [user, code] :
         std::vector<std::pair<std::string, std::string>>{{"bad", "400"}, {"boom", "500"}, {"temp", "300"}}) {
        SCOPED_TRACE(user);
        blocking_socket c(clients, socket_type::push, plain_client(user, "pw"));
        c.connect(where);
        ASSERT_TRUE(wait_event(pull, failed_with(link::link_errc::auth_failed, code)));
        if (code != "300") {
            EXPECT_TRUE(wait_event(c, failed_with(link::link_errc::peer_error, code)));
        } else {
            const auto f =
                wait_event(c, [](const socket_event& e) { return e.what == socket_event::kind::handshake_failed; });
            ASSERT_TRUE(f);
            EXPECT_NE(f->error, make_error_code(link::link_errc::peer_error)) << f->detail;
        }
        EXPECT_EQ(c.stats().peers, 0u);
    }
    blocking_socket good(clients, socket_type::push, plain_client("ok", "pw"));
    good.connect(where);
    ASSERT_FALSE(good.send("hello", std::chrono::seconds(5)));
    auto m = pull.recv(std::chrono::seconds(5));
    ASSERT_TRUE(m);
    EXPECT_EQ((*m)[0].text(), "hello");
    EXPECT_EQ(prop(*m, "User-Id"), "user-ok");
    for (auto& r : zap.requests()) {
        ASSERT_EQ(r.size(), 8u);
        EXPECT_EQ(r[2], "");  // no zap_domain set
        EXPECT_EQ(r[5], "PLAIN");
    }
}

TEST(zap_handler, no_handler_bound_accepts_curve_and_null_refuses_plain_as_libzmq_4_3) {
    link::context ctx(1);
    const auto server_keys = link::curve_keypair::generate();
    blocking_socket curve(ctx, socket_type::pull, curve_server(server_keys));
    const std::string curve_at = curve.bind("tcp://127.0.0.1:*");
    auto po = quick();
    po.security.plain_server = true;
    blocking_socket plain(ctx, socket_type::pull, po);
    const std::string plain_at = plain.bind("tcp://127.0.0.1:*");
    auto no = quick();
    no.security.zap_domain = "d";
    blocking_socket null_dom(ctx, socket_type::pull, no);
    const std::string null_at = null_dom.bind("tcp://127.0.0.1:*");

    link::context clients(1);
    blocking_socket c1(clients, socket_type::push,
                       curve_client(link::curve_keypair::generate(), server_keys.public_z85()));
    c1.connect(curve_at);
    ASSERT_FALSE(c1.send("c", std::chrono::seconds(5)));
    auto m = curve.recv(std::chrono::seconds(5));
    ASSERT_TRUE(m);
    EXPECT_EQ(prop(*m, "User-Id"), "(none)");  // nobody was asked: no user id
    EXPECT_EQ(prop(*m, "Socket-Type"), "PUSH");

    blocking_socket c3(clients, socket_type::push, quick());
    c3.connect(null_at);
    ASSERT_FALSE(c3.send("n", std::chrono::seconds(5)));
    ASSERT_TRUE(null_dom.recv(std::chrono::seconds(5)));

    blocking_socket c2(clients, socket_type::push, plain_client("u", "p"));
    c2.connect(plain_at);
    EXPECT_TRUE(wait_event(plain, failed_with(link::link_errc::zap_unavailable, "")));
    EXPECT_FALSE(plain.recv(std::chrono::milliseconds(200)));
    EXPECT_EQ(plain.stats().peers, 0u);
}

TEST(zap_handler, null_with_a_domain_asks_and_a_refusal_sends_error) {
    link::context ctx(1);
    std::atomic<bool> allow{false};
    zap_thread zap(ctx, [&](const strs& r) -> strs {
        return {"1.0", r[1], allow ? "200" : "400", "", allow ? "anon" : "", ""};
    });
    auto so = quick();
    so.security.zap_domain = "lobby";
    so.routing_id = "router-1";
    blocking_socket router(ctx, socket_type::router, so);
    const std::string where = router.bind("tcp://127.0.0.1:*");

    link::context clients(1);
    auto co = quick();
    co.routing_id = "dealer-9";
    {
        blocking_socket refused(clients, socket_type::dealer, co);
        refused.connect(where);
        ASSERT_TRUE(wait_event(router, failed_with(link::link_errc::auth_failed, "400")));
        EXPECT_TRUE(wait_event(refused, failed_with(link::link_errc::peer_error, "400")));
    }
    allow = true;
    blocking_socket dealer(clients, socket_type::dealer, co);
    dealer.connect(where);
    ASSERT_FALSE(dealer.send("hi", std::chrono::seconds(5)));
    auto m = router.recv(std::chrono::seconds(5));
    ASSERT_TRUE(m);
    ASSERT_EQ(m->size(), 2u);
    EXPECT_EQ((*m)[0].text(), "dealer-9");
    EXPECT_EQ(prop(*m, "User-Id"), "anon");
    EXPECT_EQ(prop(*m, "Identity"), "dealer-9");
    EXPECT_EQ(prop(*m, "Routing-Id"), "dealer-9");
    const auto reqs = zap.requests();
    ASSERT_FALSE(reqs.empty());
    const auto& r = reqs.back();
    ASSERT_EQ(r.size(), 6u);  // no credentials
    EXPECT_EQ(r[2], "lobby");
    EXPECT_EQ(r[4], "router-1");
    EXPECT_EQ(r[5], "NULL");
}

}  // namespace
