// strix::link against the real libzmq (4.3): every valid socket pair, each side of it played by
// strix and the other by libzmq, over tcp and ipc, with strix binding and libzmq binding. Every
// direction the pattern allows carries messages of 0, 255, 256 (the 1-byte / 8-byte size field
// boundary) and 1 MiB (strix's default max_msg_size, exactly) and one multipart message with an
// empty part, every byte checked, in order.
#include "link/interop_support.hpp"

#include <strix/link/socket.hpp>

#include <gtest/gtest.h>

#include <tuple>

namespace {

using namespace strix;
using namespace strix::test;
using link::socket_type;
using strs = std::vector<std::string>;

struct pairing {
    socket_type strix;
    int zmq;
    const char* name;
};

const pairing pairings[] = {
    {socket_type::pair, ZMQ_PAIR, "strixPAIR_zmqPAIR"},
    {socket_type::pub, ZMQ_SUB, "strixPUB_zmqSUB"},
    {socket_type::sub, ZMQ_PUB, "strixSUB_zmqPUB"},
    {socket_type::pub, ZMQ_XSUB, "strixPUB_zmqXSUB"},
    {socket_type::xsub, ZMQ_PUB, "strixXSUB_zmqPUB"},
    {socket_type::xpub, ZMQ_SUB, "strixXPUB_zmqSUB"},
    {socket_type::sub, ZMQ_XPUB, "strixSUB_zmqXPUB"},
    {socket_type::xpub, ZMQ_XSUB, "strixXPUB_zmqXSUB"},
    {socket_type::xsub, ZMQ_XPUB, "strixXSUB_zmqXPUB"},
    {socket_type::push, ZMQ_PULL, "strixPUSH_zmqPULL"},
    {socket_type::pull, ZMQ_PUSH, "strixPULL_zmqPUSH"},
    {socket_type::req, ZMQ_REP, "strixREQ_zmqREP"},
    {socket_type::rep, ZMQ_REQ, "strixREP_zmqREQ"},
    {socket_type::req, ZMQ_ROUTER, "strixREQ_zmqROUTER"},
    {socket_type::router, ZMQ_REQ, "strixROUTER_zmqREQ"},
    {socket_type::dealer, ZMQ_REP, "strixDEALER_zmqREP"},
    {socket_type::rep, ZMQ_DEALER, "strixREP_zmqDEALER"},
    {socket_type::dealer, ZMQ_DEALER, "strixDEALER_zmqDEALER"},
    {socket_type::dealer, ZMQ_ROUTER, "strixDEALER_zmqROUTER"},
    {socket_type::router, ZMQ_DEALER, "strixROUTER_zmqDEALER"},
    {socket_type::router, ZMQ_ROUTER, "strixROUTER_zmqROUTER"},
};

enum class binder { strix, zmq };
using param = std::tuple<pairing, transport, binder>;

// What one direction carries: every size, then a multipart message with an empty part inside.
std::vector<strs> messages(int seed) {
    return {{payload(0, seed)},
            {payload(255, seed)},
            {payload(256, seed)},
            {payload(1024 * 1024, seed)},
            {payload(1, seed), "", payload(256, seed + 1), payload(255, seed + 2)}};
}

strs cat(const strs& head, const strs& tail) {
    strs r(head);
    r.insert(r.end(), tail.begin(), tail.end());
    return r;
}

const std::string subscribe_all(1, '\x01');  // a subscription to every topic, as a message

class matrix : public ::testing::TestWithParam<param> {
protected:
    // Destroyed in reverse: the libzmq socket, then the engine and its sockets, then the context.
    zmq::context ctx;
    link_env env;
    address_maker where;
    inbox* box = nullptr;
    link::socket* s = nullptr;
    std::unique_ptr<zmq::socket> z;

    const pairing& pr() const { return std::get<0>(GetParam()); }
    bool is(socket_type st, int zt) const { return pr().strix == st && pr().zmq == zt; }

    void SetUp() override {
        const bool router_router = is(socket_type::router, ZMQ_ROUTER);
        link::socket_options o;
        if (router_router) o.routing_id = "strix-router";
        box = &env.new_inbox();
        s = &env.make(0, pr().strix, o, box);
        z = std::make_unique<zmq::socket>(ctx, pr().zmq);
        if (router_router) {
            z->set(ZMQ_ROUTING_ID, std::string("zmq-router"));
            z->set(ZMQ_ROUTER_MANDATORY, 1);
        }
        const transport t = std::get<1>(GetParam());
        if (std::get<2>(GetParam()) == binder::strix) {
            const std::string a = env.on(0, [&] { return s->bind(where(t)); });
            z->connect(a);
        } else {
            const std::string a = z->bind(where(t));
            env.on(0, [&] { s->connect(a); });
        }
        ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return s->peers(); }) == 1; }))
            << "no ZMTP handshake with libzmq";
    }

    void strix_sends(const strs& m) { ASSERT_FALSE(env.send(*s, m)) << "strix send " << describe(m); }
    void zmq_sends(const strs& m) { ASSERT_EQ(z->send(m), 0) << "libzmq send " << describe(m); }
    void strix_gets(const strs& want) { EXPECT_TRUE(same(box->pop(), want)); }
    void zmq_gets(const strs& want) { EXPECT_TRUE(same(z->recv(), want)); }

    // One direction, no replies: everything sent first (the high-water marks hold it), then read.
    void strix_to_zmq(int seed) {
        const auto ms = messages(seed);
        for (auto& m : ms) strix_sends(m);
        for (auto& m : ms) zmq_gets(m);
    }
    void zmq_to_strix(int seed) {
        const auto ms = messages(seed);
        for (auto& m : ms) zmq_sends(m);
        for (auto& m : ms) strix_gets(m);
    }
    // A libzmq PUB drops what it sends before our subscription reached it: probe until one
    // arrives, then skip the probes still in flight.
    void zmq_to_strix_after_probes(int seed) {
        bool through = false;
        for (int i = 0; i < 250 && !through; ++i) {
            zmq_sends({"probe"});
            through = !box->pop(std::chrono::milliseconds(20)).empty();
        }
        ASSERT_TRUE(through) << "the subscription never reached libzmq's PUB";
        const auto ms = messages(seed);
        for (auto& m : ms) zmq_sends(m);
        auto first = box->pop();
        while (first == strs{"probe"}) first = box->pop();
        EXPECT_TRUE(same(first, ms[0]));
        for (std::size_t i = 1; i < ms.size(); ++i) strix_gets(ms[i]);
    }
};

TEST_P(matrix, every_size_and_multipart_both_ways) {
    const int zt = pr().zmq;
    switch (pr().strix) {
        case socket_type::pair:
        case socket_type::dealer:
            if (zt == ZMQ_PAIR || zt == ZMQ_DEALER) {
                strix_to_zmq(1);
                zmq_to_strix(2);
            } else if (zt == ZMQ_REP) {
                // strix DEALER -> libzmq REP: the DEALER writes the empty delimiter itself.
                for (auto& m : messages(3)) {
                    strix_sends(cat({""}, m));
                    zmq_gets(m);
                    zmq_sends(flip(m));
                    strix_gets(cat({""}, flip(m)));
                }
            } else {
                // strix DEALER -> libzmq ROUTER: the ROUTER names the DEALER with one id throughout.
                std::string id;
                for (auto& m : messages(4)) {
                    strix_sends(m);
                    auto got = z->recv();
                    ASSERT_TRUE(got && got->size() == m.size() + 1) << (got ? describe(*got) : "nothing");
                    if (id.empty()) id = got->front();
                    EXPECT_EQ(got->front(), id);
                    EXPECT_TRUE(same(strs(got->begin() + 1, got->end()), m));
                    zmq_sends(cat({id}, flip(m)));
                    strix_gets(flip(m));
                }
                EXPECT_FALSE(id.empty());
            }
            break;
        case socket_type::push: strix_to_zmq(5); break;
        case socket_type::pull: zmq_to_strix(6); break;
        case socket_type::pub:
        case socket_type::xpub:
            if (zt == ZMQ_SUB)
                z->subscribe("");
            else
                zmq_sends({subscribe_all});
            if (pr().strix == socket_type::xpub) {
                // The XPUB application sees the subscription.
                ASSERT_TRUE(eventually([&] {
                    z->events();
                    return box->size() > 0;
                }));
                strix_gets({subscribe_all});
            }
            ASSERT_TRUE(eventually([&] {
                z->events();  // a bound libzmq SUB sends its subscriptions from its own thread
                return env.on(0, [&] { return s->subscribers(); }) == 1;
            }));
            strix_to_zmq(7);
            if (is(socket_type::xpub, ZMQ_XSUB)) zmq_to_strix(8);  // XSUB -> XPUB upstream messages
            break;
        case socket_type::sub:
        case socket_type::xsub:
            if (pr().strix == socket_type::sub)
                env.on(0, [&] { s->subscribe(std::string_view()); });
            else
                strix_sends({subscribe_all});
            if (zt == ZMQ_XPUB) {
                zmq_gets({subscribe_all});  // libzmq's XPUB hands strix's subscription up as 0x01 + topic
                zmq_to_strix(9);
            } else {
                zmq_to_strix_after_probes(10);
            }
            if (is(socket_type::xsub, ZMQ_XPUB)) strix_to_zmq(11);  // upstream
            break;
        case socket_type::req:
            for (auto& m : messages(12)) {
                strix_sends(m);
                if (zt == ZMQ_REP) {
                    zmq_gets(m);
                    zmq_sends(flip(m));
                } else {
                    // libzmq ROUTER sees [id, "", body...] from a REQ.
                    auto got = z->recv();
                    ASSERT_TRUE(got && got->size() == m.size() + 2) << (got ? describe(*got) : "nothing");
                    EXPECT_EQ((*got)[1], "");
                    EXPECT_TRUE(same(strs(got->begin() + 2, got->end()), m));
                    zmq_sends(cat({got->front(), ""}, flip(m)));
                }
                strix_gets(flip(m));
            }
            break;
        case socket_type::rep:
            for (auto& m : messages(13)) {
                zmq_sends(zt == ZMQ_DEALER ? cat({""}, m) : m);
                strix_gets(m);  // the envelope stays inside REP
                strix_sends(flip(m));
                zmq_gets(zt == ZMQ_DEALER ? cat({""}, flip(m)) : flip(m));
            }
            break;
        case socket_type::router:
            if (zt == ZMQ_ROUTER) {
                // Both name themselves; each routes to the other by the name it announced.
                for (auto& m : messages(14)) {
                    strix_sends(cat({"zmq-router"}, m));
                    zmq_gets(cat({"strix-router"}, m));
                    zmq_sends(cat({"strix-router"}, flip(m)));
                    strix_gets(cat({"zmq-router"}, flip(m)));
                }
                break;
            }
            for (auto& m : messages(15)) {
                zmq_sends(m);
                auto got = box->pop();
                const strs envelope = zt == ZMQ_REQ ? strs{""} : strs{};
                ASSERT_EQ(got.size(), 1 + envelope.size() + m.size()) << describe(got);
                EXPECT_EQ(got.front().size(), 5u) << "strix names an anonymous peer as libzmq does: 0 + 32-bit counter";
                EXPECT_TRUE(same(strs(got.begin() + 1, got.end()), cat(envelope, m)));
                strix_sends(cat(cat({got.front()}, envelope), flip(m)));
                zmq_gets(flip(m));
            }
            break;
    }
    EXPECT_EQ(env.on(0, [&] { return s->stats().protocol_errors + s->stats().handshake_failures; }), 0u);
    EXPECT_EQ(env.on(0, [&] { return s->peers(); }), 1u) << "the connection did not survive the exchange";
}

INSTANTIATE_TEST_SUITE_P(libzmq, matrix,
                         ::testing::Combine(::testing::ValuesIn(pairings),
                                            ::testing::Values(transport::tcp, transport::ipc),
                                            ::testing::Values(binder::strix, binder::zmq)),
                         [](const ::testing::TestParamInfo<param>& p) {
                             std::string n = std::get<0>(p.param).name;
                             n += "_";
                             n += name(std::get<1>(p.param));
                             n += std::get<2>(p.param) == binder::strix ? "_strix_binds" : "_zmq_binds";
                             return n;
                         });

}  // namespace
