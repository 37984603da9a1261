// strix::link security (strix/link/security.hpp): Z85 against RFC 32's vector, CURVE and PLAIN
// against the real libzmq both ways over tcp (every message's content, count and order checked),
// wrong keys and refused credentials on both sides (counted in events and stats, no hang), and
// the ZAP request's fields. Skipped when this libzmq is built without CURVE.
#include "link/interop_support.hpp"

#include <strix/link/security.hpp>
#include <strix/link/socket.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace {

using namespace strix;
using namespace strix::test;
using link::socket_event;
using link::socket_type;
using strs = std::vector<std::string>;

bool zmq_curve() { return zmq_has("curve") != 0; }
#define NEED_CURVE() \
    if (!zmq_curve()) GTEST_SKIP() << "libzmq built without CURVE (zmq_has(\"curve\") is 0)"

struct zkeys {
    std::string pub, sec;
    zkeys() {
        char p[41], s[41];
        if (zmq_curve_keypair(p, s) != 0) throw std::runtime_error("zmq_curve_keypair");
        pub = p;
        sec = s;
    }
};

link::socket_options curve_server(const link::curve_keypair& k) {
    link::socket_options o;
    o.security.curve_server = true;
    o.security.curve_secretkey = k.secret_z85();
    return o;
}

link::socket_options curve_client(const link::curve_keypair& mine, const std::string& server_pub) {
    link::socket_options o;
    o.security.curve_publickey = mine.public_z85();
    o.security.curve_secretkey = mine.secret_z85();
    o.security.curve_serverkey = server_pub;
    return o;
}

void zmq_curve_client(zmq::socket& z, const std::string& server_pub, const zkeys& mine) {
    z.set(ZMQ_CURVE_SERVERKEY, server_pub);
    z.set(ZMQ_CURVE_PUBLICKEY, mine.pub);
    z.set(ZMQ_CURVE_SECRETKEY, mine.sec);
}

void zmq_curve_server(zmq::socket& z, const zkeys& k) {
    z.set(ZMQ_CURVE_SERVER, 1);
    z.set(ZMQ_CURVE_SECRETKEY, k.sec);
}

// What flows: small, the 1-byte/8-byte size boundary, large, empty, and multipart messages.
std::vector<strs> traffic(int seed) {
    std::vector<strs> v;
    for (int i = 0; i < 200; ++i) v.push_back({payload(64, seed + i)});
    v.push_back({payload(0, seed)});
    v.push_back({payload(255, seed)});
    v.push_back({payload(256, seed)});
    v.push_back({payload(300 * 1024, seed)});
    v.push_back({payload(1, seed), "", payload(600, seed + 1), payload(5, seed + 2)});
    for (int i = 0; i < 200; ++i) v.push_back({payload(static_cast<std::size_t>(i), seed - i)});
    return v;
}

int wait_peers(link_env& env, link::socket& s, std::size_t n) {
    return eventually([&] { return env.on(env.shard_of(s), [&] { return s.peers(); }) == n; }) ? 1 : 0;
}

// --- Z85 -----------------------------------------------------------------------------------------

TEST(z85, rfc32_test_vector) {
    const std::array<std::byte, 8> data{std::byte{0x86}, std::byte{0x4F}, std::byte{0xD2}, std::byte{0x6F},
                                        std::byte{0xB5}, std::byte{0x59}, std::byte{0xF7}, std::byte{0x5B}};
    EXPECT_EQ(link::z85_encode(data), "HelloWorld");
    const auto back = link::z85_decode("HelloWorld");
    ASSERT_TRUE(back);
    ASSERT_EQ(back->size(), 8u);
    EXPECT_TRUE(std::equal(back->begin(), back->end(), data.begin()));
}

TEST(z85, refuses_bad_text_and_sizes) {
    EXPECT_FALSE(link::z85_decode("Hell"));         // not a multiple of 5
    EXPECT_FALSE(link::z85_decode("Hello Worl"));   // space is not Z85
    EXPECT_FALSE(link::z85_decode("%%%%%"));        // 84*85^4+... overflows 32 bits
    EXPECT_EQ(link::z85_encode(std::array<std::byte, 3>{}), "");
    EXPECT_EQ(link::z85_encode(std::array<std::byte, 4>{}), "00000");
}

TEST(z85, keys_agree_with_libzmq) {
    NEED_CURVE();
    const zkeys z;
    // libzmq's public key is the one strix derives from libzmq's secret key, through Z85 both ways.
    const auto sec = link::parse_curve_key(z.sec);
    ASSERT_TRUE(sec);
    const auto k = link::curve_keypair::from_secret(*sec);
    EXPECT_EQ(k.public_z85(), z.pub);
    EXPECT_EQ(k.secret_z85(), z.sec);
    const auto g = link::curve_keypair::generate();
    char pub[41];
    ASSERT_EQ(zmq_curve_public(pub, g.secret_z85().c_str()), 0);
    EXPECT_EQ(g.public_z85(), std::string(pub));
    EXPECT_FALSE(link::parse_curve_key("short"));
    EXPECT_FALSE(link::parse_curve_key(std::string(40, ' ')));
}

TEST(security, bad_options_throw_at_construction) {
    link_env env(1);
    link::socket_options o;
    o.security.curve_server = true;  // no secret key
    EXPECT_THROW(env.make(0, socket_type::pull, o), std::invalid_argument);
    link::socket_options c;
    c.security.curve_serverkey = "not a key";
    c.security.curve_secretkey = link::curve_keypair::generate().secret_z85();
    EXPECT_THROW(env.make(0, socket_type::push, c), std::invalid_argument);
    link::socket_options both = curve_server(link::curve_keypair::generate());
    both.security.plain_server = true;
    EXPECT_THROW(env.make(0, socket_type::pull, both), std::invalid_argument);
}

TEST(security, allow_list_rules) {
    const auto k1 = link::curve_keypair::generate(), k2 = link::curve_keypair::generate();
    link::allow_list allow;
    const auto h = allow.handler();
    auto ask = [&](std::string mech, std::string addr, std::vector<std::string> creds) {
        link::zap_request r;
        r.mechanism = std::move(mech);
        r.address = std::move(addr);
        r.credentials = std::move(creds);
        return h(r);
    };
    const std::string raw1(reinterpret_cast<const char*>(k1.public_key.data()), 32);
    const std::string raw2(reinterpret_cast<const char*>(k2.public_key.data()), 32);
    // Nothing listed: everyone passes.
    EXPECT_TRUE(ask("CURVE", "10.0.0.1", {raw2}).accepted());
    allow.allow_key(k1.public_z85());  // added after handler(): still counts
    EXPECT_TRUE(ask("CURVE", "10.0.0.1", {raw1}).accepted());
    EXPECT_EQ(ask("CURVE", "10.0.0.1", {raw1}).user_id, k1.public_z85());
    EXPECT_EQ(ask("CURVE", "10.0.0.1", {raw2}).status_code, "400");
    EXPECT_TRUE(ask("PLAIN", "10.0.0.1", {"any", "thing"}).accepted());  // no users listed
    allow.allow_user("bob", "pw");
    EXPECT_TRUE(ask("PLAIN", "10.0.0.1", {"bob", "pw"}).accepted());
    EXPECT_FALSE(ask("PLAIN", "10.0.0.1", {"bob", "pW"}).accepted());
    EXPECT_FALSE(ask("PLAIN", "10.0.0.1", {"bob"}).accepted());
    allow.deny_address("10.0.0.66");
    EXPECT_EQ(ask("CURVE", "10.0.0.66", {raw1}).status_code, "400");
    allow.allow_address("10.0.0.1");
    EXPECT_TRUE(ask("CURVE", "10.0.0.1", {raw1}).accepted());
    EXPECT_FALSE(ask("CURVE", "10.0.0.2", {raw1}).accepted());
    EXPECT_EQ(allow.refused(), 5u);
    EXPECT_THROW(allow.allow_key("not a key"), std::invalid_argument);
}

// --- CURVE with libzmq ---------------------------------------------------------------------------

TEST(curve_interop, strix_pull_server_zmq_push_client) {
    NEED_CURVE();
    zmq::context ctx;
    link_env env;
    const auto server = link::curve_keypair::generate();
    auto& box = env.new_inbox();
    auto& pull = env.make(0, socket_type::pull, curve_server(server), &box);
    const std::string a = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });
    zmq::socket push(ctx, ZMQ_PUSH);
    zmq_curve_client(push, server.public_z85(), zkeys{});
    push.connect(a);
    const auto ms = traffic(1);
    for (auto& m : ms) ASSERT_EQ(push.send(m), 0);
    for (auto& m : ms) ASSERT_TRUE(same(box.pop(), m)) << describe(m);
    EXPECT_TRUE(box.stays_empty());
    EXPECT_EQ(env.on(0, [&] { return pull.stats().handshake_failures; }), 0u);
}

TEST(curve_interop, zmq_pull_server_strix_push_client) {
    NEED_CURVE();
    zmq::context ctx;
    link_env env;
    const zkeys server;
    zmq::socket pull(ctx, ZMQ_PULL);
    zmq_curve_server(pull, server);
    const std::string a = pull.bind("tcp://127.0.0.1:*");
    auto& push = env.make(0, socket_type::push, curve_client(link::curve_keypair::generate(), server.pub));
    env.on(0, [&] { push.connect(a); });
    ASSERT_TRUE(wait_peers(env, push, 1)) << "no CURVE handshake with libzmq";
    const auto ms = traffic(2);
    for (auto& m : ms) ASSERT_FALSE(env.send(push, m));
    for (auto& m : ms) ASSERT_TRUE(same(pull.recv(), m)) << describe(m);
    EXPECT_FALSE(pull.recv(std::chrono::milliseconds(200)));
}

TEST(curve_interop, strix_rep_server_zmq_req_client) {
    NEED_CURVE();
    zmq::context ctx;
    link_env env;
    const auto server = link::curve_keypair::generate();
    link::socket* rep = nullptr;
    rep = &env.make(0, socket_type::rep, curve_server(server));
    env.on(0, [&] {
        rep->on_message([rep](link::message_view m) {
            link::message r;
            for (auto p : m) r.add(link::as_bytes(flip(std::string(link::as_text(p)))));
            rep->send(r);
        });
    });
    const std::string a = env.on(0, [&] { return rep->bind("tcp://127.0.0.1:*"); });
    zmq::socket req(ctx, ZMQ_REQ);
    zmq_curve_client(req, server.public_z85(), zkeys{});
    req.connect(a);
    for (auto& m : traffic(3)) {
        ASSERT_EQ(req.send(m), 0);
        ASSERT_TRUE(same(req.recv(), flip(m))) << describe(m);
    }
}

TEST(curve_interop, zmq_router_server_strix_dealer_client) {
    NEED_CURVE();
    zmq::context ctx;
    link_env env;
    const zkeys server;
    zmq::socket router(ctx, ZMQ_ROUTER);
    zmq_curve_server(router, server);
    const std::string a = router.bind("tcp://127.0.0.1:*");
    link::socket_options o = curve_client(link::curve_keypair::generate(), server.pub);
    o.routing_id = "strix-dealer";
    auto& box = env.new_inbox();
    auto& dealer = env.make(0, socket_type::dealer, o, &box);
    env.on(0, [&] { dealer.connect(a); });
    ASSERT_TRUE(wait_peers(env, dealer, 1));
    const auto ms = traffic(4);
    for (auto& m : ms) ASSERT_FALSE(env.send(dealer, m));
    for (auto& m : ms) {
        auto got = router.recv();
        ASSERT_TRUE(got);
        ASSERT_EQ((*got)[0], "strix-dealer");  // the routing id came through INITIATE's metadata
        got->erase(got->begin());
        ASSERT_TRUE(same(got, m)) << describe(m);
        strs back{"strix-dealer"};
        for (auto& p : flip(m)) back.push_back(p);
        ASSERT_EQ(router.send(back), 0);
    }
    for (auto& m : ms) ASSERT_TRUE(same(box.pop(), flip(m))) << describe(m);
}

TEST(curve_interop, zmq_sub_strix_pub_subscriptions_boxed) {
    NEED_CURVE();
    zmq::context ctx;
    link_env env;
    const auto server = link::curve_keypair::generate();
    auto& pub = env.make(0, socket_type::pub, curve_server(server));
    const std::string a = env.on(0, [&] { return pub.bind("tcp://127.0.0.1:*"); });
    zmq::socket sub(ctx, ZMQ_SUB);
    zmq_curve_client(sub, server.public_z85(), zkeys{});
    sub.subscribe("b");
    sub.connect(a);
    // The SUBSCRIBE command travels inside a MESSAGE box; strix's PUB must read it.
    ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return pub.subscribers(); }) == 1; }));
    for (int i = 0; i < 100; ++i) {
        ASSERT_FALSE(env.send(pub, {"a-skip" + std::to_string(i)}));
        ASSERT_FALSE(env.send(pub, {"b-keep" + std::to_string(i)}));
    }
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(same(sub.recv(), strs{"b-keep" + std::to_string(i)}));
}

TEST(curve, strix_to_strix_both_ways) {
    link_env env;
    const auto server = link::curve_keypair::generate();
    auto& sbox = env.new_inbox();
    auto& cbox = env.new_inbox();
    auto& srv = env.make(0, socket_type::pair, curve_server(server), &sbox);
    auto& cli =
        env.make(1, socket_type::pair, curve_client(link::curve_keypair::generate(), server.public_z85()), &cbox);
    const std::string a = env.on(0, [&] { return srv.bind("tcp://127.0.0.1:*"); });
    env.on(1, [&] { cli.connect(a); });
    ASSERT_TRUE(wait_peers(env, cli, 1));
    const auto ms = traffic(5);
    for (auto& m : ms) {
        ASSERT_FALSE(env.send(cli, m));
        ASSERT_FALSE(env.send(srv, flip(m)));
    }
    for (auto& m : ms) {
        ASSERT_TRUE(same(sbox.pop(), m)) << describe(m);
        ASSERT_TRUE(same(cbox.pop(), flip(m))) << describe(m);
    }
}

// --- refusals ------------------------------------------------------------------------------------

TEST(curve_refused, zmq_client_with_wrong_server_key) {
    NEED_CURVE();
    zmq::context ctx;
    link_env env;
    const auto server = link::curve_keypair::generate();
    auto& box = env.new_inbox();
    auto& log = env.new_log();
    auto& pull = env.make(0, socket_type::pull, curve_server(server), &box, &log);
    const std::string a = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });
    zmq::socket push(ctx, ZMQ_PUSH);
    zmq::monitor mon(ctx, push);
    zmq_curve_client(push, link::curve_keypair::generate().public_z85(), zkeys{});  // not the server's
    push.connect(a);
    ASSERT_TRUE(log.saw(socket_event::kind::handshake_failed));
    bool crypto = false;
    for (auto& e : log.all())
        crypto |= e.what == socket_event::kind::handshake_failed && e.error == link::link_errc::bad_crypto;
    EXPECT_TRUE(crypto);
    EXPECT_GE(env.on(0, [&] { return pull.stats().handshake_failures; }), 1u);
    EXPECT_EQ(env.on(0, [&] { return pull.peers(); }), 0u);
    EXPECT_EQ(mon.count(ZMQ_EVENT_HANDSHAKE_SUCCEEDED), 0);
    EXPECT_FALSE(push.try_send({"never"}) && !box.stays_empty(300ms));

    // The server still serves a client with the right key.
    zmq::socket good(ctx, ZMQ_PUSH);
    zmq_curve_client(good, server.public_z85(), zkeys{});
    good.connect(a);
    ASSERT_EQ(good.send({"hello"}), 0);
    EXPECT_TRUE(same(box.pop(), strs{"hello"}));
}

TEST(curve_refused, strix_client_with_wrong_server_key) {
    NEED_CURVE();
    zmq::context ctx;
    link_env env;
    const zkeys server;
    zmq::socket pull(ctx, ZMQ_PULL);
    zmq::monitor mon(ctx, pull);
    zmq_curve_server(pull, server);
    const std::string a = pull.bind("tcp://127.0.0.1:*");
    auto& log = env.new_log();
    auto& push =
        env.make(0, socket_type::push, curve_client(link::curve_keypair::generate(), zkeys{}.pub), nullptr, &log);
    env.on(0, [&] { push.connect(a); });
    ASSERT_TRUE(log.saw(socket_event::kind::handshake_failed));
    EXPECT_GE(env.on(0, [&] { return push.stats().handshake_failures; }), 1u);
    EXPECT_EQ(env.on(0, [&] { return push.peers(); }), 0u);
    // libzmq refused our HELLO (its box does not open under its key) as a protocol failure.
    EXPECT_GE(mon.count(ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL, 1, 5s), 1);
    EXPECT_EQ(mon.count(ZMQ_EVENT_HANDSHAKE_SUCCEEDED), 0);
    EXPECT_FALSE(pull.recv(200ms));
}

TEST(curve_refused, zap_allow_list_by_client_key) {
    NEED_CURVE();
    zmq::context ctx;
    link_env env;
    const auto server = link::curve_keypair::generate();
    const zkeys allowed, other;
    link::allow_list allow;
    allow.allow_key(allowed.pub);
    link::socket_options o = curve_server(server);
    o.security.zap = allow.handler();
    auto& box = env.new_inbox();
    auto& log = env.new_log();
    auto& pull = env.make(0, socket_type::pull, o, &box, &log);
    const std::string a = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });

    zmq::socket bad(ctx, ZMQ_PUSH);
    zmq::monitor mon(ctx, bad);
    zmq_curve_client(bad, server.public_z85(), other);
    bad.connect(a);
    ASSERT_TRUE(log.saw(socket_event::kind::handshake_failed));
    // libzmq hears the status code in ERROR and reports an authentication failure with it.
    EXPECT_GE(mon.count(ZMQ_EVENT_HANDSHAKE_FAILED_AUTH, 1, 5s), 1);
    bool auth = false;
    for (auto& e : log.all())
        auth |= e.what == socket_event::kind::handshake_failed && e.error == link::link_errc::auth_failed &&
                e.detail.starts_with("400");
    EXPECT_TRUE(auth);
    EXPECT_GE(allow.refused(), 1u);

    zmq::socket good(ctx, ZMQ_PUSH);
    zmq_curve_client(good, server.public_z85(), allowed);
    good.connect(a);
    for (int i = 0; i < 50; ++i) ASSERT_EQ(good.send({"m" + std::to_string(i)}), 0);
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(same(box.pop(), strs{"m" + std::to_string(i)}));
    EXPECT_TRUE(box.stays_empty());  // nothing from the refused client
    EXPECT_EQ(env.on(0, [&] { return pull.peers(); }), 1u);
}

TEST(curve_refused, zmq_server_zap_refuses_strix_client_key) {
    NEED_CURVE();
    zmq::context ctx;
    const auto allowed = link::curve_keypair::generate();
    const std::string allowed_raw(reinterpret_cast<const char*>(allowed.public_key.data()), 32);
    // libzmq's ZAP handler: accepts only `allowed`'s key.
    zmq::socket zap(ctx, ZMQ_REP);
    zap.bind("inproc://zeromq.zap.01");
    std::atomic<bool> stop{false};
    std::atomic<int> asked{0};
    std::thread handler([&] {
        while (!stop) {
            auto req = zap.recv(std::chrono::milliseconds(50));
            if (!req) continue;
            const bool ok = req->size() == 7 && (*req)[5] == "CURVE" && (*req)[6] == allowed_raw;
            zap.send({"1.0", (*req)[1], ok ? "200" : "400", ok ? "OK" : "unknown key", "", ""});
            ++asked;
        }
    });
    link_env env;
    const zkeys server;
    zmq::socket pull(ctx, ZMQ_PULL);
    zmq::monitor mon(ctx, pull);
    zmq_curve_server(pull, server);
    const std::string a = pull.bind("tcp://127.0.0.1:*");

    auto& blog = env.new_log();
    auto& bad =
        env.make(0, socket_type::push, curve_client(link::curve_keypair::generate(), server.pub), nullptr, &blog);
    env.on(0, [&] { bad.connect(a); });
    EXPECT_TRUE(blog.saw(socket_event::kind::handshake_failed));
    bool said = false;
    for (auto& e : blog.all()) said |= e.error == link::link_errc::peer_error && e.detail == "400";
    EXPECT_TRUE(said);  // libzmq's CURVE server answers the refused INITIATE with ERROR "400"
    EXPECT_GE(mon.count(ZMQ_EVENT_HANDSHAKE_FAILED_AUTH, 1, 5s), 1);
    EXPECT_EQ(env.on(0, [&] { return bad.peers(); }), 0u);
    env.destroy(bad);

    auto& good = env.make(1, socket_type::push, curve_client(allowed, server.pub));
    env.on(1, [&] { good.connect(a); });
    ASSERT_TRUE(wait_peers(env, good, 1));
    for (int i = 0; i < 100; ++i) ASSERT_FALSE(env.send(good, {"k" + std::to_string(i)}));
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(same(pull.recv(), strs{"k" + std::to_string(i)}));
    EXPECT_FALSE(pull.recv(200ms));
    stop = true;
    handler.join();
    EXPECT_GE(asked.load(), 2);
}

TEST(curve_refused, zap_allow_list_by_address) {
    link_env env;
    const auto server = link::curve_keypair::generate();
    link::allow_list allow;
    allow.allow_address("127.0.0.2");  // not where the client comes from
    link::socket_options o = curve_server(server);
    o.security.zap = allow.handler();
    auto& log = env.new_log();
    auto& pull = env.make(0, socket_type::pull, o, nullptr, &log);
    const std::string a = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });
    auto& clog = env.new_log();
    auto& push = env.make(1, socket_type::push, curve_client(link::curve_keypair::generate(), server.public_z85()),
                          nullptr, &clog);
    env.on(1, [&] { push.connect(a); });
    ASSERT_TRUE(log.saw(socket_event::kind::handshake_failed));
    ASSERT_TRUE(clog.saw(socket_event::kind::handshake_failed));
    bool peer_said = false;
    for (auto& e : clog.all()) peer_said |= e.error == link::link_errc::peer_error && e.detail == "400";
    EXPECT_TRUE(peer_said);
    EXPECT_EQ(env.on(1, [&] { return push.peers(); }), 0u);
}

TEST(curve, zap_request_fields) {
    link_env env;
    const auto server = link::curve_keypair::generate();
    const auto client = link::curve_keypair::generate();
    std::mutex mu;
    std::vector<link::zap_request> seen;
    link::socket_options o = curve_server(server);
    o.security.zap_domain = "global";
    o.security.zap = [&](const link::zap_request& r) {
        std::lock_guard lk(mu);
        seen.push_back(r);
        link::zap_reply rep;
        rep.user_id = "alice";
        return rep;
    };
    auto& box = env.new_inbox();
    auto& router = env.make(0, socket_type::router, o, &box);
    const std::string a = env.on(0, [&] { return router.bind("tcp://127.0.0.1:*"); });
    link::socket_options c = curve_client(client, server.public_z85());
    c.routing_id = "dealer-7";
    auto& dealer = env.make(1, socket_type::dealer, c);
    env.on(1, [&] { dealer.connect(a); });
    ASSERT_TRUE(wait_peers(env, router, 1));
    ASSERT_FALSE(env.send(dealer, {"x"}));
    EXPECT_TRUE(same(box.pop(), strs{"dealer-7", "x"}));
    std::lock_guard lk(mu);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].version, "1.0");
    EXPECT_EQ(seen[0].mechanism, "CURVE");
    EXPECT_EQ(seen[0].domain, "global");
    EXPECT_EQ(seen[0].address, "127.0.0.1");
    EXPECT_EQ(seen[0].identity, "dealer-7");
    ASSERT_EQ(seen[0].credentials.size(), 1u);
    EXPECT_EQ(seen[0].credentials[0],
              std::string(reinterpret_cast<const char*>(client.public_key.data()), client.public_key.size()));
    EXPECT_FALSE(seen[0].request_id.empty());
}

TEST(curve_refused, mechanism_mismatch_with_null_client) {
    zmq::context ctx;
    link_env env;
    auto& log = env.new_log();
    auto& pull = env.make(0, socket_type::pull, curve_server(link::curve_keypair::generate()), nullptr, &log);
    const std::string a = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });
    // A strix NULL client: its greeting reaches the server whole, so the server names the cause.
    auto& nlog = env.new_log();
    auto& push = env.make(1, socket_type::push, {}, nullptr, &nlog);
    env.on(1, [&] { push.connect(a); });
    ASSERT_TRUE(log.saw(socket_event::kind::handshake_failed));
    ASSERT_TRUE(nlog.saw(socket_event::kind::handshake_failed));
    auto cause = [](event_log& l, const char* peer_mech) {
        for (auto& e : l.all())
            if (e.error == link::link_errc::unsupported_mechanism && e.detail == peer_mech) return true;
        return false;
    };
    EXPECT_TRUE(cause(log, "NULL"));
    EXPECT_TRUE(cause(nlog, "CURVE"));
    // A libzmq NULL client may close first on seeing CURVE: refused either way, never attached.
    zmq::socket zpush(ctx, ZMQ_PUSH);
    zpush.connect(a);
    const auto before = env.on(0, [&] { return pull.stats().handshake_failures; });
    ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return pull.stats().handshake_failures; }) > before; }));
    EXPECT_EQ(env.on(0, [&] { return pull.peers(); }), 0u);
    EXPECT_EQ(env.on(1, [&] { return push.peers(); }), 0u);
}

}  // namespace
