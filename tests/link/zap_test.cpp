// ZAP through a handler socket, as libzmq 4.3 does it (RFC 27 over inproc://zeromq.zap.01): a
// blocking REP served by a thread of the test (how pyzmq's ThreadAuthenticator and czmq's zauth
// work) or a shard ROUTER decides which CURVE, PLAIN and NULL peers a strix server accepts. The
// requests' frames, every status code's outcome on both sides, the user id and ZAP metadata on
// the messages, no handler bound, a handler that never answers (the handshake times out while
// the shard keeps serving), malformed replies, and a libzmq client against a strix server.
#include "link/interop_support.hpp"

#include <strix/link/blocking.hpp>
#include <strix/link/security.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

namespace {

using namespace strix;
using namespace strix::test;
using link::blocking_socket;
using link::socket_event;
using link::socket_type;
using strs = std::vector<std::string>;

bool zmq_curve() { return zmq_has("curve") != 0; }

link::socket_options quick(link::socket_options o = {}) {
    o.linger = std::chrono::milliseconds(0);
    o.reconnect_ivl = std::chrono::milliseconds(50);
    return o;
}

// A ZAP handler: a blocking REP bound at inproc://zeromq.zap.01, served by its own thread.
// `decide` turns a request's frames into the reply's (version, request id, status code, status
// text, user id, metadata); an empty answer leaves the request unanswered.
class zap_thread {
public:
    using decide_fn = std::function<strs(const strs& request)>;
    zap_thread(link::context& ctx, decide_fn decide)
        : rep_(ctx, socket_type::rep, quick()), decide_(std::move(decide)) {
        rep_.bind("inproc://zeromq.zap.01");
        thread_ = std::thread([this] { serve(); });
    }
    ~zap_thread() {
        stop_ = true;
        thread_.join();
    }
    std::vector<strs> requests() {
        std::lock_guard lk(mu_);
        return requests_;
    }
    std::size_t count() {
        std::lock_guard lk(mu_);
        return requests_.size();
    }

private:
    void serve() {
        while (!stop_) {
            auto m = rep_.recv(std::chrono::milliseconds(20));
            if (!m) continue;
            strs req;
            for (auto& p : *m) req.emplace_back(p.text());
            {
                std::lock_guard lk(mu_);
                requests_.push_back(req);
            }
            const strs reply = decide_(req);
            if (reply.empty()) continue;  // never answered: the REP stays in its turn
            link::message r;
            for (auto& p : reply) r.add(p);
            rep_.send(r, std::chrono::seconds(5));
        }
    }

    blocking_socket rep_;
    decide_fn decide_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::vector<strs> requests_;
};

// ZAP's metadata frame: properties as ZMTP encodes them.
std::string metadata(const std::string& name, const std::string& value) {
    std::string m(1, static_cast<char>(name.size()));
    m += name;
    for (int s = 24; s >= 0; s -= 8) m.push_back(static_cast<char>((value.size() >> s) & 0xff));
    return m + value;
}

// The first event of socket s that pred accepts, within `within`.
std::optional<socket_event> wait_event(blocking_socket& s, const std::function<bool(const socket_event&)>& pred,
                                       std::chrono::milliseconds within = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < deadline) {
        auto e = s.next_event(std::chrono::milliseconds(20));
        if (e && pred(*e)) return e;
    }
    return std::nullopt;
}

auto failed_with(link::link_errc ec, std::string detail_prefix) {
    return [ec, detail_prefix](const socket_event& e) {
        return e.what == socket_event::kind::handshake_failed && e.error == ec && e.detail.starts_with(detail_prefix);
    };
}

link::socket_options curve_server(const link::curve_keypair& k) {
    auto o = quick();
    o.security.curve_server = true;
    o.security.curve_secretkey = k.secret_z85();
    return o;
}

link::socket_options curve_client(const link::curve_keypair& mine, const std::string& server_pub) {
    auto o = quick();
    o.security.curve_publickey = mine.public_z85();
    o.security.curve_secretkey = mine.secret_z85();
    o.security.curve_serverkey = server_pub;
    return o;
}

link::socket_options plain_client(const std::string& user, const std::string& pass) {
    auto o = quick();
    o.security.plain_username = user;
    o.security.plain_password = pass;
    return o;
}

std::string prop(const link::message& m, std::string_view name) {
    if (!m.properties()) return "(no properties)";
    const std::string* v = m.properties()->get(name);
    return v ? *v : "(none)";
}

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

TEST(zap_handler, one_that_never_answers_times_the_handshake_out_while_the_shard_serves_others) {
    link::context ctx(1);  // one shard: server, handler and the other sockets share its loop
    zap_thread zap(ctx, [](const strs&) -> strs { return {}; });
    const auto server_keys = link::curve_keypair::generate();
    auto so = curve_server(server_keys);
    const auto ivl = std::chrono::milliseconds(3000);
    so.handshake_ivl = ivl;
    blocking_socket pull(ctx, socket_type::pull, so);
    const std::string where = pull.bind("tcp://127.0.0.1:*");
    blocking_socket rep(ctx, socket_type::rep, quick());
    const std::string rep_at = rep.bind("tcp://127.0.0.1:*");
    std::thread echo([&] {
        for (int i = 0; i < 50; ++i) {
            auto q = rep.recv(std::chrono::seconds(5));
            if (!q) return;
            rep.send(q->size() ? std::string((*q)[0].text()) : std::string());
        }
    });

    link::context clients(1);
    blocking_socket c(clients, socket_type::push,
                      curve_client(link::curve_keypair::generate(), server_keys.public_z85()));
    c.connect(where);
    ASSERT_TRUE(eventually([&] { return zap.count() >= 1; }, std::chrono::seconds(5)));
    const auto asked = std::chrono::steady_clock::now();
    // The handshake waits for ZAP; the shard answers 50 round trips meanwhile.
    blocking_socket req(clients, socket_type::req, quick());
    req.connect(rep_at);
    for (int i = 0; i < 50; ++i) {
        ASSERT_FALSE(req.send("r" + std::to_string(i), std::chrono::seconds(5)));
        auto a = req.recv(std::chrono::seconds(5));
        ASSERT_TRUE(a);
        EXPECT_EQ((*a)[0].text(), "r" + std::to_string(i));
    }
    echo.join();
    const bool within_ivl = std::chrono::steady_clock::now() - asked < ivl - std::chrono::milliseconds(500);
    bool failed_yet = false;
    while (auto e = pull.next_event(std::chrono::milliseconds(0)))
        failed_yet |= e->what == socket_event::kind::handshake_failed;
    // Done well inside the interval (as always, short of a stalled machine): the handshake was
    // still waiting all along, the round trips served beside it.
    if (within_ivl) {
        EXPECT_FALSE(failed_yet);
    }
    if (!failed_yet) {
        EXPECT_TRUE(wait_event(pull, failed_with(link::link_errc::handshake_timeout, ""), std::chrono::seconds(10)));
    }
    EXPECT_EQ(pull.stats().peers, 0u);
    EXPECT_GE(pull.stats().handshake_failures, 1u);
}

TEST(zap_handler, malformed_replies_fail_the_handshake_and_say_how) {
    link::context ctx(1);
    std::atomic<int> mode{0};
    zap_thread zap(ctx, [&](const strs& r) -> strs {
        switch (mode.load()) {
            case 0: return {"2.0", r[1], "200", "", "", ""};
            case 1: return {"1.0", r[1], "600", "", "", ""};
            case 2: return {"1.0", "nope", "200", "", "", ""};
            case 3: return {"1.0", r[1], "200", "", "", std::string("\x05") + "Bad"};
            default: return {"1.0", r[1], "200", ""};  // too few frames
        }
    });
    auto so = quick();
    so.security.plain_server = true;
    blocking_socket pull(ctx, socket_type::pull, so);
    const std::string where = pull.bind("tcp://127.0.0.1:*");
    link::context clients(1);
    const char* expect[] = {"bad version", "invalid status code", "bad request id", "invalid metadata", "malformed"};
    for (int i = 0; i < 5; ++i) {
        SCOPED_TRACE(expect[i]);
        mode = i;
        blocking_socket c(clients, socket_type::push, plain_client("u", "p"));
        c.connect(where);
        EXPECT_TRUE(wait_event(pull, failed_with(link::link_errc::zap_bad_reply, expect[i])));
    }
    EXPECT_EQ(pull.stats().peers, 0u);
}

TEST(zap_handler, a_shard_router_answers_a_shard_server) {
    link_env env;
    auto& zlog = env.new_log();
    auto& handler = env.make(1, socket_type::router, quick(), nullptr, &zlog);
    std::atomic<int> asked{0};
    env.on(1, [&] {
        handler.bind("inproc://zeromq.zap.01");
        handler.on_message([&](link::message_view m) {
            ++asked;
            // routing id, "", version, request id, domain, address, identity, mechanism, user, password
            const bool ok = m.size() == 10 && m.text(8) == "carol";
            link::message r;
            r.add(m[0]).add(m[1]).add("1.0").add(m[3]).add(ok ? "200" : "400").add("").add(ok ? "carol!" : "").add("");
            handler.send(r);
        });
    });
    auto so = quick();
    so.security.plain_server = true;
    std::mutex mu;
    std::vector<std::string> users;
    auto& log = env.new_log();
    auto& pull = env.make(0, socket_type::pull, so, nullptr, &log);
    env.on(0, [&] {
        pull.on_message([&](link::message_view m) {
            std::lock_guard lk(mu);
            const auto& p = m.properties();
            users.push_back(p && p->get("User-Id") ? *p->get("User-Id") : "?");
        });
    });
    const std::string where = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });
    auto& dave = env.make(1, socket_type::push, plain_client("dave", "x"));
    env.on(1, [&] { dave.connect(where); });
    ASSERT_TRUE(log.saw(socket_event::kind::handshake_failed));
    auto& carol = env.make(1, socket_type::push, plain_client("carol", "x"));
    env.on(1, [&] { carol.connect(where); });
    ASSERT_FALSE(env.send(carol, {"c1"}));
    ASSERT_TRUE(eventually([&] {
        std::lock_guard lk(mu);
        return !users.empty();
    }));
    std::lock_guard lk(mu);
    EXPECT_EQ(users.front(), "carol!");
    EXPECT_GE(asked.load(), 2);
}

TEST(zap_handler, handler_names_are_per_context) {
    // Each context has its own inproc names, as each libzmq context does: both bind the ZAP name,
    // and a server asks its own context's handler.
    link::context a(1), b(1);
    zap_thread refuse(a, [](const strs& r) -> strs { return {"1.0", r[1], "400", "", "", ""}; });
    zap_thread accept(b, [](const strs& r) -> strs { return {"1.0", r[1], "200", "", "b", ""}; });
    auto so = quick();
    so.security.plain_server = true;
    blocking_socket in_a(a, socket_type::pull, so);
    const std::string where = in_a.bind("tcp://127.0.0.1:*");
    blocking_socket c(b, socket_type::push, plain_client("u", "p"));
    c.connect(where);
    EXPECT_TRUE(wait_event(in_a, failed_with(link::link_errc::auth_failed, "400")));
    EXPECT_GE(refuse.count(), 1u);
    EXPECT_EQ(accept.count(), 0u);
}

TEST(zap_handler, a_libzmq_curve_client_against_a_strix_server_with_the_inproc_handler) {
    if (!zmq_curve()) GTEST_SKIP() << "libzmq built without CURVE";
    link::context ctx(1);
    const auto server_keys = link::curve_keypair::generate();
    char pub[41], sec[41], pub2[41], sec2[41];
    ASSERT_EQ(zmq_curve_keypair(pub, sec), 0);
    ASSERT_EQ(zmq_curve_keypair(pub2, sec2), 0);
    const auto raw = link::z85_decode(pub);
    ASSERT_TRUE(raw);
    const std::string allowed(reinterpret_cast<const char*>(raw->data()), raw->size());
    zap_thread zap(ctx, [&](const strs& r) -> strs {
        const bool ok = r.size() == 7 && r[6] == allowed;
        return {"1.0", r[1], ok ? "200" : "400", "", ok ? "zmq-user" : "", ""};
    });
    blocking_socket pull(ctx, socket_type::pull, curve_server(server_keys));
    const std::string where = pull.bind("tcp://127.0.0.1:*");

    zmq::context zctx;
    zmq::socket bad(zctx, ZMQ_PUSH);
    zmq::monitor mon(zctx, bad);
    bad.set(ZMQ_CURVE_SERVERKEY, server_keys.public_z85());
    bad.set(ZMQ_CURVE_PUBLICKEY, std::string(pub2));
    bad.set(ZMQ_CURVE_SECRETKEY, std::string(sec2));
    bad.connect(where);
    EXPECT_TRUE(wait_event(pull, failed_with(link::link_errc::auth_failed, "400")));
    EXPECT_TRUE(mon.saw(ZMQ_EVENT_HANDSHAKE_FAILED_AUTH));
    EXPECT_EQ(mon.count(ZMQ_EVENT_HANDSHAKE_SUCCEEDED), 0);

    zmq::socket good(zctx, ZMQ_PUSH);
    good.set(ZMQ_CURVE_SERVERKEY, server_keys.public_z85());
    good.set(ZMQ_CURVE_PUBLICKEY, std::string(pub));
    good.set(ZMQ_CURVE_SECRETKEY, std::string(sec));
    good.connect(where);
    for (int i = 0; i < 30; ++i) ASSERT_EQ(good.send({payload(100, i)}), 0);
    for (int i = 0; i < 30; ++i) {
        auto m = pull.recv(std::chrono::seconds(5));
        ASSERT_TRUE(m);
        EXPECT_EQ((*m)[0].text(), payload(100, i));
        EXPECT_EQ(prop(*m, "User-Id"), "zmq-user");
        EXPECT_EQ(prop(*m, "Socket-Type"), "PUSH");
    }
}

}  // namespace
