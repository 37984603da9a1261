// strix::link against the real libzmq (4.3): the patterns' rules across the two implementations.
// Subscriptions counted on the subscriber's side (two subscribes need two cancels, either way
// round), strix's subscriptions as libzmq's XPUB sees them, REQ/REP envelopes (correlated
// requests, multi-hop envelopes), ROUTER routing ids both ways, and socket-type mismatches
// refused by the handshake with nothing delivered.
#include "link/interop_support.hpp"

#include <strix/link/socket.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace {

using namespace strix;
using namespace strix::test;
using link::socket_type;
using kind = link::socket_event::kind;
using strs = std::vector<std::string>;
using namespace std::chrono_literals;

std::string tag(std::size_t i, int round) {
    std::string s("req");
    s.append(std::to_string(i)).append("-").append(std::to_string(round));
    return s;
}

std::string sub_msg(char flag, const std::string& topic) {
    std::string m(1, flag);
    return m.append(topic);
}

class semantics : public interop_test_base {};

// --- subscriptions --------------------------------------------------------------------------

TEST_F(semantics, libzmq_sub_subscribing_twice_and_cancelling_once_still_receives) {
    event_log& log = env.new_log();
    auto& pub = env.make(0, socket_type::pub, {}, nullptr, &log);
    const std::string a = env.on(0, [&] { return pub.bind(where(transport::tcp)); });
    auto& sub = zsock(ZMQ_SUB);
    sub.connect(a);
    sub.subscribe("news.");
    sub.subscribe("news.");
    ASSERT_TRUE(eventually([&] { return on(pub, [&] { return pub.subscribers(); }) == 1; }));
    sub.unsubscribe("news.");  // one of two: libzmq's SUB keeps the topic and sends no CANCEL
    // A message after the cancel proves the cancel (had it gone out) was processed before it.
    std::this_thread::sleep_for(50ms);
    ASSERT_FALSE(env.send(pub, {"sports.1"}));
    ASSERT_FALSE(env.send(pub, {"news.1", "body"}));
    EXPECT_TRUE(same(sub.recv(), {"news.1", "body"}));
    EXPECT_EQ(log.count(kind::unsubscribed), 0u);
    EXPECT_EQ(on(pub, [&] { return pub.subscribers(); }), 1u);

    sub.unsubscribe("news.");  // the last one: libzmq sends CANCEL and strix stops publishing to it
    ASSERT_TRUE(log.saw(kind::unsubscribed));
    EXPECT_EQ(on(pub, [&] { return pub.subscribers(); }), 0u);
    ASSERT_FALSE(env.send(pub, {"news.2"}));
    EXPECT_FALSE(sub.recv(200ms));
    EXPECT_EQ(log.count(kind::subscribed), 1u) << "one peer, one topic";
}

TEST_F(semantics, strix_sub_subscribing_twice_and_cancelling_once_still_receives_from_libzmq_pub) {
    auto& zpub = zsock(ZMQ_PUB);
    const std::string a = zpub.bind(where(transport::tcp));
    inbox& got = env.new_inbox();
    auto& sub = env.make(1, socket_type::sub, {}, &got);
    env.on(1, [&] {
        sub.subscribe("t.");
        sub.subscribe("t.");
        sub.connect(a);
    });
    ASSERT_TRUE(wait_peers(sub, 1, &zpub));
    // libzmq's PUB drops what it publishes before the subscription arrives: probe first.
    bool through = false;
    for (int i = 0; i < 250 && !through; ++i) {
        ASSERT_EQ(zpub.send({"t.probe"}), 0);
        through = !got.pop(20ms).empty();
    }
    ASSERT_TRUE(through);
    env.on(1, [&] { sub.unsubscribe("t."); });  // one of two
    std::this_thread::sleep_for(50ms);
    ASSERT_EQ(zpub.send({"u.1"}), 0);
    ASSERT_EQ(zpub.send({"t.1"}), 0);
    auto m = got.pop();
    while (m == strs{"t.probe"}) m = got.pop();
    EXPECT_EQ(m, strs{"t.1"}) << "still subscribed after one cancel of two";

    env.on(1, [&] { sub.unsubscribe("t."); });  // the last: CANCEL goes to libzmq
    std::this_thread::sleep_for(100ms);
    for (int i = 0; i < 5; ++i) ASSERT_EQ(zpub.send({"t.after"}), 0);
    EXPECT_TRUE(got.stays_empty(300ms));
}

TEST_F(semantics, libzmq_xpub_sees_each_strix_subscription_as_0x01_and_the_last_cancel_as_0x00) {
    auto& xpub = zsock(ZMQ_XPUB);
    xpub.set(ZMQ_XPUB_VERBOSER, 1);  // pass every subscribe and cancel, duplicates included
    const std::string a = xpub.bind(where(transport::ipc));
    inbox& got = env.new_inbox();
    auto& sub = env.make(1, socket_type::sub, {}, &got);
    env.on(1, [&] {
        sub.subscribe("a.");  // before the connection: sent when the peer attaches
        sub.connect(a);
    });
    EXPECT_TRUE(same(xpub.recv(), {sub_msg(1, "a.")}));
    env.on(1, [&] {
        sub.subscribe("b.");
        sub.subscribe("b.");
        sub.unsubscribe("b.");  // one of two: nothing on the wire
    });
    EXPECT_TRUE(same(xpub.recv(), {sub_msg(1, "b.")}));
    EXPECT_TRUE(same(xpub.recv(), {sub_msg(1, "b.")}));
    EXPECT_FALSE(xpub.recv(200ms)) << "a cancel went out while one subscription of two remained";
    // The publisher filters with what it heard: b. and a. both still subscribed.
    ASSERT_EQ(xpub.send({"b.1"}), 0);
    ASSERT_EQ(xpub.send({"c.1"}), 0);
    ASSERT_EQ(xpub.send({"a.1"}), 0);
    EXPECT_EQ(got.pop(), strs{"b.1"});
    EXPECT_EQ(got.pop(), strs{"a.1"});
    env.on(1, [&] { sub.unsubscribe("b."); });
    EXPECT_TRUE(same(xpub.recv(), {sub_msg(0, "b.")}));
    // And strix's XSUB sends subscription messages as the application wrote them.
    inbox& xgot = env.new_inbox();
    auto& xsub = env.make(0, socket_type::xsub, {}, &xgot);
    env.on(0, [&] { xsub.connect(a); });
    ASSERT_TRUE(wait_peers(xsub, 1));
    ASSERT_FALSE(env.send(xsub, {sub_msg(1, "x.")}));
    EXPECT_TRUE(same(xpub.recv(), {sub_msg(1, "x.")}));
    ASSERT_EQ(xpub.send({"x.1"}), 0);
    EXPECT_EQ(xgot.pop(), strs{"x.1"});
    EXPECT_TRUE(got.stays_empty(100ms)) << "x. is the XSUB's topic, not the SUB's";
}

// --- REQ/REP envelopes ------------------------------------------------------------------------

TEST_F(semantics, libzmq_req_with_correlated_requests_to_strix_rep) {
    inbox& got = env.new_inbox();
    auto& rep = env.make(0, socket_type::rep, {}, &got);
    const std::string a = env.on(0, [&] { return rep.bind(where(transport::tcp)); });
    auto& req = zsock(ZMQ_REQ);
    req.set(ZMQ_REQ_CORRELATE, 1);  // a request id before the delimiter: [id, "", body]
    req.set(ZMQ_REQ_RELAXED, 1);    // may send again before the reply
    req.connect(a);
    for (int i = 0; i < 3; ++i) {
        const strs q{"q" + std::to_string(i), payload(300, i)};
        ASSERT_EQ(req.send(q), 0);
        EXPECT_EQ(got.pop(), q);
        ASSERT_FALSE(env.send(rep, flip(q)));
        EXPECT_TRUE(same(req.recv(), flip(q))) << "strix REP must return the whole envelope, request id included";
    }
    // Two requests before any reply: strix REP answers them in turn; libzmq's REQ accepts only
    // the reply carrying the latest request's id, so the first reply is dropped there.
    ASSERT_EQ(req.send({"first"}), 0);
    EXPECT_EQ(got.pop(), strs{"first"});
    ASSERT_EQ(req.send({"second"}), 0);
    ASSERT_FALSE(env.send(rep, {"re:first"}));
    EXPECT_EQ(got.pop(), strs{"second"});
    ASSERT_FALSE(env.send(rep, {"re:second"}));
    EXPECT_TRUE(same(req.recv(), {"re:second"}));
    EXPECT_FALSE(req.recv(100ms));
}

TEST_F(semantics, libzmq_dealer_multi_hop_envelope_comes_back_whole_from_strix_rep) {
    inbox& got = env.new_inbox();
    auto& rep = env.make(0, socket_type::rep, {}, &got);
    const std::string a = env.on(0, [&] { return rep.bind(where(transport::ipc)); });
    auto& dealer = zsock(ZMQ_DEALER);
    dealer.connect(a);
    // As if through two ROUTER hops: [hop1, hop2, "", body...].
    const std::string hop1("\0\x01\x02\x03\x04", 5);
    ASSERT_EQ(dealer.send({hop1, "hop2", "", "body", ""}), 0);
    EXPECT_EQ(got.pop(), (strs{"body", ""}));
    ASSERT_FALSE(env.send(rep, {"reply", "2"}));
    EXPECT_TRUE(same(dealer.recv(), {hop1, "hop2", "", "reply", "2"}));
    // A message with no delimiter is not a request: dropped, not delivered.
    ASSERT_EQ(dealer.send({"no", "delimiter"}), 0);
    EXPECT_TRUE(got.stays_empty(200ms));
    EXPECT_EQ(stats(rep).dropped_unroutable, 1u);
}

TEST_F(semantics, strix_req_to_libzmq_router_carries_its_routing_id_and_ignores_stray_replies) {
    auto& router = zsock(ZMQ_ROUTER);
    const std::string a = router.bind(where(transport::tcp));
    inbox& got = env.new_inbox();
    link::socket_options o;
    o.routing_id = "req-1";
    auto& req = env.make(1, socket_type::req, o, &got);
    env.on(1, [&] { req.connect(a); });
    ASSERT_FALSE(env.send(req, {"question", "2"}));
    EXPECT_TRUE(same(router.recv(), {"req-1", "", "question", "2"}));
    ASSERT_EQ(router.send({"req-1", "", "answer"}), 0);
    EXPECT_EQ(got.pop(), strs{"answer"});
    // A second reply to an answered request, and one without the delimiter: neither delivered.
    ASSERT_EQ(router.send({"req-1", "", "stray"}), 0);
    ASSERT_EQ(router.send({"req-1", "no-delimiter"}), 0);
    EXPECT_TRUE(got.stays_empty(200ms));
    EXPECT_EQ(stats(req).dropped_unroutable, 2u);
    // The REQ is free for the next request.
    ASSERT_FALSE(env.send(req, {"again"}));
    EXPECT_TRUE(same(router.recv(), {"req-1", "", "again"}));
}

// --- ROUTER identities ------------------------------------------------------------------------

TEST_F(semantics, libzmq_dealers_with_routing_ids_to_strix_router) {
    inbox& got = env.new_inbox();
    auto& router = env.make(0, socket_type::router, {}, &got);
    const std::string a = env.on(0, [&] { return router.bind(where(transport::tcp)); });
    auto& alpha = zsock(ZMQ_DEALER);
    alpha.set(ZMQ_ROUTING_ID, std::string("alpha"));
    alpha.connect(a);
    auto& beta = zsock(ZMQ_DEALER);
    beta.set(ZMQ_ROUTING_ID, std::string("beta"));
    beta.connect(a);
    ASSERT_TRUE(wait_peers(router, 2));
    ASSERT_EQ(alpha.send({"from alpha"}), 0);
    EXPECT_EQ(got.pop(), (strs{"alpha", "from alpha"}));
    ASSERT_EQ(beta.send({"from beta", ""}), 0);
    EXPECT_EQ(got.pop(), (strs{"beta", "from beta", ""}));
    // Replies go by id, each to its own DEALER only.
    ASSERT_FALSE(env.send(router, {"beta", "to beta"}));
    ASSERT_FALSE(env.send(router, {"alpha", "to alpha", "2"}));
    EXPECT_TRUE(same(beta.recv(), {"to beta"}));
    EXPECT_TRUE(same(alpha.recv(), {"to alpha", "2"}));
    EXPECT_FALSE(alpha.recv(100ms));
    EXPECT_FALSE(beta.recv(100ms));
    // An unknown id is dropped and counted.
    ASSERT_FALSE(env.send(router, {"gamma", "to nobody"}));
    EXPECT_EQ(stats(router).dropped_unroutable, 1u);
    // A second peer claiming a taken id keeps the first one's routes; strix names it itself.
    auto& alpha2 = zsock(ZMQ_DEALER);
    alpha2.set(ZMQ_ROUTING_ID, std::string("alpha"));
    alpha2.connect(a);
    ASSERT_TRUE(wait_peers(router, 3));
    ASSERT_EQ(alpha2.send({"impostor"}), 0);
    auto m = got.pop();
    ASSERT_EQ(m.size(), 2u);
    EXPECT_NE(m[0], "alpha");
    EXPECT_EQ(m[1], "impostor");
    ASSERT_FALSE(env.send(router, {"alpha", "still alpha"}));
    EXPECT_TRUE(same(alpha.recv(), {"still alpha"}));
    ASSERT_FALSE(env.send(router, {m[0], "for the second"}));
    EXPECT_TRUE(same(alpha2.recv(), {"for the second"}));
}

TEST_F(semantics, strix_dealers_with_routing_ids_to_libzmq_router) {
    auto& router = zsock(ZMQ_ROUTER);
    router.set(ZMQ_ROUTER_MANDATORY, 1);
    const std::string a = router.bind(where(transport::ipc));
    inbox& at_alpha = env.new_inbox();
    inbox& at_beta = env.new_inbox();
    link::socket_options oa, ob;
    oa.routing_id = "alpha";
    ob.routing_id = "beta";
    auto& alpha = env.make(0, socket_type::dealer, oa, &at_alpha);
    auto& beta = env.make(1, socket_type::dealer, ob, &at_beta);
    env.on(0, [&] { alpha.connect(a); });
    env.on(1, [&] { beta.connect(a); });
    ASSERT_FALSE(env.send(alpha, {"from alpha"}));
    ASSERT_FALSE(env.send(beta, {"from beta"}));
    std::set<strs> seen;
    for (int i = 0; i < 2; ++i) {
        auto m = router.recv();
        ASSERT_TRUE(m);
        seen.insert(*m);
    }
    EXPECT_EQ(seen, (std::set<strs>{{"alpha", "from alpha"}, {"beta", "from beta"}}));
    ASSERT_EQ(router.send({"beta", "to beta"}), 0);
    ASSERT_EQ(router.send({"alpha", "to alpha"}), 0);
    EXPECT_EQ(at_alpha.pop(), strs{"to alpha"});
    EXPECT_EQ(at_beta.pop(), strs{"to beta"});
    EXPECT_TRUE(at_alpha.stays_empty(100ms));
    EXPECT_TRUE(at_beta.stays_empty(0ms));
    EXPECT_EQ(router.send({"gamma", "x"}), EHOSTUNREACH) << "libzmq knows exactly the ids strix announced";
}

// --- several libzmq peers on one strix socket ---------------------------------------------------

TEST_F(semantics, strix_pub_fans_one_encoding_out_to_several_libzmq_subscribers) {
    auto& pub = env.make(0, socket_type::pub);
    const std::string at_tcp = env.on(0, [&] { return pub.bind(where(transport::tcp)); });
    const std::string at_ipc = env.on(0, [&] { return pub.bind(where(transport::ipc)); });
    std::vector<zmq::socket*> subs;
    for (int i = 0; i < 4; ++i) {
        auto& z = zsock(ZMQ_SUB);
        z.subscribe(i == 3 ? "only-this" : "");
        z.connect(i % 2 ? at_ipc : at_tcp);
        subs.push_back(&z);
    }
    ASSERT_TRUE(eventually([&] { return on(pub, [&] { return pub.subscribers(); }) == 4; }));
    // Three subscribers take every message (one shared wire encoding); the fourth none of them.
    const std::vector<strs> ms = {
        {""}, {payload(255, 1)}, {payload(256, 2)}, {payload(1024 * 1024, 3)}, {"m", "", payload(300, 4)}};
    for (auto& m : ms) ASSERT_FALSE(env.send(pub, m));
    for (int i = 0; i < 3; ++i)
        for (auto& m : ms) EXPECT_TRUE(same(subs[static_cast<std::size_t>(i)]->recv(), m)) << "subscriber " << i;
    ASSERT_FALSE(env.send(pub, {"only-this", "one"}));
    EXPECT_TRUE(same(subs[3]->recv(), {"only-this", "one"}));
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(same(subs[static_cast<std::size_t>(i)]->recv(), {"only-this", "one"}));
    EXPECT_EQ(stats(pub).dropped_hwm, 0u);
}

TEST_F(semantics, strix_push_round_robins_over_libzmq_pulls_and_strix_pull_fair_queues_libzmq_pushes) {
    auto& push = env.make(0, socket_type::push);
    const std::string a = env.on(0, [&] { return push.bind(where(transport::tcp)); });
    std::vector<zmq::socket*> pulls;
    for (int i = 0; i < 3; ++i) {
        pulls.push_back(&zsock(ZMQ_PULL));
        pulls.back()->connect(a);
    }
    ASSERT_TRUE(wait_peers(push, 3));
    constexpr int n = 30;
    for (int i = 0; i < n; ++i) ASSERT_FALSE(env.send(push, {std::to_string(i)}));
    // Round robin with room everywhere: each PULL gets every third message, in order.
    std::vector<int> all;
    for (auto* z : pulls) {
        int prev = -1;
        for (int k = 0; k < n / 3; ++k) {
            auto m = z->recv();
            ASSERT_TRUE(m);
            const int v = std::stoi(m->front());
            EXPECT_GT(v, prev);
            if (prev >= 0) {
                EXPECT_EQ(v - prev, 3) << "not round robin";
            }
            prev = v;
            all.push_back(v);
        }
        EXPECT_FALSE(z->recv(50ms));
    }
    std::sort(all.begin(), all.end());
    for (int i = 0; i < n; ++i) EXPECT_EQ(all[static_cast<std::size_t>(i)], i);

    // The other way: three libzmq PUSHes, each stream arrives whole and in order.
    inbox& got = env.new_inbox();
    auto& pull = env.make(1, socket_type::pull, {}, &got);
    const std::string b = env.on(1, [&] { return pull.bind(where(transport::ipc)); });
    std::vector<zmq::socket*> pushes;
    for (int i = 0; i < 3; ++i) {
        pushes.push_back(&zsock(ZMQ_PUSH));
        pushes.back()->connect(b);
    }
    for (int k = 0; k < 100; ++k)
        for (int i = 0; i < 3; ++i)
            ASSERT_EQ(pushes[static_cast<std::size_t>(i)]->send({std::to_string(i), std::to_string(k)}), 0);
    int next[3] = {0, 0, 0};
    for (int k = 0; k < 300; ++k) {
        auto m = got.pop();
        ASSERT_EQ(m.size(), 2u);
        const int src = std::stoi(m[0]);
        ASSERT_EQ(std::stoi(m[1]), next[src]++) << "from push " << src;
    }
    EXPECT_EQ(next[0] + next[1] + next[2], 300);
}

TEST_F(semantics, strix_rep_serves_several_libzmq_reqs_each_its_own_reply) {
    inbox& got = env.new_inbox();
    auto& rep = env.make(0, socket_type::rep, {}, &got);
    const std::string a = env.on(0, [&] { return rep.bind(where(transport::tcp)); });
    // The REP answers every request with "re:" + request, from its handler.
    env.on(0, [&] {
        rep.on_message([&](link::message_view m) {
            got.push(m);
            std::string r = "re:" + std::string(m.text(0));
            rep.send(r);
        });
    });
    std::vector<zmq::socket*> reqs;
    for (int i = 0; i < 5; ++i) {
        reqs.push_back(&zsock(ZMQ_REQ));
        reqs.back()->connect(a);
    }
    for (int round = 0; round < 3; ++round) {
        // All five ask at once; strix REP takes them one at a time, replying to each asker.
        for (std::size_t i = 0; i < reqs.size(); ++i) ASSERT_EQ(reqs[i]->send({tag(i, round)}), 0);
        for (std::size_t i = 0; i < reqs.size(); ++i) EXPECT_TRUE(same(reqs[i]->recv(), {"re:" + tag(i, round)}));
    }
    std::size_t requests = 0;
    while (!got.stays_empty(50ms)) got.pop(), ++requests;
    EXPECT_EQ(requests, 15u);
}

TEST_F(semantics, strix_xpub_verbose_hears_every_libzmq_subscribe) {
    inbox& verbose_box = env.new_inbox();
    inbox& plain_box = env.new_inbox();
    link::socket_options v;
    v.xpub_verbose = true;
    auto& verbose = env.make(0, socket_type::xpub, v, &verbose_box);
    auto& plain = env.make(1, socket_type::xpub, {}, &plain_box);
    const std::string va = env.on(0, [&] { return verbose.bind(where(transport::tcp)); });
    const std::string pa = env.on(1, [&] { return plain.bind(where(transport::tcp)); });
    auto& s1 = zsock(ZMQ_SUB);
    auto& s2 = zsock(ZMQ_SUB);
    for (auto* z : {&s1, &s2}) {
        z->connect(va);
        z->connect(pa);
    }
    ASSERT_TRUE(wait_peers(verbose, 2));
    ASSERT_TRUE(wait_peers(plain, 2));
    s1.subscribe("t");
    s2.subscribe("t");
    s1.subscribe("t");  // libzmq's SUB repeats a subscribe upstream
    for (int i = 0; i < 3; ++i) EXPECT_EQ(verbose_box.pop(), strs{sub_msg(1, "t")});
    EXPECT_TRUE(verbose_box.stays_empty(100ms));
    EXPECT_EQ(plain_box.pop(), strs{sub_msg(1, "t")}) << "a plain XPUB hears the first subscription of a topic";
    EXPECT_TRUE(plain_box.stays_empty(0ms));
    // The topic goes when its last subscriber cancels.
    s1.unsubscribe("t");
    s1.unsubscribe("t");
    EXPECT_TRUE(plain_box.stays_empty(100ms)) << "s2 still subscribes";
    s2.unsubscribe("t");
    EXPECT_EQ(plain_box.pop(), strs{sub_msg(0, "t")});
    EXPECT_EQ(verbose_box.pop(), strs{sub_msg(0, "t")});
}

TEST_F(semantics, strix_pair_keeps_its_first_libzmq_peer_and_turns_a_second_away) {
    inbox& got = env.new_inbox();
    auto& pair = env.make(0, socket_type::pair, {}, &got);
    const std::string a = env.on(0, [&] { return pair.bind(where(transport::tcp)); });
    auto& first = zsock(ZMQ_PAIR);
    first.connect(a);
    ASSERT_EQ(first.send({"first"}), 0);
    EXPECT_EQ(got.pop(), strs{"first"});
    auto& second = zsock(ZMQ_PAIR);
    second.set(ZMQ_RECONNECT_IVL, 50);
    second.connect(a);
    second.try_send({"second"});
    EXPECT_TRUE(got.stays_empty(300ms)) << "the second PAIR's message was delivered";
    ASSERT_FALSE(env.send(pair, {"to first"}));
    EXPECT_TRUE(same(first.recv(), {"to first"}));
    EXPECT_FALSE(second.recv(100ms));
    ASSERT_EQ(first.send({"first again"}), 0);
    EXPECT_EQ(got.pop(), strs{"first again"});
    EXPECT_EQ(peers(pair), 1u);
}

// --- socket-type mismatch ---------------------------------------------------------------------

bool saw_mismatch(event_log& log, const std::string& peer_type) {
    for (auto& e : log.all())
        if (e.what == kind::handshake_failed && e.error == link::link_errc::socket_type_mismatch &&
            e.detail == peer_type)
            return true;
    return false;
}

TEST_F(semantics, libzmq_push_to_strix_pub_is_refused) {
    event_log& log = env.new_log();
    auto& pub = env.make(0, socket_type::pub, {}, nullptr, &log);
    const std::string a = env.on(0, [&] { return pub.bind(where(transport::tcp)); });
    auto& push = zsock(ZMQ_PUSH);
    auto& mon = watch(push);
    push.connect(a);
    push.try_send({"never"});
    ASSERT_TRUE(eventually([&] { return saw_mismatch(log, "PUSH"); })) << describe(log);
    EXPECT_GE(stats(pub).handshake_failures, 1u);
    EXPECT_EQ(peers(pub), 0u);
    EXPECT_EQ(on(pub, [&] { return pub.subscribers(); }), 0u);
    EXPECT_EQ(log.count(kind::handshake_succeeded), 0u);
    // libzmq refuses strix's PUB just the same (or hears strix's ERROR): never a handshake.
    EXPECT_TRUE(mon.saw(ZMQ_EVENT_DISCONNECTED) || mon.saw(ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL, 0ms));
    EXPECT_EQ(mon.count(ZMQ_EVENT_HANDSHAKE_SUCCEEDED), 0);
}

TEST_F(semantics, libzmq_pub_to_strix_pull_delivers_nothing) {
    auto& zpub = zsock(ZMQ_PUB);
    const std::string a = zpub.bind(where(transport::ipc));
    inbox& got = env.new_inbox();
    event_log& log = env.new_log();
    auto& pull = env.make(1, socket_type::pull, {}, &got, &log);
    env.on(1, [&] { pull.connect(a); });
    ASSERT_TRUE(eventually([&] { return saw_mismatch(log, "PUB"); })) << describe(log);
    for (int i = 0; i < 20; ++i) {
        ASSERT_EQ(zpub.send({"published"}), 0);
        std::this_thread::sleep_for(5ms);
    }
    EXPECT_TRUE(got.stays_empty(200ms));
    const auto st = stats(pull);
    EXPECT_GE(st.handshake_failures, 1u);
    EXPECT_EQ(st.messages_in, 0u);
    EXPECT_EQ(st.peers, 0u);
    EXPECT_EQ(on(pull, [&] { return pull.send(std::string_view("x")); }), link::link_errc::not_supported);
}

TEST_F(semantics, strix_req_to_libzmq_pull_is_refused_and_send_would_block) {
    auto& zpull = zsock(ZMQ_PULL);
    const std::string a = zpull.bind(where(transport::tcp));
    event_log& log = env.new_log();
    auto& req = env.make(0, socket_type::req, {}, nullptr, &log);
    env.on(0, [&] { req.connect(a); });
    ASSERT_TRUE(eventually([&] {
        zpull.events();
        return saw_mismatch(log, "PULL");
    })) << describe(log);
    EXPECT_EQ(on(req, [&] { return req.send(std::string_view("q")); }), link::link_errc::would_block)
        << "no compatible peer";
    EXPECT_FALSE(zpull.recv(200ms));
}

}  // namespace
