// What the database keeps: accounts, chat logs, rooms and who belongs to them survive a restart
// (a login puts a member back in its room, rooms of a shard that is gone move to another), room
// ids do not collide with old ones after it, a message is acknowledged only once it is stored
// (--ack stored; --ack early acknowledges at once), and a SIGTERM under load loses no
// acknowledged message (every chat_msg any client received is in the chat log after the server
// exits). The kill -9 loop is crash_loop_test.cpp.
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
            // The server may be committing (the room just created) or checkpointing right now:
            // wait for its write lock instead of failing at once with SQLITE_BUSY.
            ::sqlite3_busy_timeout(lite_, 5000);
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

TEST_P(durability, nothing_is_acknowledged_before_it_is_stored_and_a_full_queue_refuses) {
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
    // The first message is taken by the writer, which then waits for the lock; the next two
    // wait in the queue, the rest find it full.
    a.send_chat("m1", 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (std::uint64_t k = 2; k <= 6; ++k) a.send_chat("m" + std::to_string(k), k);
    // While the database is locked nobody gets a chat_msg: only the refusals come.
    int busy = 0;
    while (auto f = a.recv(std::chrono::milliseconds(500))) {
        ASSERT_EQ(f->type, msg_type::error_res) << "a message was acknowledged before it was stored";
        EXPECT_EQ(f->as<proto::error_res>()->code(), error_code::server_busy);
        EXPECT_EQ(f->as<proto::error_res>()->request(), msg_type::chat_req);
        ++busy;
    }
    b.expect_nothing();
    EXPECT_GE(busy, 1) << "the queue never filled";
    EXPECT_LE(busy, 4);
    const std::size_t accepted = 6 - static_cast<std::size_t>(busy);
    EXPECT_LE(accepted, 3u) << "more accepted than the queue and the batch can hold";
    // Once the database is free, the accepted messages are acknowledged, in seq order, and the
    // other member gets exactly them.
    lock.release();
    std::vector<std::uint64_t> acked;
    for (std::size_t i = 0; i < accepted; ++i) {
        auto l = a.expect_chat();
        EXPECT_EQ(l.seq, i + 1) << "a refused message takes no seq";
        acked.push_back(l.client_seq);
        auto lb = b.expect_chat();
        EXPECT_EQ(lb, l);
    }
    EXPECT_EQ(acked.front(), 1u);
    a.expect_nothing();
    b.expect_nothing();
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
    // alice never left her room: the login put her back in it.
    auto back = a.expect(msg_type::join_room_res);
    ASSERT_TRUE(back.as<proto::join_room_res>() && back.as<proto::join_room_res>()->room());
    EXPECT_EQ(back.as<proto::join_room_res>()->room()->id(), room);
    a.send_leave();
    a.expect(msg_type::leave_room_res);
    // Room ids continue above the old ones, so new messages never collide with old keys.
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
                    while (k - acked.load() > window && !done.load())
                        std::this_thread::sleep_for(std::chrono::microseconds(200));
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
            ASSERT_NE(it, by_seq.end()) << "acknowledged message room " << room << " seq " << key.second
                                        << " is not in the database";
            EXPECT_EQ(it->second->text, l.text);
            EXPECT_EQ(it->second->sender_id, l.sender_id);
            EXPECT_EQ(it->second->sender_name, l.sender);
            ++checked;
        }
    }
    EXPECT_EQ(checked, received.size());
    EXPECT_GT(checked, 0u);
}

TEST_P(durability, with_ack_early_a_message_is_acknowledged_before_it_is_stored) {
    auto srv = start(2, {"--ack", "early"});
    chat_client a(srv->port());
    a.login("ann");
    auto room = a.create("r");
    chat_log_lock lock(GetParam(), db_url_);
    ASSERT_TRUE(lock.ok());
    a.send_chat("not stored yet", 1);
    auto l = a.expect_chat();  // while the database cannot take it
    EXPECT_EQ(l.seq, 1u);
    EXPECT_EQ(l.room_id, room);
    lock.release();
    stop_cleanly(*srv);  // a clean exit still writes everything queued
    auto h = open_store()->room_history(room, 10);
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0].text, "not stored yet");
}

TEST_P(durability, with_ack_early_a_resume_gets_what_the_writer_has_not_stored_yet) {
    // The writer gathers for a second before each commit: meanwhile the messages are
    // acknowledged and delivered (--ack early) but not in the database.
    auto srv = start(2, {"--ack", "early", "--commit-delay-us", "1000000"});
    chat_client a(srv->port()), b(srv->port());
    a.login("ann");
    b.login("ben");
    auto room = a.create("r");
    for (std::uint64_t k = 1; k <= 3; ++k) {
        a.send_chat("m" + std::to_string(k), k);
        EXPECT_EQ(a.expect_chat().seq, k);
    }
    b.join(room);  // its join point is 3: a resume from 0 asks for 1..3, none stored yet
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(proto::Createresume_req(fbb, room, 0));
    b.send(fbb, msg_type::resume_req);
    // The database lacks them: the server flushes its writer and reads again, so the range is
    // whole (not a gap).
    auto f = b.expect(msg_type::resume_res);
    auto* r = f.as<proto::resume_res>();
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->status(), proto::resume_status::complete);
    EXPECT_EQ(r->to_seq(), 3u);
    EXPECT_FALSE(r->more());
    std::vector<std::string> texts;
    if (r->messages())
        for (auto* m : *r->messages()) texts.push_back(m->text()->str());
    EXPECT_EQ(texts, (std::vector<std::string>{"m1", "m2", "m3"}));
    stop_cleanly(*srv);
}

/// The join_room_res a login sends when the account belongs to a room: (room id, member names,
/// an offline member's with a "-" after it).
std::pair<std::uint64_t, std::vector<std::string>> expect_rejoin(chat_client& c) {
    auto f = c.expect(msg_type::join_room_res);
    std::pair<std::uint64_t, std::vector<std::string>> out;
    auto* r = f.as<proto::join_room_res>();
    if (!r || !r->room() || !r->members()) return out;
    out.first = r->room()->id();
    for (auto* m : *r->members()) out.second.push_back(m->name()->str() + (m->online() ? "" : "-"));
    return out;
}

TEST_P(durability, rooms_and_memberships_survive_a_restart) {
    std::uint64_t lobby = 0, attic = 0, gone = 0;
    {
        auto srv = start();
        chat_client a(srv->port()), b(srv->port()), c(srv->port()), d(srv->port());
        a.login("ann");
        b.login("ben");
        c.login("cat");
        d.login("dan");
        lobby = a.create("lobby");
        b.join(lobby);
        a.expect_member_event(msg_type::member_joined, lobby, "ben");
        attic = c.create("attic");
        gone = d.create("gone");
        d.send_leave();  // dan left on purpose: nobody belongs to "gone", it is deleted
        d.expect(msg_type::leave_room_res);
        for (std::uint64_t k = 1; k <= 3; ++k) {
            a.send_chat("before " + std::to_string(k), k);
            EXPECT_EQ(a.expect_chat().seq, k);
            EXPECT_EQ(b.expect_chat().seq, k);
        }
        stop_cleanly(*srv);  // ann, ben and cat disconnect without leaving
    }
    auto srv = start();
    chat_client x(srv->port());
    x.login("xena");
    auto rooms = x.list();
    ASSERT_EQ(rooms.size(), 2u) << "the deleted room stays deleted";
    // Their members are back too, offline: lobby has ann and ben, attic has cat.
    const auto members_of = [&](std::uint64_t id) { return id == lobby ? 2u : 1u; };
    EXPECT_EQ(rooms[0], std::make_tuple(std::min(lobby, attic), std::string(lobby < attic ? "lobby" : "attic"),
                                        members_of(std::min(lobby, attic))));
    EXPECT_EQ(rooms[1], std::make_tuple(std::max(lobby, attic), std::string(lobby < attic ? "attic" : "lobby"),
                                        members_of(std::max(lobby, attic))));
    EXPECT_EQ(x.list_online()[0], std::make_tuple(std::min(lobby, attic), members_of(std::min(lobby, attic)), 0u))
        << "none online";
    x.send_join(gone);
    x.expect_error(msg_type::join_room_req, error_code::unknown_room);

    // A login puts each member back, online; the others stay listed, offline until they log in.
    chat_client a(srv->port()), b(srv->port()), d(srv->port());
    a.login("ann");
    EXPECT_EQ(expect_rejoin(a), std::make_pair(lobby, std::vector<std::string>{"ann", "ben-"}));
    b.login("ben");
    EXPECT_EQ(expect_rejoin(b), std::make_pair(lobby, std::vector<std::string>{"ann", "ben"}));
    a.expect_presence(lobby, "ben", true);
    // The room's seq goes on after the stored messages.
    b.send_chat("after", 9);
    auto l = a.expect_chat();
    EXPECT_EQ(l.seq, 4u);
    EXPECT_EQ(b.expect_chat(), l);
    // dan left before the restart: no room for him.
    d.login("dan");
    d.expect_nothing();
    // cat is not back yet; a newcomer sees her as an offline member.
    x.send_join(attic);
    auto jx = x.expect(msg_type::join_room_res);
    EXPECT_EQ(chat_client::member_states(jx), (std::vector<std::string>{"cat-", "xena"}));
    // New rooms get ids above every old one, the deleted room's included.
    auto fresh = d.create("fresh");
    EXPECT_GT(fresh >> 8, std::max({lobby, attic, gone}) >> 8);
    stop_cleanly(*srv);

    auto stored = open_store()->load_rooms();
    ASSERT_EQ(stored.size(), 3u);
    std::map<std::uint64_t, std::size_t> members;
    for (auto& r : stored) members[r.id] = r.members.size();
    EXPECT_EQ(members[lobby], 2u);
    EXPECT_EQ(members[attic], 2u) << "cat (absent) and xena";
    EXPECT_EQ(members[fresh], 1u);
}

TEST_P(durability, rooms_of_a_shard_that_is_gone_move_to_another) {
    std::uint64_t room = 0;
    int creator = -1;
    {
        auto srv = start(3);
        // The kernel spreads connections over the shards: create rooms until shard 2 owns one.
        std::vector<std::unique_ptr<chat_client>> cs;
        for (int i = 0; i < 60 && room == 0; ++i) {
            cs.push_back(std::make_unique<chat_client>(srv->port()));
            auto& c = *cs.back();
            c.login("u" + std::to_string(i));
            auto id = c.create("r" + std::to_string(i));
            if ((id & 0xff) != 2) continue;
            room = id;
            creator = i;
            c.send_chat("on shard 2", 1);
            EXPECT_EQ(c.expect_chat().seq, 1u);
        }
        ASSERT_NE(room, 0u) << "no room landed on shard 2";
        stop_cleanly(*srv);
    }
    // Two shards now: room ids keep their creator's shard, the owner is that modulo 2.
    auto srv = start(2);
    chat_client owner(srv->port()), guest(srv->port());
    owner.login("u" + std::to_string(creator));
    EXPECT_EQ(expect_rejoin(owner).first, room);
    guest.login("guest");
    EXPECT_EQ(guest.join(room).size(), 2u);
    owner.expect_member_event(msg_type::member_joined, room, "guest");
    guest.send_chat("moved", 2);
    auto l = owner.expect_chat();
    EXPECT_EQ(l.seq, 2u);
    EXPECT_EQ(l.room_id, room);
    EXPECT_EQ(guest.expect_chat(), l);
    stop_cleanly(*srv);
    auto h = open_store()->room_history(room, 10);
    ASSERT_EQ(h.size(), 2u);
    EXPECT_EQ(h[1].text, "moved");
}

STRIX_CHAT_BACKENDS(durability);

}  // namespace
