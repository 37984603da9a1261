// What the database keeps: accounts and chat logs survive a restart, room ids do not collide
// with logged ones after it, and a SIGTERM under load loses no acknowledged message (every
// chat_msg any client received is in the chat log after the server exits).
#include "chat_fixture.hpp"

#include <libpq-fe.h>
#include <sqlite3.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

using namespace strix::test;
using proto::error_code;
using proto::msg_type;

namespace {

class durability : public chat_test {};

/// Holds the chat log's write lock from outside the server, so its log writer stalls.
class chat_log_lock {
public:
    chat_log_lock(backend b, const std::string& url) {
        if (b == backend::sqlite) {
            ::sqlite3_open(url.substr(7).c_str(), &lite_);
            ok_ = ::sqlite3_exec(lite_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
        } else {
            pg_ = ::PQconnectdb(url.c_str());
            PGresult* r = ::PQexec(pg_, "BEGIN; LOCK TABLE chat_logs IN ACCESS EXCLUSIVE MODE");
            ok_ = ::PQresultStatus(r) == PGRES_COMMAND_OK;
            ::PQclear(r);
        }
    }
    ~chat_log_lock() { release(); }
    bool ok() const { return ok_; }
    void release() {
        if (lite_) {
            ::sqlite3_exec(lite_, "ROLLBACK", nullptr, nullptr, nullptr);
            ::sqlite3_close(lite_);
            lite_ = nullptr;
        }
        if (pg_) {
            ::PQclear(::PQexec(pg_, "ROLLBACK"));
            ::PQfinish(pg_);
            pg_ = nullptr;
        }
    }

private:
    sqlite3* lite_ = nullptr;
    PGconn* pg_ = nullptr;
    bool ok_ = false;
};

TEST_P(durability, a_full_chat_log_queue_refuses_messages_and_acknowledges_only_what_it_stores) {
    // Room for 2 waiting log records; the writer holds one more in the batch it is committing.
    auto srv = start(2, {"--db-queue", "2"});
    chat_client a(srv->port()), b(srv->port());
    a.login("ann");
    b.login("ben");
    auto room = a.create("r");
    b.join(room);
    a.expect_member_event(msg_type::member_joined, room, "ben");

    chat_log_lock lock(GetParam(), db_url_);
    ASSERT_TRUE(lock.ok());
    // The first message is taken by the writer, which then waits for the lock.
    a.send_chat("m1", 1);
    EXPECT_EQ(a.expect_chat().seq, 1u);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::vector<std::uint64_t> acked{1};
    int busy = 0;
    for (std::uint64_t k = 2; k <= 6; ++k) {
        a.send_chat("m" + std::to_string(k), k);
        auto f = a.recv();
        ASSERT_TRUE(f);
        if (f->type == msg_type::chat_msg) {
            auto l = to_line(*f->as<proto::chat_msg>());
            EXPECT_EQ(l.seq, acked.size() + 1) << "a refused message takes no seq";
            acked.push_back(l.client_seq);
        } else {
            ASSERT_EQ(f->type, msg_type::error_res);
            EXPECT_EQ(f->as<proto::error_res>()->code(), error_code::server_busy);
            EXPECT_EQ(f->as<proto::error_res>()->request(), msg_type::chat_req);
            ++busy;
        }
    }
    EXPECT_GE(busy, 1) << "the queue never filled";
    EXPECT_LE(acked.size(), 4u) << "more acknowledged than the queue and the batch can hold";
    // The other member got exactly the acknowledged messages.
    for (std::size_t i = 0; i < acked.size(); ++i) {
        auto l = b.expect_chat();
        EXPECT_EQ(l.seq, i + 1);
        EXPECT_EQ(l.client_seq, acked[i]);
    }
    b.expect_nothing();
    lock.release();
    stop_cleanly(*srv);

    // And the database holds exactly them.
    auto store = open_store();
    auto h = store->room_history(room, 100);
    ASSERT_EQ(h.size(), acked.size());
    for (std::size_t i = 0; i < h.size(); ++i) {
        EXPECT_EQ(h[i].seq, i + 1);
        EXPECT_EQ(h[i].text, "m" + std::to_string(acked[i]));
    }
}

TEST_P(durability, accounts_and_chat_logs_survive_a_restart) {
    std::uint64_t alice = 0, room = 0;
    std::vector<chat_line> sent;
    {
        auto srv = start();
        chat_client a(srv->port());
        bool created = false;
        alice = a.login("alice", "s3cret", &created);
        EXPECT_TRUE(created);
        room = a.create("history");
        for (int i = 1; i <= 5; ++i) {
            a.send_chat("line " + std::to_string(i), static_cast<std::uint64_t>(i));
            sent.push_back(a.expect_chat());
        }
        stop_cleanly(*srv);
    }
    auto srv = start();
    chat_client a(srv->port());
    a.send_login("alice", "wrong");
    a.expect_error(msg_type::login_req, error_code::wrong_password);
    bool created = true;
    EXPECT_EQ(a.login("alice", "s3cret", &created), alice);
    EXPECT_FALSE(created) << "the account was kept";
    // Room ids continue above the logged ones, so new messages never collide with old keys.
    auto room2 = a.create("after restart");
    EXPECT_NE(room2, room);
    EXPECT_GT(room2 >> 8, room >> 8);
    a.send_chat("new", 1);
    EXPECT_EQ(a.expect_chat().seq, 1u);
    stop_cleanly(*srv);

    auto store = open_store();
    auto h = store->room_history(room, 100);
    ASSERT_EQ(h.size(), 5u);
    for (std::size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(h[i].room_id, room);
        EXPECT_EQ(h[i].seq, i + 1);
        EXPECT_EQ(h[i].text, sent[i].text);
        EXPECT_EQ(h[i].sender_id, alice);
        EXPECT_EQ(h[i].sender_name, "alice");
        EXPECT_EQ(static_cast<std::uint64_t>(h[i].server_ts_us), sent[i].server_ts_us);
    }
    auto h2 = store->room_history(room2, 100);
    ASSERT_EQ(h2.size(), 1u);
    EXPECT_EQ(h2[0].text, "new");
    EXPECT_EQ(store->count_chat_logs(), 6u);
}

TEST_P(durability, sigterm_under_load_loses_no_acknowledged_message) {
    auto srv = start(2, {"--chat-rate", "100000", "--chat-burst", "100000"});
    const int n_rooms = 3, per_room = 4;
    std::vector<std::unique_ptr<chat_client>> cs;
    std::vector<std::uint64_t> rooms, ids;
    for (int r = 0; r < n_rooms; ++r) {
        for (int m = 0; m < per_room; ++m) {
            cs.push_back(std::make_unique<chat_client>(srv->port()));
            auto& c = *cs.back();
            ids.push_back(c.login("r" + std::to_string(r) + "m" + std::to_string(m)));
            if (m == 0) {
                rooms.push_back(c.create("room" + std::to_string(r)));
            } else {
                c.join(rooms.back());
            }
        }
    }
    // Every client sends flat out and records every chat_msg it receives (its acknowledgements
    // and the others' messages) until the server goes away.
    std::mutex mu;
    std::map<std::pair<std::uint64_t, std::uint64_t>, chat_line> received;  // (room, seq) -> line
    std::atomic<std::uint64_t> total{0};
    std::atomic<bool> mismatch{false};
    std::vector<std::thread> ts;
    for (std::size_t i = 0; i < cs.size(); ++i) {
        ts.emplace_back([&, i] {
            auto& c = *cs[i];
            std::atomic<bool> done{false};
            std::atomic<std::uint64_t> acked{0};
            // A window of unacknowledged messages per client, as a real client keeps: the load
            // is heavy but bounded, like the load tool's.
            constexpr std::uint64_t window = 32;
            std::thread sender([&] {
                for (std::uint64_t k = 1; !done.load(); ++k) {
                    while (k - acked.load() > window && !done.load()) std::this_thread::sleep_for(std::chrono::microseconds(200));
                    char head[48];
                    std::snprintf(head, sizeof head, "c%zu-%llu-", i, static_cast<unsigned long long>(k));
                    std::string text(head);
                    text.append(k % 200, 'x');
                    if (!c.send_chat(text, k)) break;
                }
            });
            for (;;) {
                auto f = c.recv(std::chrono::seconds(10));
                if (!f) break;  // closed by the shutdown
                if (f->type != msg_type::chat_msg) continue;  // member_joined of late joiners
                auto l = to_line(*f->as<proto::chat_msg>());
                if (l.sender_id == ids[i]) acked = l.client_seq;
                total.fetch_add(1);
                std::lock_guard lk(mu);
                auto [it, fresh] = received.emplace(std::make_pair(l.room_id, l.seq), l);
                if (!fresh && !(it->second == l)) mismatch = true;
            }
            done = true;
            sender.join();
        });
    }
    // Let traffic build up, then stop the server in the middle of it.
    const std::uint64_t want = sanitized ? 2000 : 10000;
    ASSERT_TRUE(eventually([&] { return total.load() >= want; }, std::chrono::seconds(30)));
    stop_cleanly(*srv);
    for (auto& c : cs) ::shutdown(c->fd(), SHUT_RDWR);
    for (auto& t : ts) t.join();
    EXPECT_FALSE(mismatch) << "two members saw different messages under one (room, seq)";

    auto store = open_store();
    std::uint64_t stored_total = store->count_chat_logs();
    EXPECT_GE(stored_total, received.size());
    std::size_t checked = 0;
    for (auto room : rooms) {
        auto h = store->room_history(room, 10'000'000);
        std::map<std::uint64_t, const strix::chat::chat_log_entry*> by_seq;
        for (std::size_t k = 0; k < h.size(); ++k) {
            EXPECT_EQ(h[k].seq, k + 1) << "the log of room " << room << " has a gap";
            by_seq[h[k].seq] = &h[k];
        }
        for (auto& [key, l] : received) {
            if (key.first != room) continue;
            auto it = by_seq.find(key.second);
            ASSERT_NE(it, by_seq.end()) << "acknowledged message room " << room << " seq " << key.second << " is not in the database";
            EXPECT_EQ(it->second->text, l.text);
            EXPECT_EQ(it->second->sender_id, l.sender_id);
            EXPECT_EQ(it->second->sender_name, l.sender);
            ++checked;
        }
    }
    EXPECT_EQ(checked, received.size());
    EXPECT_GT(checked, 0u);
}

STRIX_CHAT_BACKENDS(durability);

}  // namespace
