// The crash loop: chat load against the real server, `kill -9` at a random moment, restart on the
// same database, ten times, on SQLite and on PostgreSQL. After every kill the database must hold
// every message any client received (a sender's own chat_msg is its acknowledgement; with the
// default --ack stored no client sees a message before it is committed), each room's log must have
// no gap, and after every restart the clients must be back in their rooms by logging in (rooms and
// memberships are stored) and go on with the next seq.
//
// Each round prints one line (rounds, acknowledged, in flight at the kill, stored but never
// acknowledged, missing); the last line is the total over all rounds.
#include "chat_fixture.hpp"

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

using namespace strix::test;
using proto::msg_type;

namespace {

class crash_loop : public chat_test {};

constexpr int rounds = 10;
constexpr int n_clients = 8;
constexpr int n_rooms = 3;

/// Everything the clients received, over all rounds: (room, seq) -> the line, and which of those
/// were the receiver's own message (acknowledged to its sender).
struct seen {
    std::mutex mu;
    std::map<std::pair<std::uint64_t, std::uint64_t>, chat_line> lines;
    std::set<std::pair<std::uint64_t, std::uint64_t>> acked;
    std::atomic<std::uint64_t> acked_count{0};
    std::atomic<bool> mismatch{false};  // two receivers (or two rounds) saw different lines under one key

    void add(const chat_line& l, bool own) {
        std::lock_guard lk(mu);
        auto key = std::make_pair(l.room_id, l.seq);
        auto [it, fresh] = lines.emplace(key, l);
        if (!fresh && !(it->second == l)) mismatch = true;
        if (own && acked.insert(key).second) acked_count.fetch_add(1);
    }
};

/// The room a login put the session back into: the join_room_res that follows login_res.
std::uint64_t expect_rejoin(chat_client& c) {
    auto f = c.expect(msg_type::join_room_res);
    auto* r = f.as<proto::join_room_res>();
    return r && r->room() ? r->room()->id() : 0;
}

TEST_P(crash_loop, kill_9_ten_times_loses_no_acknowledged_message) {
    // Load and restarts per round take about a second (several under the sanitizers).
    std::random_device rd;
    const unsigned seed = rd();
    std::mt19937 rng(seed);
    std::printf("crash loop (%s): seed %u\n", GetParam() == backend::sqlite ? "sqlite" : "postgres", seed);
    std::uniform_int_distribution<int> load_ms(sanitized ? 300 : 150, sanitized ? 2000 : 1200);

    const std::vector<std::string> extra{"--chat-rate", "100000", "--chat-burst", "100000"};
    std::vector<std::string> names;
    for (int i = 0; i < n_clients; ++i) names.push_back("crash" + std::to_string(i));
    std::vector<std::uint64_t> ids(n_clients), room_of(n_clients);
    std::vector<std::uint64_t> rooms;
    seen all;
    std::uint64_t total_missing = 0;

    for (int round = 1; round <= rounds; ++round) {
        auto srv = start(2, extra);
        ASSERT_TRUE(srv->ready());
        std::vector<std::unique_ptr<chat_client>> cs;
        for (int i = 0; i < n_clients; ++i) {
            cs.push_back(std::make_unique<chat_client>(srv->port()));
            auto& c = *cs.back();
            ids[static_cast<std::size_t>(i)] = c.login(names[static_cast<std::size_t>(i)]);
            ASSERT_NE(ids[static_cast<std::size_t>(i)], 0u);
            if (round == 1) {
                // Client i is in room i % n_rooms; the first n_rooms clients create them.
                if (i < n_rooms) {
                    rooms.push_back(c.create("crash room " + std::to_string(i)));
                } else {
                    c.join(rooms[static_cast<std::size_t>(i % n_rooms)]);
                }
                room_of[static_cast<std::size_t>(i)] = rooms[static_cast<std::size_t>(i % n_rooms)];
            } else {
                // The account belongs to its room: the login put the session back in it.
                EXPECT_EQ(expect_rejoin(c), room_of[static_cast<std::size_t>(i)])
                    << "round " << round << " client " << i;
            }
        }
        // Everyone is in before the load starts (join notices are not chat lines; skip them).
        std::atomic<bool> stop_sending{false};
        std::atomic<std::uint64_t> round_acked{0}, round_sent{0};
        std::vector<std::thread> ts;
        for (int i = 0; i < n_clients; ++i) {
            ts.emplace_back([&, i] {
                auto& c = *cs[static_cast<std::size_t>(i)];
                const auto me = ids[static_cast<std::size_t>(i)];
                std::atomic<std::uint64_t> sent{0}, acked{0};
                std::atomic<bool> done{false};
                // A window of unacknowledged messages, as a real client keeps.
                std::thread sender([&] {
                    for (std::uint64_t k = 1; !done.load() && !stop_sending.load(); ++k) {
                        while (k - acked.load() > 16 && !done.load())
                            std::this_thread::sleep_for(std::chrono::microseconds(200));
                        char head[64];
                        std::snprintf(head, sizeof head, "r%d-c%d-%llu-", round, i, static_cast<unsigned long long>(k));
                        std::string text(head);
                        text.append(k % 97, 'x');
                        if (!c.send_chat(text, k)) break;
                        sent = k;
                    }
                });
                for (;;) {
                    auto f = c.recv(std::chrono::seconds(10));
                    if (!f) break;  // the server was killed
                    if (f->type != msg_type::chat_msg) continue;
                    auto l = to_line(*f->as<proto::chat_msg>());
                    const bool own = l.sender_id == me;
                    if (own) acked = l.client_seq;
                    all.add(l, own);
                }
                done = true;
                sender.join();
                round_acked += acked.load();
                round_sent += sent.load();
            });
        }
        const auto before = all.acked_count.load();
        // The random delay counts from the round's first acknowledgement: on a loaded machine the
        // first answers after the logins can take longer than the shortest delay (CI's clone,
        // 2026-11-30: killed after 178 ms with none yet). A round with none in 30 s fails below.
        const auto first_by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (all.acked_count.load() == before && std::chrono::steady_clock::now() < first_by)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        const int wait = load_ms(rng);
        std::this_thread::sleep_for(std::chrono::milliseconds(wait));
        const auto acked_at_kill = all.acked_count.load();
        ASSERT_NE(srv->stop(SIGKILL), -1) << "the server did not die";
        for (auto& c : cs) ::shutdown(c->fd(), SHUT_RDWR);
        for (auto& t : ts) t.join();
        EXPECT_FALSE(all.mismatch) << "two deliveries under one (room, seq) differ, or a seq was reused";
        EXPECT_GT(all.acked_count.load(), before) << "round " << round << ": no message was acknowledged";

        // What the database holds now, with no server running.
        auto store = open_store();
        std::uint64_t missing = 0, missing_seen = 0, stored_unacked = 0, stored = 0;
        for (auto room : rooms) {
            auto h = store->room_history(room, 10'000'000);
            stored += h.size();
            std::map<std::uint64_t, const chat_log_entry*> by_seq;
            for (std::size_t k = 0; k < h.size(); ++k) {
                EXPECT_EQ(h[k].seq, k + 1) << "round " << round << ": the log of room " << room << " has a gap";
                by_seq[h[k].seq] = &h[k];
            }
            std::lock_guard lk(all.mu);
            for (auto& [key, l] : all.lines) {
                if (key.first != room) continue;
                auto it = by_seq.find(key.second);
                const bool acked = all.acked.count(key) != 0;
                if (it == by_seq.end()) {
                    ++missing_seen;
                    if (acked) ++missing;
                    continue;
                }
                EXPECT_EQ(it->second->text, l.text) << "room " << room << " seq " << key.second;
                EXPECT_EQ(it->second->sender_id, l.sender_id);
            }
            for (auto& [seq, e] : by_seq)
                if (!all.lines.count({room, seq})) ++stored_unacked;
        }
        total_missing += missing;
        std::printf("crash loop (%s) round %2d: killed after %4d ms; acknowledged %6llu (this round %5llu), "
                    "stored %6llu, stored but never delivered %3llu, missing: acknowledged %llu, delivered %llu\n",
                    GetParam() == backend::sqlite ? "sqlite" : "postgres", round, wait,
                    static_cast<unsigned long long>(all.acked_count.load()),
                    static_cast<unsigned long long>(acked_at_kill - before), static_cast<unsigned long long>(stored),
                    static_cast<unsigned long long>(stored_unacked), static_cast<unsigned long long>(missing),
                    static_cast<unsigned long long>(missing_seen));
        std::fflush(stdout);
        EXPECT_EQ(missing, 0u) << "round " << round << ": acknowledged messages are not in the database";
        EXPECT_EQ(missing_seen, 0u) << "round " << round << ": delivered messages are not in the database";
    }
    std::printf("crash loop (%s): %d rounds, %llu acknowledged, %llu missing\n",
                GetParam() == backend::sqlite ? "sqlite" : "postgres", rounds,
                static_cast<unsigned long long>(all.acked_count.load()),
                static_cast<unsigned long long>(total_missing));

    // A last start: a clean run on the database ten kills left, with the rooms still there.
    auto srv = start(2, extra);
    chat_client c(srv->port());
    c.login(names[0]);
    EXPECT_EQ(expect_rejoin(c), room_of[0]);
    c.send_chat("after the crashes", 1);
    auto l = c.expect_chat();
    std::uint64_t last = 0;
    {
        std::lock_guard lk(all.mu);
        for (auto& [key, x] : all.lines)
            if (key.first == room_of[0]) last = std::max(last, key.second);
    }
    EXPECT_GT(l.seq, last) << "the room's seq goes on after everything delivered before";
    stop_cleanly(*srv);
}

STRIX_CHAT_BACKENDS(crash_loop);

}  // namespace
