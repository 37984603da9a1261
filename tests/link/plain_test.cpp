// PLAIN (RFC 24) between strix and the real libzmq, both ways over tcp: the right password
// carries messages (content, count, order checked), a wrong one is refused on both sides and
// counted. libzmq's server side checks passwords through a ZAP handler (RFC 27) on
// inproc://zeromq.zap.01, played here by a thread of the test.
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

// libzmq's ZAP handler: accepts user "admin" with password "secret", refuses the rest with 400.
class zmq_zap_handler {
public:
    explicit zmq_zap_handler(zmq::context& ctx) : rep_(ctx, ZMQ_REP) {
        rep_.bind("inproc://zeromq.zap.01");
        thread_ = std::thread([this] {
            while (!stop_) {
                auto req = rep_.recv(std::chrono::milliseconds(50));
                if (!req) continue;
                // version, request id, domain, address, identity, mechanism, credentials...
                const bool ok =
                    req->size() == 8 && (*req)[5] == "PLAIN" && (*req)[6] == "admin" && (*req)[7] == "secret";
                if (req->size() >= 6) mechanisms_ += (*req)[5] + ";";
                rep_.send({"1.0", req->size() > 1 ? (*req)[1] : "", ok ? "200" : "400", ok ? "OK" : "no",
                           ok ? "admin" : "", ""});
                ++requests_;
            }
        });
    }
    ~zmq_zap_handler() {
        stop_ = true;
        thread_.join();
    }
    int requests() const { return requests_; }

private:
    zmq::socket rep_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::atomic<int> requests_{0};
    std::string mechanisms_;
};

link::socket_options plain_server(link::allow_list& allow) {
    link::socket_options o;
    o.security.plain_server = true;
    o.security.zap = allow.handler();
    return o;
}

link::socket_options plain_client(std::string user, std::string pass) {
    link::socket_options o;
    o.security.plain_username = std::move(user);
    o.security.plain_password = std::move(pass);
    return o;
}

void zmq_plain_client(zmq::socket& z, const std::string& user, const std::string& pass) {
    z.set(ZMQ_PLAIN_USERNAME, user);
    z.set(ZMQ_PLAIN_PASSWORD, pass);
}

std::vector<strs> traffic(int seed) {
    std::vector<strs> v;
    for (int i = 0; i < 300; ++i) v.push_back({payload(static_cast<std::size_t>(i % 70), seed + i)});
    v.push_back({payload(70000, seed)});
    v.push_back({"a", "", payload(300, seed)});
    return v;
}

::testing::AssertionResult saw_error(event_log& log, link::link_errc e, const std::string& detail_prefix) {
    std::string all;
    for (auto& ev : log.all()) {
        if (ev.what == socket_event::kind::handshake_failed && ev.error == e && ev.detail.starts_with(detail_prefix))
            return ::testing::AssertionSuccess();
        all += std::string(link::to_string(ev.what)) + "/" + ev.error.message() + "/" + ev.detail + "; ";
    }
    return ::testing::AssertionFailure() << "events: " << all;
}

TEST(plain_interop, strix_server_zmq_client_right_and_wrong_password) {
    zmq::context ctx;
    link_env env;
    link::allow_list allow;
    allow.allow_user("admin", "secret");
    auto& box = env.new_inbox();
    auto& log = env.new_log();
    auto& pull = env.make(0, socket_type::pull, plain_server(allow), &box, &log);
    const std::string a = env.on(0, [&] { return pull.bind("tcp://127.0.0.1:*"); });

    zmq::socket bad(ctx, ZMQ_PUSH);
    zmq::monitor mon(ctx, bad);
    zmq_plain_client(bad, "admin", "guess");
    bad.connect(a);
    ASSERT_TRUE(log.saw(socket_event::kind::handshake_failed));
    EXPECT_TRUE(saw_error(log, link::link_errc::auth_failed, "400"));
    // libzmq 4.3.4's PLAIN client reports the ERROR "400" it gets as a protocol failure (it
    // reads ERROR under the malformed name its server writes, see zmtp_pipe.cpp), not as an
    // authentication failure: refused either way, and never attached.
    EXPECT_GE(mon.count(ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL, 1, 5s) + mon.count(ZMQ_EVENT_HANDSHAKE_FAILED_AUTH), 1);
    EXPECT_EQ(mon.count(ZMQ_EVENT_HANDSHAKE_SUCCEEDED), 0);
    EXPECT_GE(allow.refused(), 1u);

    zmq::socket good(ctx, ZMQ_PUSH);
    zmq_plain_client(good, "admin", "secret");
    good.connect(a);
    const auto ms = traffic(1);
    for (auto& m : ms) ASSERT_EQ(good.send(m), 0);
    for (auto& m : ms) ASSERT_TRUE(same(box.pop(), m)) << describe(m);
    EXPECT_TRUE(box.stays_empty());
    EXPECT_EQ(env.on(0, [&] { return pull.peers(); }), 1u);
}

TEST(plain_interop, zmq_server_strix_client_right_and_wrong_password) {
    zmq::context ctx;
    zmq_zap_handler zap(ctx);
    link_env env;
    zmq::socket pull(ctx, ZMQ_PULL);
    zmq::monitor mon(ctx, pull);
    pull.set(ZMQ_PLAIN_SERVER, 1);
    const std::string a = pull.bind("tcp://127.0.0.1:*");

    auto& blog = env.new_log();
    auto& bad = env.make(0, socket_type::push, plain_client("admin", "guess"), nullptr, &blog);
    env.on(0, [&] { bad.connect(a); });
    ASSERT_TRUE(blog.saw(socket_event::kind::handshake_failed));
    // libzmq answers a refused HELLO with ERROR carrying ZAP's status code.
    EXPECT_TRUE(saw_error(blog, link::link_errc::peer_error, "400"));
    EXPECT_GE(env.on(0, [&] { return bad.stats().handshake_failures; }), 1u);
    EXPECT_GE(mon.count(ZMQ_EVENT_HANDSHAKE_FAILED_AUTH, 1, 5s), 1);
    env.destroy(bad);

    auto& good = env.make(1, socket_type::push, plain_client("admin", "secret"));
    env.on(1, [&] { good.connect(a); });
    ASSERT_TRUE(eventually([&] { return env.on(1, [&] { return good.peers(); }) == 1; }));
    const auto ms = traffic(2);
    for (auto& m : ms) ASSERT_FALSE(env.send(good, m));
    for (auto& m : ms) ASSERT_TRUE(same(pull.recv(), m)) << describe(m);
    EXPECT_FALSE(pull.recv(std::chrono::milliseconds(200)));
    EXPECT_GE(zap.requests(), 2);
}

TEST(plain, strix_to_strix_with_handler) {
    link_env env;
    std::atomic<int> asked{0};
    link::socket_options o;
    o.security.plain_server = true;
    o.security.zap = [&](const link::zap_request& r) {
        ++asked;
        link::zap_reply rep;
        if (r.mechanism != "PLAIN" || r.credentials != std::vector<std::string>{"u", "p"}) rep.status_code = "400";
        return rep;
    };
    auto& box = env.new_inbox();
    auto& srv = env.make(0, socket_type::rep, o, &box);
    const std::string a = env.on(0, [&] { return srv.bind("tcp://127.0.0.1:*"); });
    auto& rbox = env.new_inbox();
    auto& req = env.make(1, socket_type::req, plain_client("u", "p"), &rbox);
    env.on(1, [&] { req.connect(a); });
    for (int i = 0; i < 20; ++i) {
        ASSERT_FALSE(env.send(req, {"q" + std::to_string(i)}));
        ASSERT_TRUE(same(box.pop(), strs{"q" + std::to_string(i)}));
        ASSERT_FALSE(env.send(srv, {"r" + std::to_string(i)}));
        ASSERT_TRUE(same(rbox.pop(), strs{"r" + std::to_string(i)}));
    }
    EXPECT_EQ(asked.load(), 1);
}

}  // namespace
