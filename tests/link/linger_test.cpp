// Nothing lost at close: a sender closed right after its last send still delivers everything, on
// every pattern that sends and every transport, through the blocking API and the shard-native
// socket; a linger bounds how long a closed socket keeps trying; a full outgoing queue holds the
// sender back.
#include <strix/core/asan_poison.hpp>  // STRIX_ASAN
#include <strix/core/engine.hpp>
#include <strix/core/shard.hpp>
#include <strix/link/blocking.hpp>

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <ostream>
#include <memory>
#include <string>
#include <thread>

namespace {

using namespace strix::link;
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// Each round races the close against delivery once. Under ASan a round takes about 20 times as
// long (0.17 s to 4 s for 100 rounds of 2,000 messages), and what the sanitizer checks (the close
// path's memory) is the same in every round: it runs a fifth of them.
constexpr int repeats = STRIX_ASAN ? 20 : 100;

std::string unique_endpoint(const std::string& transport, int n) {
    static std::atomic<int> seq{0};
    const std::string name =
        "strix-linger-" + std::to_string(::getpid()) + "-" + std::to_string(n) + "-" + std::to_string(seq.fetch_add(1));
    if (transport == "tcp") return "tcp://127.0.0.1:*";
    if (transport == "ipc") return "ipc://@" + name;
    return "inproc://" + name;
}

struct close_case {
    socket_type sender, receiver;
    const char* transport;
};

void PrintTo(const close_case& c, std::ostream* os) {
    *os << to_string(c.sender) << " -> " << to_string(c.receiver) << " over " << c.transport;
}

std::string case_name(const testing::TestParamInfo<close_case>& i) {
    return std::string(to_string(i.param.sender)) + "_" + i.param.transport;
}

class close_after_last_send : public testing::TestWithParam<close_case> {};

// The receiver binds, the sender connects and sends at once (REQ: one request; the rest: a burst),
// and is destroyed right after its last send. Every message must arrive, in order, and nothing
// else.
TEST_P(close_after_last_send, delivers_every_message_in_order) {
    const close_case c = GetParam();
    const bool req = c.sender == socket_type::req;
    const int count = req ? 1 : 2000;
    context ctx(2);  // the sender and the receiver on different shards
    for (int round = 0; round < repeats; ++round) {
        socket_options ropts, sopts;
        // PUB and ROUTER drop for a peer at its mark (that is their pattern, not a close): no mark.
        if (c.sender == socket_type::pub || c.sender == socket_type::router) sopts.sndhwm = 0;
        ropts.routing_id = "receiver";
        blocking_socket receiver(ctx, c.receiver, ropts);
        if (c.receiver == socket_type::sub) receiver.subscribe("");
        const std::string where = receiver.bind(unique_endpoint(c.transport, round));
        {
            blocking_socket sender(ctx, c.sender, sopts);
            sender.connect(where);
            // Publishers and routers send only to peers they know: wait for the receiver.
            if (c.sender == socket_type::pub) {
                ASSERT_TRUE(sender.wait_for_subscribers(1, 5s));
            }
            if (c.sender == socket_type::router) {
                ASSERT_TRUE(sender.wait_for_peers(1, 5s));
            }
            for (int i = 0; i < count; ++i) {
                message m;
                if (c.sender == socket_type::router) m.add("receiver");
                m.add(std::to_string(i));
                ASSERT_FALSE(sender.send(m, 5s)) << "round " << round << ", message " << i;
            }
        }  // closed right after the last send
        for (int i = 0; i < count; ++i) {
            auto m = receiver.recv(5s);
            ASSERT_TRUE(m) << c.transport << " round " << round << ": message " << i << " of " << count
                           << " never arrived";
            // A ROUTER receiver sees the sender's routing id first.
            const std::size_t body = c.receiver == socket_type::router ? 1 : 0;
            ASSERT_EQ(m->size(), body + 1);
            ASSERT_EQ((*m)[body].text(), std::to_string(i)) << c.transport << " round " << round;
        }
        ASSERT_FALSE(receiver.recv(0ms)) << "round " << round << ": more than was sent";
    }
}

INSTANTIATE_TEST_SUITE_P(every_pattern_and_transport, close_after_last_send,
                         testing::ValuesIn(std::vector<close_case>{
                             {socket_type::push, socket_type::pull, "tcp"},
                             {socket_type::push, socket_type::pull, "ipc"},
                             {socket_type::push, socket_type::pull, "inproc"},
                             {socket_type::pub, socket_type::sub, "tcp"},
                             {socket_type::pub, socket_type::sub, "ipc"},
                             {socket_type::pub, socket_type::sub, "inproc"},
                             {socket_type::dealer, socket_type::router, "tcp"},
                             {socket_type::dealer, socket_type::router, "ipc"},
                             {socket_type::dealer, socket_type::router, "inproc"},
                             {socket_type::req, socket_type::rep, "tcp"},
                             {socket_type::req, socket_type::rep, "ipc"},
                             {socket_type::req, socket_type::rep, "inproc"},
                             {socket_type::pair, socket_type::pair, "tcp"},
                             {socket_type::pair, socket_type::pair, "ipc"},
                             {socket_type::pair, socket_type::pair, "inproc"},
                             {socket_type::router, socket_type::dealer, "tcp"},
                             {socket_type::router, socket_type::dealer, "ipc"},
                             {socket_type::router, socket_type::dealer, "inproc"},
                         }),
                         case_name);

// The shard-native socket: a PUSH on shard 1 sends until would_block, goes on from on_writable,
// and is destroyed on its shard right after its last send.
class shard_socket_close : public testing::TestWithParam<const char*> {};

TEST_P(shard_socket_close, delivers_every_message_in_order) {
    const std::string transport = GetParam();
    constexpr int count = 2000;
    context ctx(2);
    strix::engine& eng = ctx.eng();
    // The sender's state, touched on shard 1 only.
    struct sender {
        std::unique_ptr<strix::link::socket> push;
        int next = 0;
        bool done = false;
    };
    for (int round = 0; round < repeats; ++round) {
        blocking_socket receiver(ctx, socket_type::pull);
        const std::string where = receiver.bind(unique_endpoint(transport, round));
        std::promise<void> sent;
        auto st = std::make_shared<sender>();
        eng.post(1, [&eng, &sent, st, where] {
            st->push = std::make_unique<strix::link::socket>(eng.at(1), socket_type::push);
            auto pump = [&eng, &sent, raw = st.get()] {
                while (raw->next < count && !raw->push->send(std::to_string(raw->next))) ++raw->next;
                if (raw->next < count || raw->done) return;
                raw->done = true;
                // Destroyed from the loop, right after the last send (not inside the socket's
                // own callback, which would run on in a destroyed socket).
                eng.at(1).post_local([raw, &sent] {
                    raw->push.reset();
                    sent.set_value();
                });
            };
            st->push->on_writable(pump);
            st->push->connect(where);
            pump();
        });
        ASSERT_EQ(sent.get_future().wait_for(10s), std::future_status::ready);
        for (int i = 0; i < count; ++i) {
            auto m = receiver.recv(5s);
            ASSERT_TRUE(m) << transport << " round " << round << ": message " << i << " never arrived";
            ASSERT_EQ((*m)[0].text(), std::to_string(i));
        }
        ASSERT_FALSE(receiver.recv(0ms));
    }
}

INSTANTIATE_TEST_SUITE_P(every_transport, shard_socket_close, testing::Values("tcp", "ipc", "inproc"),
                         [](const testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

// A sender whose messages have nowhere to go gives up when its linger ends, and the context's
// destructor (which waits for closing sockets) returns then, not before and not much later.
TEST(linger, a_sender_with_no_receiver_closes_when_its_linger_ends) {
    for (const char* where : {"tcp://127.0.0.1:1", "ipc://@strix-linger-nobody"}) {
        steady::time_point closed;
        {
            context ctx(1);
            socket_options o;
            o.linger = 100ms;
            o.reconnect_ivl = 20ms;
            blocking_socket push(ctx, socket_type::push, o);
            push.connect(where);
            for (int i = 0; i < 10; ++i) ASSERT_FALSE(push.send("m" + std::to_string(i), 1s));
            closed = steady::now();
        }
        const auto took = steady::now() - closed;
        EXPECT_GE(took, 80ms) << where << ": the queued messages were dropped before the linger ended";
        EXPECT_LT(took, 1500ms) << where << ": the linger did not end the close";
    }
}

// The output waits in the connection's queue this time: the receiver is connected but does not
// read, so the kernel's buffers fill and the closed sender's session still holds bytes.
TEST(linger, a_sender_whose_receiver_stops_reading_closes_when_its_linger_ends) {
    context receiving(1);
    socket_options small;
    small.rcvhwm = 1;
    blocking_socket pull(receiving, socket_type::pull, small);
    const std::string where = pull.bind("tcp://127.0.0.1:*");
    steady::time_point closed;
    {
        context sending(1);
        socket_options o;
        o.linger = 100ms;
        o.sndhwm = 0;  // everything goes to the connection's queue
        blocking_socket push(sending, socket_type::push, o);
        push.connect(where);
        ASSERT_TRUE(push.wait_for_peers(1, 5s));
        const std::string body(64 * 1024, 'x');
        for (int i = 0; i < 400; ++i) ASSERT_FALSE(push.send(body, 1s));  // 25 MiB: more than the kernel holds
        ASSERT_GT(push.stats().messages_out, 0u);
        closed = steady::now();
    }
    const auto took = steady::now() - closed;
    EXPECT_GE(took, 80ms) << "the queued output was dropped before the linger ended";
    EXPECT_LT(took, 1500ms) << "the linger did not end the close";
}

// Linger -1 (the default, libzmq's): a receiver that comes after the sender closed still gets
// everything, and the context waits for it.
TEST(linger, the_default_linger_waits_for_a_receiver_that_comes_late) {
    const std::string where = "ipc://@strix-linger-late-" + std::to_string(::getpid());
    std::promise<void> closed;
    // The sending side on a thread of its own: its context's destructor waits for the close.
    auto sender_gone = std::async(std::launch::async, [&] {
        context sending(1);
        {
            blocking_socket push(sending, socket_type::push);
            push.connect(where);
            for (int i = 0; i < 100; ++i) ASSERT_FALSE(push.send(std::to_string(i), 1s));
        }  // closed with all 100 still queued: nobody listens yet
        closed.set_value();
    });
    ASSERT_EQ(closed.get_future().wait_for(5s), std::future_status::ready);
    EXPECT_EQ(sender_gone.wait_for(300ms), std::future_status::timeout) << "the context did not wait";
    context receiving(1);
    blocking_socket pull(receiving, socket_type::pull);
    pull.bind(where);
    for (int i = 0; i < 100; ++i) {
        auto m = pull.recv(5s);
        ASSERT_TRUE(m) << "message " << i;
        ASSERT_EQ((*m)[0].text(), std::to_string(i));
    }
    EXPECT_EQ(sender_gone.wait_for(5s), std::future_status::ready);
}

// Linger 0: what is queued is dropped at close.
TEST(linger, zero_drops_what_is_queued_at_once) {
    steady::time_point closed;
    {
        context ctx(1);
        socket_options o;
        o.linger = 0ms;
        blocking_socket push(ctx, socket_type::push, o);
        push.connect("tcp://127.0.0.1:1");
        for (int i = 0; i < 10; ++i) ASSERT_FALSE(push.send("m", 1s));
        closed = steady::now();
    }
    EXPECT_LT(steady::now() - closed, 1000ms);
}

// sndhwm messages wait in the outgoing pipe while no peer takes them; the next send waits, and
// says would_block when its timeout passes; once a receiver comes, everything goes, in order.
TEST(high_water_mark, a_full_outgoing_queue_holds_the_sender_back) {
    const std::string where = "ipc://@strix-hwm-" + std::to_string(::getpid());
    context ctx(2);
    socket_options o;
    o.sndhwm = 10;
    blocking_socket push(ctx, socket_type::push, o);
    push.connect(where);
    for (int i = 0; i < 10; ++i) {
        const auto t0 = steady::now();
        ASSERT_FALSE(push.send(std::to_string(i), 1s)) << "message " << i << " is below the mark";
        EXPECT_LT(steady::now() - t0, 500ms) << "a send below the mark waited";
    }
    const auto t0 = steady::now();
    EXPECT_EQ(push.send("10", 100ms), link_errc::would_block);
    EXPECT_GE(steady::now() - t0, 90ms) << "the send at the mark did not wait for its timeout";
    std::thread late([&] {
        std::this_thread::sleep_for(100ms);
        blocking_socket pull(ctx, socket_type::pull);
        pull.bind(where);
        for (int i = 0; i <= 20; ++i) {
            auto m = pull.recv(5s);
            ASSERT_TRUE(m) << "message " << i;
            EXPECT_EQ((*m)[0].text(), std::to_string(i));
        }
    });
    for (int i = 10; i <= 20; ++i) ASSERT_FALSE(push.send(std::to_string(i), 5s)) << "message " << i;
    late.join();
}

}  // namespace
