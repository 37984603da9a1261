// strix::link sockets talking to each other: every pattern over tcp, ipc and inproc (the peers on
// different shards, and for inproc also on one shard), multipart messages, subscriptions,
// envelopes, routing ids, high-water marks.
#include "link/link_fixture.hpp"

#include <strix/link/socket.hpp>

#include <gtest/gtest.h>

#include <set>

namespace {

using namespace strix;
using namespace strix::test;
using link::socket_type;
using strs = std::vector<std::string>;

// A subscription message as XSUB sends it: 1 (subscribe) or 0 (cancel), then the topic.
std::string sub_msg(char flag, const std::string& topic) {
    std::string m;
    m.push_back(flag);
    m.append(topic);
    return m;
}

// prefix + i + suffix, built with append: gcc 12 warns (-Wrestrict, a known false positive) on
// "literal" + std::string chains.
std::string tag(const char* prefix, int i, const char* suffix = "") {
    std::string s(prefix);
    s.append(std::to_string(i)).append(suffix);
    return s;
}

enum class transport { tcp, ipc, inproc_cross, inproc_same };

std::string name(transport t) {
    switch (t) {
        case transport::tcp: return "tcp";
        case transport::ipc: return "ipc";
        case transport::inproc_cross: return "inproc_cross_shard";
        case transport::inproc_same: return "inproc_same_shard";
    }
    return "?";
}

class patterns : public ::testing::TestWithParam<transport> {
protected:
    link_env env;
    temp_dir dir;
    int n = 0;

    // An address for the binder, unique per call.
    std::string address() {
        ++n;
        switch (GetParam()) {
            case transport::tcp: return "tcp://127.0.0.1:*";
            case transport::ipc: return "ipc://" + dir.path() + "/s" + std::to_string(n) + ".sock";
            default:
                return "inproc://patterns-" + std::to_string(::getpid()) + "-" +
                       std::to_string(reinterpret_cast<std::uintptr_t>(this)) + "-" + std::to_string(n);
        }
    }
    unsigned second_shard() const { return GetParam() == transport::inproc_same ? 0u : 1u; }

    // Binds a on shard 0 and connects b on the second shard; returns once both see the peer.
    void join(link::socket& a, link::socket& b) {
        const std::string where = env.on(0, [&] { return a.bind(address()); });
        env.on(second_shard(), [&] { b.connect(where); });
        ASSERT_TRUE(eventually([&] {
            return env.on(0, [&] { return a.peers(); }) == 1 && env.on(second_shard(), [&] { return b.peers(); }) == 1;
        })) << "no handshake";
    }
};

TEST_P(patterns, push_pull_delivers_in_order_with_multipart) {
    inbox& got = env.new_inbox();
    auto& pull = env.make(0, socket_type::pull, {}, &got);
    auto& push = env.make(second_shard(), socket_type::push);
    join(pull, push);
    for (int i = 0; i < 100; ++i) ASSERT_FALSE(env.send(push, {tag("m", i)}));
    ASSERT_FALSE(env.send(push, {"a", "", "c"}));
    for (int i = 0; i < 100; ++i) ASSERT_EQ(got.pop(), strs{tag("m", i)});
    EXPECT_EQ(got.pop(), (strs{"a", "", "c"}));
}

TEST_P(patterns, req_rep_strips_and_restores_the_envelope) {
    inbox& at_rep = env.new_inbox();
    inbox& at_req = env.new_inbox();
    auto& rep = env.make(0, socket_type::rep, {}, &at_rep);
    auto& req = env.make(second_shard(), socket_type::req, {}, &at_req);
    env.on(0, [&] {
        rep.on_message([&](link::message_view m) {
            at_rep.push(m);
            std::string r = "re:" + std::string(m.text(0));
            rep.send(r);
        });
    });
    join(rep, req);
    for (int i = 0; i < 5; ++i) {
        ASSERT_FALSE(env.send(req, {tag("q", i)}));
        EXPECT_EQ(at_rep.pop(), strs{tag("q", i)});
        EXPECT_EQ(at_req.pop(), strs{tag("re:q", i)});
    }
    // Out of turn: a REQ waiting for its reply refuses a second request.
    env.on(0, [&] { rep.on_message([&](link::message_view m) { at_rep.push(m); }); });  // stop replying
    ASSERT_FALSE(env.send(req, {"unanswered"}));
    EXPECT_EQ(at_rep.pop(), strs{"unanswered"});
    EXPECT_EQ(env.send(req, {"again"}), link::link_errc::bad_state);
}

TEST_P(patterns, dealer_router_carry_routing_ids_both_ways) {
    inbox& at_router = env.new_inbox();
    inbox& at_dealer = env.new_inbox();
    auto& router = env.make(0, socket_type::router, {}, &at_router);
    link::socket_options named;
    named.routing_id = "dealer-7";
    auto& dealer = env.make(second_shard(), socket_type::dealer, named, &at_dealer);
    join(router, dealer);
    ASSERT_FALSE(env.send(dealer, {"hello", "world"}));
    EXPECT_EQ(at_router.pop(), (strs{"dealer-7", "hello", "world"}));
    ASSERT_FALSE(env.send(router, {"dealer-7", "back"}));
    EXPECT_EQ(at_dealer.pop(), strs{"back"});
    // Unknown id: dropped, or no_peer when mandatory.
    EXPECT_FALSE(env.send(router, {"nobody", "x"}));
    EXPECT_TRUE(at_dealer.stays_empty());
    EXPECT_EQ(env.on(0, [&] { return router.stats().dropped_unroutable; }), 1u);
}

TEST_P(patterns, router_mandatory_reports_an_unknown_peer) {
    link::socket_options o;
    o.router_mandatory = true;
    auto& router = env.make(0, socket_type::router, o);
    EXPECT_EQ(env.send(router, {"nobody", "x"}), link::link_errc::no_peer);
}

TEST_P(patterns, router_generates_ids_for_anonymous_peers) {
    inbox& at_router = env.new_inbox();
    auto& router = env.make(0, socket_type::router, {}, &at_router);
    auto& dealer = env.make(second_shard(), socket_type::dealer);
    join(router, dealer);
    ASSERT_FALSE(env.send(dealer, {"hi"}));
    auto m = at_router.pop();
    ASSERT_EQ(m.size(), 2u);
    EXPECT_EQ(m[0].size(), 5u);
    EXPECT_EQ(m[0][0], '\0');
    inbox& at_dealer = env.new_inbox();
    env.on(second_shard(), [&] { dealer.on_message([&](link::message_view v) { at_dealer.push(v); }); });
    ASSERT_FALSE(env.send(router, {m[0], "reply"}));
    EXPECT_EQ(at_dealer.pop(), strs{"reply"});
}

TEST_P(patterns, pub_sub_filters_by_prefix_and_counts_subscriptions) {
    inbox& got = env.new_inbox();
    event_log& pub_events = env.new_log();
    auto& pub = env.make(0, socket_type::pub, {}, nullptr, &pub_events);
    auto& sub = env.make(second_shard(), socket_type::sub, {}, &got);
    env.on(second_shard(), [&] {
        sub.subscribe("news.");
        sub.subscribe("news.");  // counted: needs two unsubscribes
    });
    join(pub, sub);
    ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return pub.subscribers(); }) == 1; }));
    ASSERT_FALSE(env.send(pub, {"sports.x"}));
    ASSERT_FALSE(env.send(pub, {"news.a", "body"}));
    EXPECT_EQ(got.pop(), (strs{"news.a", "body"}));
    env.on(second_shard(), [&] { sub.unsubscribe("news."); });
    std::this_thread::sleep_for(50ms);
    ASSERT_FALSE(env.send(pub, {"news.b"}));
    EXPECT_EQ(got.pop(), strs{"news.b"}) << "one unsubscribe of two leaves the subscription";
    env.on(second_shard(), [&] { sub.unsubscribe("news."); });
    ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return pub.subscribers(); }) == 0; }));
    ASSERT_FALSE(env.send(pub, {"news.c"}));
    EXPECT_TRUE(got.stays_empty());
    EXPECT_GE(pub_events.count(link::socket_event::kind::subscribed), 1u);
}

TEST_P(patterns, xpub_sees_subscriptions_and_xsub_sends_them_as_messages) {
    inbox& at_xpub = env.new_inbox();
    inbox& at_xsub = env.new_inbox();
    auto& xpub = env.make(0, socket_type::xpub, {}, &at_xpub);
    auto& xsub = env.make(second_shard(), socket_type::xsub, {}, &at_xsub);
    join(xpub, xsub);
    ASSERT_FALSE(env.send(xsub, {sub_msg(1, "topic")}));
    EXPECT_EQ(at_xpub.pop(), strs{sub_msg(1, "topic")});
    ASSERT_FALSE(env.send(xpub, {"topic-1"}));
    EXPECT_EQ(at_xsub.pop(), strs{"topic-1"});
    ASSERT_FALSE(env.send(xsub, {sub_msg(0, "topic")}));
    EXPECT_EQ(at_xpub.pop(), strs{sub_msg(0, "topic")});
}

TEST_P(patterns, pair_talks_both_ways) {
    inbox& at_a = env.new_inbox();
    inbox& at_b = env.new_inbox();
    auto& a = env.make(0, socket_type::pair, {}, &at_a);
    auto& b = env.make(second_shard(), socket_type::pair, {}, &at_b);
    join(a, b);
    ASSERT_FALSE(env.send(a, {"to b"}));
    ASSERT_FALSE(env.send(b, {"to a"}));
    EXPECT_EQ(at_b.pop(), strs{"to b"});
    EXPECT_EQ(at_a.pop(), strs{"to a"});
}

TEST_P(patterns, push_without_a_peer_would_block_then_hears_on_writable) {
    auto& push = env.make(second_shard(), socket_type::push);
    auto writable = std::make_shared<std::atomic<int>>(0);
    env.on(second_shard(), [&] { push.on_writable([writable] { ++*writable; }); });
    EXPECT_EQ(env.on(second_shard(), [&] { return push.send(std::string_view("x")); }), link::link_errc::would_block);
    inbox& got = env.new_inbox();
    auto& pull = env.make(0, socket_type::pull, {}, &got);
    join(pull, push);
    EXPECT_TRUE(eventually([&] { return writable->load() == 1; }));
}

TEST_P(patterns, a_full_push_reports_would_block_and_resumes_when_the_reader_catches_up) {
    link::socket_options small;
    small.sndhwm = 10;
    small.rcvhwm = 10;
    auto received = std::make_shared<std::atomic<int>>(0);
    auto& pull = env.make(0, socket_type::pull, small);
    auto& push = env.make(second_shard(), socket_type::push, small);
    env.on(0, [&] { pull.on_message([received](link::message_view) { ++*received; }); });
    join(pull, push);
    // Send as fast as the socket accepts for a while: some sends must come back would_block
    // (over tcp/ipc only once the kernel buffers are full, so large messages).
    const std::string big(64 * 1024, 'x');
    int sent = 0, blocked = 0;
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    while (blocked == 0 && std::chrono::steady_clock::now() < deadline) {
        env.on(second_shard(), [&] {
            for (int k = 0; k < 200; ++k) {
                if (push.send(big)) {
                    ++blocked;
                    return;
                }
                ++sent;
            }
        });
    }
    EXPECT_GT(blocked, 0) << "the high-water mark was never reached";
    EXPECT_TRUE(eventually([&] { return received->load() == sent; }, 10s)) << received->load() << " of " << sent;
}

INSTANTIATE_TEST_SUITE_P(all, patterns,
                         ::testing::Values(transport::tcp, transport::ipc, transport::inproc_cross,
                                           transport::inproc_same),
                         [](const auto& p) { return name(p.param); });

TEST(link_topics, thousands_of_topics_match_by_prefix) {
    link_env env;
    inbox& got = env.new_inbox();
    auto& pub = env.make(0, socket_type::pub);
    auto& sub = env.make(1, socket_type::sub, {}, &got);
    env.on(1, [&] {
        for (int i = 0; i < 5000; ++i) sub.subscribe(tag("t", i, "."));
    });
    const std::string where = env.on(0, [&] { return pub.bind("tcp://127.0.0.1:*"); });
    env.on(1, [&] { sub.connect(where); });
    ASSERT_TRUE(eventually([&] { return env.on(0, [&] { return pub.subscribers(); }) == 1; }));
    std::this_thread::sleep_for(100ms);  // the 5000 SUBSCRIBE commands arrive in order; give them time
    for (int i = 0; i < 5000; i += 499) ASSERT_FALSE(env.send(pub, {tag("t", i, ".x")}));
    ASSERT_FALSE(env.send(pub, {"t5000.x"}));  // not subscribed
    ASSERT_FALSE(env.send(pub, {"t1"}));       // shorter than every topic
    for (int i = 0; i < 5000; i += 499) EXPECT_EQ(got.pop(), strs{tag("t", i, ".x")});
    EXPECT_TRUE(got.stays_empty());
}

// The names and the compatibility matrix of RFC 28-31 (libzmq 4.3's table), pair by pair: the
// handshake of every transport reads them.
TEST(link_socket_types, names_and_compatible_peers_follow_the_rfcs) {
    using t = socket_type;
    const std::vector<std::pair<t, const char*>> names = {{t::pair, "PAIR"},     {t::pub, "PUB"},
                                                          {t::sub, "SUB"},       {t::req, "REQ"},
                                                          {t::rep, "REP"},       {t::dealer, "DEALER"},
                                                          {t::router, "ROUTER"}, {t::pull, "PULL"},
                                                          {t::push, "PUSH"},     {t::xpub, "XPUB"},
                                                          {t::xsub, "XSUB"}};
    // Each compatible pair once, in either order.
    const std::set<std::pair<t, t>> talk = {{t::pair, t::pair},     {t::pub, t::sub},       {t::pub, t::xsub},
                                            {t::xpub, t::sub},      {t::xpub, t::xsub},     {t::req, t::rep},
                                            {t::req, t::router},    {t::dealer, t::rep},    {t::dealer, t::dealer},
                                            {t::dealer, t::router}, {t::router, t::router}, {t::push, t::pull}};
    auto expected = [&](t a, t b) { return talk.count({a, b}) + talk.count({b, a}) > 0; };
    int pairs = 0;
    for (auto [a, a_name] : names) {
        EXPECT_STREQ(link::to_string(a), a_name);
        for (auto [b, b_name] : names) {
            EXPECT_EQ(link::compatible(a, b), expected(a, b)) << a_name << " - " << b_name;
            pairs += expected(a, b) ? 1 : 0;
        }
    }
    EXPECT_EQ(pairs, 21);  // 12 unordered pairs, 3 of them a type with itself
    EXPECT_STREQ(link::to_string(static_cast<t>(11)), "?");
    EXPECT_FALSE(link::compatible(static_cast<t>(11), t::pair));
    EXPECT_FALSE(link::compatible(t::pair, static_cast<t>(11)));
}

TEST(link_socket_types, only_sub_and_xsub_subscribe) {
    link_env env;
    for (auto type : {socket_type::pair, socket_type::pub, socket_type::req, socket_type::rep, socket_type::dealer,
                      socket_type::router, socket_type::pull, socket_type::push, socket_type::xpub}) {
        auto& s = env.make(0, type);
        EXPECT_THROW(env.on(0, [&] { s.subscribe("a"); }), std::invalid_argument) << link::to_string(type);
        EXPECT_THROW(env.on(0, [&] { s.unsubscribe("a"); }), std::invalid_argument) << link::to_string(type);
    }
    for (auto type : {socket_type::sub, socket_type::xsub}) {
        auto& s = env.make(0, type);
        EXPECT_NO_THROW(env.on(0, [&] {
            s.subscribe("a");
            s.unsubscribe("a");
        })) << link::to_string(type);
    }
}

}  // namespace
