// Cluster mode under faults, end to end: a real redis-server, a PostgreSQL database and two
// strix-chat-server processes, as in cross_node_chat_test. Each test breaks one thing and checks
// what members get:
//   - the stream lost messages a node had not delivered (trimmed): the node fills them from the
//     database in seq order, and a seq the database lacks is reported as a gap, not skipped;
//   - Redis lost its data (killed and restarted empty) while a node watched nothing: the same,
//     the new epoch's stream starting past what the node delivered;
//   - Redis killed (-9) and restarted mid-chat: both nodes subscribe again within 2 s and every
//     acknowledged message reaches both members once, in seq order;
//   - a node killed (-9): its member reconnects to the other node with its resume token and gets
//     what it missed through resume (or a gap answer and then history);
//   - Redis unreachable when a node starts: a clear error, retries, and chat once Redis is up.
// The measured figures are printed as "[fault figures] ..." lines.
#include "cluster_nodes.hpp"

#include <csignal>
#include <cstdio>
#include <map>
#include <set>

namespace {

// The stream lost what node B had not delivered while its subscription was gone (B stopped,
// its pub/sub connections killed, the stream trimmed meanwhile): B, resubscribed, fills the gap
// from the database, in seq order before the stream's messages, and a seq the database does not
// have (as after a publisher died between FCALL and its commit) comes as a gap notice.
TEST(cluster_faults, AGapTheStreamLostIsFilledFromTheDatabase) {
    redis_server redis;
    two_nodes n(redis.port());
    ASSERT_TRUE(n.a.ready()) << n.a.log();
    ASSERT_TRUE(n.b.ready()) << n.b.log();
    chat_client alice(n.a.port());
    const std::uint64_t alice_id = alice.login("alice");
    const std::uint64_t room = alice.create("hall");
    ASSERT_NE(room, 0u);
    chat_client bob(n.b.port());
    bob.login("bob");
    bob.join(room);
    ASSERT_TRUE(wait_subscribers(redis.port(), room, 2));
    {
        received ra;
        say(alice, alice_id, ra, "m", 1);
        EXPECT_EQ(bob.expect_chat().seq, 1u);
    }
    // Node B misses the room's pub/sub from here: stopped, and its subscriptions cut (node A's
    // too; A's feed reads what it missed from the stream when it is back).
    ASSERT_EQ(::kill(n.b.pid(), SIGSTOP), 0);
    EXPECT_GE(redis_integer(redis.port(), {"CLIENT", "KILL", "TYPE", "pubsub"}), 2);
    received ra;
    say(alice, alice_id, ra, "m", 20, 2);  // seqs 2..21, each acknowledged (stored)
    ASSERT_EQ(ra.seqs.back(), 21u);
    // Seq 7 never reached the database; the stream keeps only 17..21.
    pg_server::exec_sql(n.db, "DELETE FROM chat_logs WHERE room_id = " + std::to_string(room) + " AND seq = 7");
    ASSERT_EQ(redis_integer(redis.port(), {"XTRIM", "chat:{" + std::to_string(room) + "}:x", "MAXLEN", "5"}), 16);
    const auto t0 = clock_type::now();
    ASSERT_EQ(::kill(n.b.pid(), SIGCONT), 0);
    received rb;
    while (rb.seqs.size() < 20) {
        auto f = bob.recv(10s);
        ASSERT_TRUE(f) << "after " << rb.seqs.size() << " frames\n" << n.b.log();
        rb.take(*f);
    }
    const long long took = ms_since(t0);
    std::vector<std::uint64_t> want;
    for (std::uint64_t s = 2; s <= 21; ++s) want.push_back(s);
    EXPECT_EQ(rb.seqs, want) << "2..6 and 8..16 from the database, 7 as a gap, 17..21 from the stream";
    EXPECT_EQ(rb.gap_notices, std::vector<std::uint64_t>{7});
    for (const auto& l : rb.chats) {
        EXPECT_EQ(l.text, "m" + std::to_string(l.seq));
        EXPECT_EQ(l.sender_id, alice_id);
    }
    bob.expect_nothing(200ms);
    const auto [filled, missing] = refilled(n.b.log());
    EXPECT_EQ(filled, 14u) << n.b.log();
    EXPECT_EQ(missing, 1u);
    std::printf("[fault figures] trimmed stream: gap (1, 16] filled from the database: %llu messages, %llu missing "
                "(reported as a gap after the 1.5 s commit wait); all 20 delivered %lld ms after node B went on\n",
                static_cast<unsigned long long>(filled), static_cast<unsigned long long>(missing), took);
    EXPECT_EQ(n.a.stop(), 0) << n.a.log();
    EXPECT_EQ(n.b.stop(), 0) << n.b.log();
}

// Redis lost its data while node B had no member of the room online: B dropped the room with its
// last session, so when its member comes back B reads the room from the database (join point 16,
// not the 1 it had delivered) and resume gives 2..16 from there, whole; nothing comes twice live.
TEST(cluster_faults, WhatRedisLostIsFilledFromTheDatabaseAfterARestart) {
    redis_server redis;
    two_nodes n(redis.port());
    ASSERT_TRUE(n.a.ready()) << n.a.log();
    ASSERT_TRUE(n.b.ready()) << n.b.log();
    chat_client alice(n.a.port());
    const std::uint64_t alice_id = alice.login("alice");
    const std::uint64_t room = alice.create("hall");
    ASSERT_NE(room, 0u);
    received ra;
    {
        chat_client bob(n.b.port());
        bob.login("bob");
        bob.join(room);
        ASSERT_TRUE(wait_subscribers(redis.port(), room, 2));
        say(alice, alice_id, ra, "m", 1);
        EXPECT_EQ(bob.expect_chat().seq, 1u);
    }
    ASSERT_TRUE(wait_subscribers(redis.port(), room, 1)) << "node B unsubscribed";
    say(alice, alice_id, ra, "m", 10, 2);  // 2..11, stored
    redis.kill();
    redis.start();
    // The first chat after the restart may be refused while node A reconnects: sent again.
    for (std::uint64_t i = 12; i <= 16; ++i) {
        const auto until = clock_type::now() + 10s;
        for (;;) {
            ASSERT_TRUE(alice.send_chat("m" + std::to_string(i), i));
            const std::size_t before = ra.own(alice_id);
            const int errors = ra.errors;
            while (ra.own(alice_id) == before && ra.errors == errors) {
                auto f = alice.recv(10s);
                ASSERT_TRUE(f) << n.a.log();
                ra.take(*f);
            }
            if (ra.own(alice_id) > before) break;
            ASSERT_LT(clock_type::now(), until) << n.a.log();
            std::this_thread::sleep_for(50ms);
        }
    }
    EXPECT_EQ(ra.seqs.back(), 16u) << "the new epoch continues the seqs (the publisher's floor)";

    const auto t0 = clock_type::now();
    chat_client bob(n.b.port());
    bob.login("bob");
    auto jf = bob.expect(msg_type::join_room_res);
    ASSERT_TRUE(jf.as<proto::join_room_res>());
    EXPECT_EQ(jf.as<proto::join_room_res>()->last_seq(), 16u) << "the join point is the database's";
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(proto::Createresume_req(fbb, room, 1));
    bob.send(fbb, msg_type::resume_req);
    std::vector<chat_line> resumed;
    for (bool more = true; more;) {
        auto f = bob.recv(10s);
        ASSERT_TRUE(f) << n.b.log();
        ASSERT_EQ(f->type, msg_type::resume_res) << "nothing but the resume before the next message";
        auto* r = f->as<proto::resume_res>();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status(), proto::resume_status::complete) << "the database holds 2..16 whole";
        EXPECT_EQ(r->to_seq(), 16u);
        if (r->messages())
            for (auto* m : *r->messages()) resumed.push_back(to_line(*m));
        more = r->more();
    }
    const long long took = ms_since(t0);
    ASSERT_EQ(resumed.size(), 15u);
    for (std::size_t i = 0; i < resumed.size(); ++i) {
        EXPECT_EQ(resumed[i].seq, i + 2);
        EXPECT_EQ(resumed[i].text, "m" + std::to_string(i + 2));
    }
    // The next message comes live, once, right after the join point.
    say(alice, alice_id, ra, "m", 1, 17);
    EXPECT_EQ(bob.expect_chat().seq, 17u);
    bob.expect_nothing(200ms);
    std::printf("[fault figures] redis restart while a node had no member online: the node read the room again "
                "(join point 16) and resume gave 2..16 whole %lld ms after the login\n",
                took);
    EXPECT_EQ(n.a.stop(), 0) << n.a.log();
    EXPECT_EQ(n.b.stop(), 0) << n.b.log();
}

// Redis killed (-9) and restarted empty on the same port while members on both nodes chat.
TEST(cluster_faults, RedisKilledAndRestartedMidChat) {
    redis_server redis;
    two_nodes n(redis.port());
    ASSERT_TRUE(n.a.ready()) << n.a.log();
    ASSERT_TRUE(n.b.ready()) << n.b.log();
    chat_client alice(n.a.port()), bob(n.b.port());
    const std::uint64_t alice_id = alice.login("alice");
    const std::uint64_t bob_id = bob.login("bob");
    const std::uint64_t room = alice.create("hall");
    ASSERT_NE(room, 0u);
    bob.join(room);
    ASSERT_TRUE(wait_subscribers(redis.port(), room, 2));

    constexpr std::uint64_t rounds = 150, kill_at = 50;
    received ra, rb;
    long long resubscribed_after_up = -1, resubscribed_after_kill = -1, restart_ms = 0;
    for (std::uint64_t i = 1; i <= rounds; ++i) {
        ASSERT_TRUE(alice.send_chat("a" + std::to_string(i), i));
        ASSERT_TRUE(bob.send_chat("b" + std::to_string(i), i));
        if (i == kill_at) {
            const auto killed = clock_type::now();
            redis.kill();
            redis.start();  // blocks until it answers PING
            restart_ms = ms_since(killed);
            const auto up = clock_type::now();
            // Both nodes' feeds subscribed again (measured while the chat goes on below? the
            // senders keep queueing; their answers are read afterwards).
            if (wait_subscribers(redis.port(), room, 2, 5s)) {
                resubscribed_after_up = ms_since(up);
                resubscribed_after_kill = ms_since(killed);
            }
        }
        ra.drain(alice, 1ms);
        rb.drain(bob, 1ms);
        std::this_thread::sleep_for(5ms);
    }
    // Every request answered (a chat_msg or server_busy); gap fills wait at most 1.5 s.
    ra.drain(alice, 3s);
    rb.drain(bob, 3s);

    ASSERT_GE(resubscribed_after_up, 0) << "the nodes did not subscribe again within 5 s\n" << n.a.log() << n.b.log();
    EXPECT_LT(resubscribed_after_up, 2000) << "resubscribed within 2 s of Redis being back";
    expect_increasing(ra, "alice");
    expect_increasing(rb, "bob");
    // Acknowledged: the sender got its own chat_msg. Each reaches both members exactly once.
    // A message is known by its sender and text (every text is unique here), not by client_seq:
    // one refilled from the database (its pub/sub copy lost with Redis) carries client fields
    // only on its sender's node, the database keeps none.
    std::map<std::pair<std::uint64_t, std::string>, chat_line> acked;
    for (const auto* r : {&ra, &rb})
        for (const auto& l : r->chats)
            if (l.sender_id == (r == &ra ? alice_id : bob_id)) acked[{l.sender_id, l.text}] = l;
    for (const auto* r : {&ra, &rb}) {
        std::map<std::pair<std::uint64_t, std::string>, int> seen;
        for (const auto& l : r->chats) ++seen[{l.sender_id, l.text}];
        for (const auto& [key, l] : acked) {
            EXPECT_EQ(seen[key], 1) << (r == &ra ? "alice" : "bob") << " got acked message " << l.text << " (seq "
                                    << l.seq << ") " << seen[key] << " times";
        }
        for (const auto& [key, count] : seen) EXPECT_LE(count, 1) << "no message twice";
    }
    // The sender's own copy keeps its client_seq even when refilled (own_seqs_).
    for (const auto& [key, l] : acked) EXPECT_EQ(l.text.substr(1), std::to_string(l.client_seq)) << l.text;
    // One order: a seq names the same message on both nodes.
    std::map<std::uint64_t, std::string> by_seq;
    for (const auto& l : ra.chats) by_seq[l.seq] = l.text;
    for (const auto& l : rb.chats) {
        if (by_seq.contains(l.seq)) {
            EXPECT_EQ(by_seq[l.seq], l.text) << "seq " << l.seq;
        }
    }
    // Every chat_req was answered: acknowledged, or refused with server_busy.
    EXPECT_GE(ra.own(alice_id) + static_cast<std::size_t>(ra.errors), rounds);
    EXPECT_GE(rb.own(bob_id) + static_cast<std::size_t>(rb.errors), rounds);
    const auto fa = refilled(n.a.log()), fb = refilled(n.b.log());
    std::printf("[fault figures] redis kill -9 + restart (%lld ms to answer PING again): both nodes subscribed again "
                "%lld ms after Redis was up (%lld ms after the kill); %zu of %llu messages acknowledged, %d+%d "
                "refused server_busy; gap notices %zu+%zu; refilled from the database %llu+%llu (missing %llu+%llu)\n",
                restart_ms, resubscribed_after_up, resubscribed_after_kill, acked.size(),
                static_cast<unsigned long long>(2 * rounds), ra.errors, rb.errors, ra.gap_notices.size(),
                rb.gap_notices.size(), static_cast<unsigned long long>(fa.first),
                static_cast<unsigned long long>(fb.first), static_cast<unsigned long long>(fa.second),
                static_cast<unsigned long long>(fb.second));

    if (HasFailure()) {
        // What the nodes said about the room's seqs (gaps, epochs, fills), to explain a failure.
        for (const auto* node : {&n.a, &n.b}) {
            std::istringstream lines(node->log());
            for (std::string line; std::getline(lines, line);)
                if (line.find("room ") != std::string::npos)
                    std::printf("%s: %s\n", node == &n.a ? "A" : "B", line.c_str());
        }
        auto around = [](const received& r, const char* who) {
            for (const auto& l : r.chats)
                if (l.seq + 3 >= 2 * kill_at && l.seq <= 2 * kill_at + 3)
                    std::printf("%s got seq %llu %s\n", who, static_cast<unsigned long long>(l.seq), l.text.c_str());
        };
        around(ra, "alice");
        around(rb, "bob");
    }
    // The database holds every acknowledged message at the seq the members saw.
    EXPECT_EQ(n.a.stop(), 0) << n.a.log();
    EXPECT_EQ(n.b.stop(), 0) << n.b.log();
    auto store = open_chat_store(n.db, password_policy::fast_for_tests());
    std::map<std::uint64_t, chat_log_entry> stored;
    for (auto& e : store->room_history(room, 4 * rounds)) stored[e.seq] = e;
    for (const auto& [key, l] : acked) {
        ASSERT_TRUE(stored.contains(l.seq)) << l.text << " acknowledged but not stored at seq " << l.seq;
        EXPECT_EQ(stored[l.seq].text, l.text);
    }
}

// Node A killed (-9): its member reconnects to node B with its resume token, is put back in the
// room, and resume{room, last_seq} gives everything it missed in order (or a gap answer, and then
// history gives it), live messages after the join point following.
TEST(cluster_faults, ANodeKilledItsMembersResumeOnTheOtherNode) {
    redis_server redis;
    two_nodes n(redis.port());
    ASSERT_TRUE(n.a.ready()) << n.a.log();
    ASSERT_TRUE(n.b.ready()) << n.b.log();
    chat_client alice(n.a.port()), carol(n.a.port()), bob(n.b.port());
    const std::uint64_t alice_id = alice.login("alice");
    const bytes token = password_login(carol, "carol");
    const std::uint64_t bob_id = bob.login("bob");
    const std::uint64_t room = alice.create("hall");
    ASSERT_NE(room, 0u);
    carol.join(room);
    bob.join(room);
    ASSERT_TRUE(wait_subscribers(redis.port(), room, 2));
    received ra, rb, rc;
    say(alice, alice_id, ra, "a", 5);
    say(bob, bob_id, rb, "b", 10);
    while (rc.chats.size() < 15) {
        auto f = carol.recv(10s);
        ASSERT_TRUE(f);
        rc.take(*f);
    }
    const std::uint64_t k = rc.seqs.back();  // what carol had when node A died
    EXPECT_EQ(k, 15u);

    ASSERT_EQ(n.a.stop(SIGKILL), SIGKILL);
    say(bob, bob_id, rb, "b", 20, 11);  // missed by carol: seqs 16..35
    const auto t0 = clock_type::now();
    chat_client carol2(n.b.port());
    const bytes next = token_login(carol2, "carol", token);
    EXPECT_EQ(next.size(), 32u) << "the resume token is accepted by the other node";
    auto jf = carol2.expect(msg_type::join_room_res);
    auto* j = jf.as<proto::join_room_res>();
    ASSERT_TRUE(j);
    const std::uint64_t l = j->last_seq();
    EXPECT_EQ(l, 35u);
    say(bob, bob_id, rb, "b", 3, 31);  // live after carol's join point: 36..38

    // resume_req{room, k}: complete, or a gap answer (then history_req after k).
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(proto::Createresume_req(fbb, room, k));
    carol2.send(fbb, msg_type::resume_req);
    std::vector<chat_line> resumed, live;
    bool gap = false, done = false;
    int resume_frames = 0;
    while (!done) {
        auto f = carol2.recv(10s);
        ASSERT_TRUE(f) << n.b.log();
        if (f->type == msg_type::chat_msg) {
            live.push_back(to_line(*f->as<proto::chat_msg>()));
        } else if (f->type == msg_type::resume_res) {
            auto* r = f->as<proto::resume_res>();
            ASSERT_TRUE(r);
            ++resume_frames;
            gap = r->status() == proto::resume_status::gap;
            EXPECT_EQ(r->to_seq(), l);
            if (r->messages())
                for (auto* m : *r->messages()) resumed.push_back(to_line(*m));
            done = !r->more();
        }
    }
    const char* why = "";
    if (gap) {
        why = "the database did not hold (k, L] whole when asked";
        fbb.Clear();
        fbb.Finish(proto::Createhistory_req(fbb, room, 0, k, 200));
        carol2.send(fbb, msg_type::history_req);
        for (;;) {
            auto f = carol2.recv(10s);
            ASSERT_TRUE(f);
            if (f->type == msg_type::chat_msg) {
                live.push_back(to_line(*f->as<proto::chat_msg>()));
                continue;
            }
            ASSERT_EQ(f->type, msg_type::history_res);
            auto* h = f->as<proto::history_res>();
            ASSERT_TRUE(h && h->messages());
            for (auto* m : *h->messages())
                if (m->seq() <= l) resumed.push_back(to_line(*m));
            break;
        }
    }
    while (live.size() < 3) {
        auto f = carol2.recv(10s);
        ASSERT_TRUE(f);
        if (f->type == msg_type::chat_msg) live.push_back(to_line(*f->as<proto::chat_msg>()));
    }
    const long long took = ms_since(t0);
    // k+1 .. L from resume (or history), then L+1.. live: bob's b11..b33, each once, in order.
    std::vector<chat_line> all = resumed;
    all.insert(all.end(), live.begin(), live.end());
    ASSERT_EQ(all.size(), 23u);
    for (std::size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(all[i].seq, k + 1 + i);
        EXPECT_EQ(all[i].text, "b" + std::to_string(11 + i));
        EXPECT_EQ(all[i].sender_id, bob_id);
    }
    std::printf("[fault figures] node kill -9: its member resumed on the other node with its resume token: "
                "resume (%llu, %llu] %s%s%s in %d frame(s), %zu live after; reconnect to caught up %lld ms\n",
                static_cast<unsigned long long>(k), static_cast<unsigned long long>(l),
                gap ? "answered gap (" : "complete", why, gap ? "), history filled it" : "", resume_frames, live.size(),
                took);
    EXPECT_EQ(n.b.stop(), 0) << n.b.log();
}

// Redis not there when a node starts: the node serves anyway, says clearly that Redis is
// unreachable, refuses chat with server_busy meanwhile, and chats once Redis is up on that port.
TEST(cluster_faults, RedisUnreachableAtStartIsRetriedNotFatal) {
    const std::uint16_t port = free_port();
    const std::string db = shared_pg_server().create_database();
    temp_dir dir;
    server_process a(db, dir.path() + "/a.log", 2, node_args(port, 1));
    ASSERT_TRUE(a.ready()) << "the node serves without Redis\n" << a.log();
    const std::string unreachable = "Redis at tcp://127.0.0.1:" + std::to_string(port) + " unreachable";
    const auto until = clock_type::now() + 5s;
    while (a.log().find(unreachable) == std::string::npos && clock_type::now() < until)
        std::this_thread::sleep_for(10ms);
    EXPECT_NE(a.log().find(unreachable), std::string::npos) << a.log();
    chat_client alice(a.port());
    const std::uint64_t alice_id = alice.login("alice");
    ASSERT_NE(alice_id, 0u);
    const std::uint64_t room = alice.create("hall");
    ASSERT_NE(room, 0u);
    ASSERT_TRUE(alice.send_chat("too early", 1));
    alice.expect_error(msg_type::chat_req, proto::error_code::server_busy);

    redis_server redis(port);
    const auto up = clock_type::now();
    // Chat works once the node reconnected: retried every 100 ms until acknowledged.
    std::uint64_t acked_seq = 0;
    int refused = 0;
    for (std::uint64_t i = 2; acked_seq == 0 && clock_type::now() < up + 10s; ++i) {
        ASSERT_TRUE(alice.send_chat("m" + std::to_string(i), i));
        auto f = alice.recv(5s);
        ASSERT_TRUE(f) << a.log();
        if (f->type == msg_type::chat_msg) {
            const chat_line l = to_line(*f->as<proto::chat_msg>());
            EXPECT_EQ(l.text, "m" + std::to_string(i));
            acked_seq = l.seq;
        } else {
            ASSERT_EQ(f->type, msg_type::error_res);
            ++refused;
            std::this_thread::sleep_for(100ms);
        }
    }
    ASSERT_NE(acked_seq, 0u) << "no chat within 10 s of Redis being up\n" << a.log();
    EXPECT_EQ(acked_seq, 1u) << "the refused message took no seq";
    std::printf("[fault figures] redis unreachable at start: node up, error logged, first chat acknowledged %lld ms "
                "after Redis came up (%d refused meanwhile)\n",
                ms_since(up), refused);
    EXPECT_EQ(a.stop(), 0) << "no crash\n" << a.log();
}

}  // namespace
