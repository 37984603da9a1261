// The blocking API's inproc fast path (a blocking REQ whose only endpoint is an inproc name a
// blocking REP bound talks to it from thread to thread, without the shard): it is taken where it
// should be (the round trips go on while the shard is held busy), and every fallback keeps count
// and order: a second REQ on the REP, a second endpoint on the REQ mid-stream, the REP closing,
// the REQ closed right after its last request.
#include <strix/core/engine.hpp>
#include <strix/link/blocking.hpp>
#include <strix/link/poll.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>

namespace {

using namespace strix::link;
using namespace std::chrono_literals;

std::string unique_name(const char* what) {
    static std::atomic<int> seq{0};
    return "inproc://strix-direct-" + std::string(what) + "-" + std::to_string(::getpid()) + "-" +
           std::to_string(seq.fetch_add(1));
}

// Holds every shard of the context busy until release() (or destruction).
class shard_hold {
public:
    explicit shard_hold(context& ctx) {
        for (unsigned i = 0; i < ctx.eng().shard_count(); ++i) {
            auto started = std::make_shared<std::promise<void>>();
            auto f = started->get_future();
            ctx.eng().post(i, [started, gate = gate_] {
                started->set_value();
                gate.wait();
            });
            f.wait();
        }
    }
    ~shard_hold() { release(); }
    void release() {
        if (released_) return;
        released_ = true;
        open_.set_value();
    }

private:
    std::promise<void> open_;
    std::shared_future<void> gate_ = open_.get_future().share();
    bool released_ = false;
};

// Echoes `count` requests as "re:" + request, every part.
void echo(blocking_socket& rep, int count) {
    for (int i = 0; i < count; ++i) {
        auto q = rep.recv(5s);
        ASSERT_TRUE(q) << "request " << i;
        message r;
        for (std::size_t p = 0; p < q->size(); ++p) r.add("re:" + std::string((*q)[p].text()));
        ASSERT_FALSE(rep.send(r, 5s));
    }
}

TEST(direct, req_rep_round_trips_go_on_while_the_shard_is_busy) {
    context ctx(1);
    blocking_socket rep(ctx, socket_type::rep);
    const std::string where = rep.bind(unique_name("busy"));
    blocking_socket req(ctx, socket_type::req);
    req.connect(where);
    const int n = 300;
    std::jthread server;
    {
        shard_hold hold(ctx);  // the shard path could move nothing now
        server = std::jthread([&] { echo(rep, n); });
        const std::string big(3000, 'x');  // a part referenced, not copied, in the pipe
        for (int i = 0; i < n; ++i) {
            message m;
            m.add("q" + std::to_string(i));
            if (i % 3 == 0) m.add(big);
            if (i % 5 == 0) m.add("");
            ASSERT_FALSE(req.send(m, 2s));
            auto r = req.recv(2s);
            ASSERT_TRUE(r) << "reply " << i;
            ASSERT_EQ(r->size(), m.size());
            EXPECT_EQ((*r)[0].text(), "re:q" + std::to_string(i));
            if (i % 3 == 0) {
                EXPECT_EQ((*r)[1].text(), "re:" + big);
            }
        }
        // Out of turn through the link: refused at once, as the shard's REQ refuses it.
        ASSERT_FALSE(req.send("a", 1s));
        EXPECT_EQ(req.send("b", 1s), link_errc::bad_state);
        hold.release();
    }
    server.join();
    ASSERT_TRUE(rep.recv(5s));  // the request "a"
    ASSERT_FALSE(rep.send("re:a"));
    auto r = req.recv(5s);
    ASSERT_TRUE(r);
    EXPECT_EQ((*r)[0].text(), "re:a");
    EXPECT_EQ(req.stats().messages_out, static_cast<std::uint64_t>(n + 1));
    EXPECT_EQ(rep.stats().messages_in, static_cast<std::uint64_t>(n + 1));
}

TEST(direct, poll_sees_a_request_through_the_link) {
    context ctx(1);
    blocking_socket rep(ctx, socket_type::rep);
    const std::string where = rep.bind(unique_name("poll"));
    blocking_socket req(ctx, socket_type::req);
    req.connect(where);
    shard_hold hold(ctx);
    poll_item items[] = {{&rep, poll_in}};
    EXPECT_EQ(poll(items, 0ms), 0u);
    std::jthread client([&] { ASSERT_FALSE(req.send("ping", 1s)); });
    EXPECT_EQ(poll(items, 5000ms), 1u);  // woken by the REQ's thread: the shard is held
    client.join();
    auto q = rep.recv(0ms);
    ASSERT_TRUE(q);
    EXPECT_EQ((*q)[0].text(), "ping");
    hold.release();
}

// A second REQ connects to the REP mid-stream: it has no link (one per REP) and goes through the
// shards, the first keeps its link; the REP serves both in turn, every reply to its own request.
TEST(direct, a_second_req_attaching_mid_stream_is_served_through_the_shard) {
    context ctx(2);
    blocking_socket rep(ctx, socket_type::rep);
    const std::string where = rep.bind(unique_name("second-req"));
    const int n = 2000;
    std::thread server([&] { echo(rep, 2 * n); });
    blocking_socket first(ctx, socket_type::req);
    first.connect(where);
    std::atomic<bool> half{false};
    std::thread other([&] {
        while (!half.load()) std::this_thread::yield();
        blocking_socket second(ctx, socket_type::req);
        second.connect(where);
        for (int i = 0; i < n; ++i) {
            ASSERT_FALSE(second.send("s" + std::to_string(i), 5s));
            auto r = second.recv(5s);
            ASSERT_TRUE(r) << "second, reply " << i;
            ASSERT_EQ((*r)[0].text(), "re:s" + std::to_string(i));
        }
    });
    for (int i = 0; i < n; ++i) {
        if (i == n / 4) half.store(true);
        ASSERT_FALSE(first.send("f" + std::to_string(i), 5s));
        auto r = first.recv(5s);
        ASSERT_TRUE(r) << "first, reply " << i;
        ASSERT_EQ((*r)[0].text(), "re:f" + std::to_string(i));
    }
    other.join();
    server.join();
    EXPECT_EQ(rep.stats().messages_in, static_cast<std::uint64_t>(2 * n));
    EXPECT_EQ(rep.stats().messages_out, static_cast<std::uint64_t>(2 * n));
}

// A REP holding a request takes no other, from the link or the shard, until it replied: one
// at a time, as the shard's REP delivers them; each reply goes back the way its request came.
TEST(direct, a_rep_takes_one_request_at_a_time_from_the_link_and_the_shard) {
    context ctx(2);
    blocking_socket rep(ctx, socket_type::rep);
    const std::string where = rep.bind(unique_name("one-at-a-time"));
    blocking_socket linked(ctx, socket_type::req), other(ctx, socket_type::req);
    linked.connect(where);  // the first REQ: the link
    other.connect(where);   // the second: the shard
    ASSERT_TRUE(other.wait_for_peers(1, 5s));
    ASSERT_FALSE(other.send("from-shard", 5s));
    std::this_thread::sleep_for(100ms);  // in the REP's incoming pipe by now
    ASSERT_FALSE(linked.send("from-link", 5s));
    std::string first, second;
    {
        auto q = rep.recv(5s);
        ASSERT_TRUE(q);
        first = std::string((*q)[0].text());
        EXPECT_FALSE(rep.recv(100ms)) << "a second request while holding " << first;
        ASSERT_FALSE(rep.send("re:" + first, 5s));
    }
    {
        auto q = rep.recv(5s);
        ASSERT_TRUE(q);
        second = std::string((*q)[0].text());
        EXPECT_FALSE(rep.recv(100ms)) << "a second request while holding " << second;
        ASSERT_FALSE(rep.send("re:" + second, 5s));
    }
    EXPECT_NE(first, second);
    auto r1 = linked.recv(5s);
    ASSERT_TRUE(r1);
    EXPECT_EQ((*r1)[0].text(), "re:from-link");
    auto r2 = other.recv(5s);
    ASSERT_TRUE(r2);
    EXPECT_EQ((*r2)[0].text(), "re:from-shard");
}

// The REQ connects to a second REP mid-stream: from then on its requests go through the shard,
// round-robin over both REPs, and each reply still answers its own request.
TEST(direct, a_req_with_a_second_endpoint_falls_back_to_the_shard_in_order) {
    context ctx(2);
    blocking_socket rep1(ctx, socket_type::rep), rep2(ctx, socket_type::rep);
    const std::string where1 = rep1.bind(unique_name("fallback-1"));
    const std::string where2 = rep2.bind(unique_name("fallback-2"));
    std::atomic<int> served1{0}, served2{0};
    std::atomic<bool> stop{false};
    auto serve = [&](blocking_socket& rep, std::atomic<int>& served) {
        while (!stop.load()) {
            auto q = rep.recv(20ms);
            if (!q) continue;
            ASSERT_FALSE(rep.send("re:" + std::string((*q)[0].text()), 5s));
            ++served;
        }
    };
    std::thread t1([&] { serve(rep1, served1); }), t2([&] { serve(rep2, served2); });
    blocking_socket req(ctx, socket_type::req);
    req.connect(where1);
    const int n = 2000;
    for (int i = 0; i < n; ++i) {
        if (i == n / 2) {
            // Mid-stream, with the link idle (the last reply came): the second endpoint.
            req.connect(where2);
            ASSERT_TRUE(req.wait_for_peers(2, 5s));
        }
        ASSERT_FALSE(req.send("r" + std::to_string(i), 5s));
        auto r = req.recv(5s);
        ASSERT_TRUE(r) << "reply " << i;
        ASSERT_EQ((*r)[0].text(), "re:r" + std::to_string(i));
    }
    stop.store(true);
    t1.join();
    t2.join();
    EXPECT_EQ(served1.load() + served2.load(), n);
    EXPECT_GT(served2.load(), 0);  // the shard's round robin reached the second REP
    EXPECT_GE(served1.load(), n / 2);  // the first half went through the link
}

// A REQ closed right after its request (the link's pipe holds it): the REP gets every one.
TEST(direct, a_req_closed_right_after_its_request_loses_nothing_100_times) {
    context ctx(2);
    blocking_socket rep(ctx, socket_type::rep);
    const std::string where = rep.bind(unique_name("close"));
    for (int round = 0; round < 100; ++round) {
        {
            // Only the first REQ gets the link (one per REP), the later ones go through the shard:
            // both paths are closed right after the send.
            blocking_socket req(ctx, socket_type::req);
            req.connect(where);
            ASSERT_FALSE(req.send("close-" + std::to_string(round), 5s));
        }
        auto q = rep.recv(5s);
        ASSERT_TRUE(q) << "round " << round;
        ASSERT_EQ((*q)[0].text(), "close-" + std::to_string(round));
        ASSERT_FALSE(rep.send("dropped"));  // its REQ is gone
    }
    EXPECT_FALSE(rep.recv(50ms));
}

// A fresh REP for each round, so every REQ gets a link: 100 requests through the link, each
// REQ closed right after it sent.
TEST(direct, every_linked_req_closed_right_after_its_request_delivers_it_100_times) {
    context ctx(2);
    for (int round = 0; round < 100; ++round) {
        blocking_socket rep(ctx, socket_type::rep);
        const std::string where = rep.bind(unique_name("close-linked"));
        std::string sent;
        {
            blocking_socket req(ctx, socket_type::req);
            req.connect(where);
            shard_hold hold(ctx);  // the shard cannot carry it: only the link can
            sent = "linked-" + std::to_string(round);
            ASSERT_FALSE(req.send(sent, 5s));
            EXPECT_TRUE(readable(rep)) << "round " << round << ": the request did not take the link";
            hold.release();
        }
        auto q = rep.recv(5s);
        ASSERT_TRUE(q) << "round " << round;
        ASSERT_EQ((*q)[0].text(), sent);
    }
}

// The REP closes: the REQ's next request takes the shard and waits there for a new peer.
TEST(direct, after_the_rep_closes_requests_take_the_shard) {
    context ctx(2);
    const std::string where = unique_name("rep-closes");
    socket_options quick;
    quick.linger = 0ms;  // "two" never finds a peer: the context must not wait for it
    blocking_socket req(ctx, socket_type::req, quick);
    {
        blocking_socket rep(ctx, socket_type::rep);
        rep.bind(where);
        req.connect(where);
        std::thread server([&] { echo(rep, 1); });
        ASSERT_FALSE(req.send("one", 5s));
        auto r = req.recv(5s);
        ASSERT_TRUE(r);
        EXPECT_EQ((*r)[0].text(), "re:one");
        server.join();
    }
    // No peer now: queued in the outgoing pipe (as without the link), nothing answers.
    ASSERT_FALSE(req.send("two", 5s));
    EXPECT_FALSE(req.recv(100ms));
}

}  // namespace
