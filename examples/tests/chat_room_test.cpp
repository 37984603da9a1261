// strix-example-chat-room as its clients see it, on 2 shards with clients on both: every message
// reaches every client exactly once, in one order shared by all, and a newcomer gets the last 100
// messages before any live one.
#include "example_process.hpp"

#include <cstdlib>
#include <map>
#include <set>

using namespace strix::test;

namespace {

/// "c<sender> m<number>". Through snprintf: gcc 12 warns falsely (-Wrestrict) on "c" + to_string().
std::string message(std::size_t sender, int number) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "c%zu m%d", sender, number);
    return buf;
}

bytes frame_of(const std::string& text) {
    bytes body(text.size());
    std::memcpy(body.data(), text.data(), text.size());
    return frame_le32(body);
}

/// The message a frame carries; "<bad frame>" for an empty read (timeout or EOF).
std::string text_of(const bytes& frame) {
    if (frame.size() < 4) return "<bad frame>";
    return std::string(reinterpret_cast<const char*>(frame.data()) + 4, frame.size() - 4);
}

/// The shards the room logged joins on ("... joined on shard <k> ...").
std::set<int> shards_joined(const example_process& srv) {
    const std::string marker = "joined on shard ";
    const std::string log = srv.output();
    std::set<int> out;
    for (auto at = log.find(marker); at != std::string::npos; at = log.find(marker, at + 1))
        out.insert(std::stoi(log.substr(at + marker.size())));
    return out;
}

/// Waits (up to 10 s) until the room has logged `n` joins.
bool wait_joins(const example_process& srv, std::size_t n) {
    for (int i = 0; i < 500; ++i) {
        if (srv.count("joined on shard") >= n) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

TEST(chat_room_example, every_client_gets_every_message_once_in_one_order_and_newcomers_get_history) {
    ::setenv("STRIX_LOG", "info", 1);  // the join lines tell which shard each client landed on
    example_process srv("strix-example-chat-room", {"0", "2"});
    auto port = srv.wait_port();
    ASSERT_TRUE(port) << "no port printed:\n" << srv.output();

    // At least 4 clients, more until the kernel has spread them over both shards.
    std::vector<int> clients;
    while (clients.size() < 4 || (shards_joined(srv).size() < 2 && clients.size() < 40)) {
        clients.push_back(connect_tcp(*port));
        ASSERT_GE(clients.back(), 0);
        ASSERT_TRUE(wait_joins(srv, clients.size())) << srv.output();
    }
    ASSERT_EQ(shards_joined(srv), (std::set<int>{0, 1})) << "clients never reached both shards:\n" << srv.output();

    // Everyone talks at once: 40 messages each, every message its own write.
    constexpr int per_client = 40;
    std::vector<std::thread> talkers;
    for (std::size_t c = 0; c < clients.size(); ++c) {
        talkers.emplace_back([fd = clients[c], c] {
            for (int m = 0; m < per_client; ++m) send_all(fd, frame_of(message(c, m)));
        });
    }
    for (auto& t : talkers) t.join();

    const std::size_t total = clients.size() * per_client;
    std::vector<std::vector<std::string>> seen(clients.size());
    for (std::size_t c = 0; c < clients.size(); ++c) {
        for (std::size_t i = 0; i < total; ++i) {
            seen[c].push_back(text_of(read_frame(clients[c])));
            ASSERT_NE(seen[c].back(), "<bad frame>") << "client " << c << " got only " << i << " of " << total;
        }
        EXPECT_TRUE(nothing_more(clients[c], std::chrono::milliseconds(100))) << "client " << c << " got extra bytes";
    }
    // Exactly once: the first client saw each sent message once, and each sender's in its order.
    std::map<std::string, int> count;
    for (auto& t : seen[0]) ++count[t];
    for (std::size_t c = 0; c < clients.size(); ++c)
        for (int m = 0; m < per_client; ++m) EXPECT_EQ(count[message(c, m)], 1) << message(c, m);
    std::map<std::string, int> last_from;  // sender -> last message number seen
    for (auto& t : seen[0]) {
        auto space = t.find(' ');
        int m = std::stoi(t.substr(space + 2));
        auto [it, fresh] = last_from.try_emplace(t.substr(0, space), -1);
        EXPECT_EQ(m, it->second + 1) << "out of order from " << it->first;
        it->second = m;
    }
    // One order for all.
    for (std::size_t c = 1; c < clients.size(); ++c)
        EXPECT_EQ(seen[c], seen[0]) << "client " << c << "'s order differs";

    // Newcomers join while someone talks without pause: each must get the last 100 messages
    // first, then the live ones, nothing twice. Wherever its history was cut in the stream, what
    // a newcomer sees is the tail of everyone else's sequence, at least 100 long. (A room that
    // delivered live messages before the history would show a message twice or out of place.)
    constexpr int burst = 300;
    std::vector<int> newcomers;
    // The talk spreads over the ~20 ms the newcomers take to arrive, so each joins mid-stream.
    std::thread talker([fd = clients[0]] {
        for (int m = 0; m < burst; ++m) {
            send_all(fd, frame_of(message(0, per_client + m)));
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
    });
    for (int i = 0; i < 16; ++i) {
        newcomers.push_back(connect_tcp(*port));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    talker.join();
    for (int fd : newcomers) ASSERT_GE(fd, 0);
    std::vector<std::string> order = seen[0];
    for (int m = 0; m < burst; ++m) order.push_back(message(0, per_client + m));
    for (std::size_t c = 0; c < clients.size(); ++c)
        for (int m = 0; m < burst; ++m)
            ASSERT_EQ(text_of(read_frame(clients[c])), message(0, per_client + m)) << "client " << c;
    for (std::size_t n = 0; n < newcomers.size(); ++n) {
        std::vector<std::string> got;
        while (got.empty() || got.back() != order.back()) {
            got.push_back(text_of(read_frame(newcomers[n])));
            ASSERT_NE(got.back(), "<bad frame>") << "newcomer " << n << " got only " << got.size() - 1 << " messages";
            ASSERT_LE(got.size(), 100u + burst) << "newcomer " << n;
        }
        EXPECT_TRUE(nothing_more(newcomers[n], std::chrono::milliseconds(100)))
            << "newcomer " << n << " got extra bytes";
        EXPECT_GE(got.size(), 100u) << "newcomer " << n;
        EXPECT_EQ(got, std::vector<std::string>(order.end() - static_cast<std::ptrdiff_t>(got.size()), order.end()))
            << "newcomer " << n << " saw something else than the tail of the room's sequence";
    }

    // A newcomer speaks: everyone, itself included, hears exactly that next.
    ASSERT_TRUE(send_all(newcomers.back(), frame_of("hello from the newcomer")));
    clients.insert(clients.end(), newcomers.begin(), newcomers.end());
    for (std::size_t c = 0; c < clients.size(); ++c) {
        EXPECT_EQ(text_of(read_frame(clients[c])), "hello from the newcomer") << "client " << c;
        EXPECT_TRUE(nothing_more(clients[c], std::chrono::milliseconds(50))) << "client " << c;
    }
    for (int fd : clients) ::close(fd);
    expect_clean_exit(srv);
}

TEST(chat_room_example, a_client_that_leaves_does_not_disturb_the_others) {
    example_process srv("strix-example-chat-room", {"0", "2"});
    auto port = srv.wait_port();
    ASSERT_TRUE(port) << srv.output();
    std::vector<int> clients;
    for (int i = 0; i < 6; ++i) {
        clients.push_back(connect_tcp(*port));
        ASSERT_GE(clients.back(), 0);
    }
    // Joins are asynchronous; one round of messages proves everyone is in (history or live).
    ASSERT_TRUE(send_all(clients[0], frame_of("first")));
    for (int fd : clients) EXPECT_EQ(text_of(read_frame(fd)), "first");
    ::close(clients[5]);  // leaves without a word, while messages are on their way
    clients.pop_back();
    // One sender, so the order is known.
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(send_all(clients[1], frame_of(message(1, i))));
    for (std::size_t c = 0; c < clients.size(); ++c) {
        for (int i = 0; i < 20; ++i) EXPECT_EQ(text_of(read_frame(clients[c])), message(1, i)) << "client " << c;
        ::close(clients[c]);
    }
    expect_clean_exit(srv);
}

}  // namespace
