// The chat flows over loopback against the real server process: login, rooms, chat, leave, list,
// ping and every error a request can get, asserting exactly which frames each client receives.
#include "chat_fixture.hpp"

#include <algorithm>
#include <set>

using namespace strix::test;
using proto::error_code;
using proto::msg_type;

namespace {

class flows : public chat_test {};

TEST_P(flows, login_auto_registers_then_verifies_the_password) {
    auto srv = start();
    ASSERT_TRUE(srv->ready());
    chat_client a(srv->port());
    bool created = false;
    auto id = a.login("alice", "secret", &created);
    EXPECT_NE(id, 0u);
    EXPECT_TRUE(created) << "the first login of a new name creates the account";

    chat_client b(srv->port());
    b.send_login("alice", "wrong");
    b.expect_error(msg_type::login_req, error_code::wrong_password);
    // The session stays usable: the right password now works and names the same account.
    bool created2 = true;
    EXPECT_EQ(b.login("alice", "secret", &created2), id);
    EXPECT_FALSE(created2);

    chat_client c(srv->port());
    EXPECT_NE(c.login("bob", "pw"), id) << "another name is another account";
    stop_cleanly(*srv);
}

TEST_P(flows, login_of_an_unknown_name_fails_without_auto_register) {
    {
        auto srv = start(2);
        chat_client a(srv->port());
        a.login("known", "pw");
        stop_cleanly(*srv);
    }
    auto srv = start(2, {"--no-auto-register"});
    chat_client a(srv->port());
    a.send_login("stranger", "pw");
    a.expect_error(msg_type::login_req, error_code::unknown_account);
    bool created = true;
    EXPECT_NE(a.login("known", "pw", &created), 0u) << "existing accounts still log in";
    EXPECT_FALSE(created);
    stop_cleanly(*srv);
}

TEST_P(flows, login_rejects_a_second_login_and_bad_names) {
    auto srv = start();
    chat_client a(srv->port());
    a.send_login("bad name!", "pw");
    a.expect_error(msg_type::login_req, error_code::invalid_name);
    a.send_login(std::string(33, 'x'), "pw");
    a.expect_error(msg_type::login_req, error_code::invalid_name);
    a.send_login("", "pw");
    a.expect_error(msg_type::login_req, error_code::invalid_name);
    a.send_login("ok_name", "");
    a.expect_error(msg_type::login_req, error_code::bad_request);
    a.login(std::string(32, 'x'));
    a.send_login("again", "pw");
    a.expect_error(msg_type::login_req, error_code::already_logged_in);
    a.expect_nothing();
    stop_cleanly(*srv);
}

TEST_P(flows, requests_before_login_get_not_logged_in_but_ping_works) {
    auto srv = start();
    chat_client a(srv->port());
    a.send_create("room");
    a.expect_error(msg_type::create_room_req, error_code::not_logged_in);
    a.send_join(1 << 8);
    a.expect_error(msg_type::join_room_req, error_code::not_logged_in);
    a.send_leave();
    a.expect_error(msg_type::leave_room_req, error_code::not_logged_in);
    a.send_chat("hello");
    a.expect_error(msg_type::chat_req, error_code::not_logged_in);
    a.send_list();
    a.expect_error(msg_type::list_rooms_req, error_code::not_logged_in);
    a.send_ping(1);
    auto f = a.expect(msg_type::pong_res);
    ASSERT_NE(f.as<proto::pong_res>(), nullptr);
    EXPECT_EQ(f.as<proto::pong_res>()->ts(), 1u);
    a.expect_nothing();
    stop_cleanly(*srv);
}

TEST_P(flows, create_join_chat_leave_with_exact_recipients) {
    auto srv = start();
    chat_client a(srv->port()), b(srv->port()), c(srv->port()), outsider(srv->port());
    auto ida = a.login("ann"), idb = b.login("ben"), idc = c.login("cat");
    outsider.login("out");

    auto room = a.create("lobby");
    ASSERT_NE(room, 0u);
    EXPECT_EQ(b.join(room), (std::vector<std::string>{"ann", "ben"}));
    a.expect_member_event(msg_type::member_joined, room, "ben");
    EXPECT_EQ(c.join(room), (std::vector<std::string>{"ann", "ben", "cat"}));
    a.expect_member_event(msg_type::member_joined, room, "cat");
    b.expect_member_event(msg_type::member_joined, room, "cat");

    // Every member, the sender included, gets every message once, in seq order.
    a.send_chat("one", 1, 111);
    b.send_chat("two", 1, 222);
    std::vector<chat_line> seen[3];
    chat_client* members[3] = {&a, &b, &c};
    for (int i = 0; i < 3; ++i) {
        seen[i].push_back(members[i]->expect_chat());
        seen[i].push_back(members[i]->expect_chat());
    }
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(seen[i].size(), 2u);
        EXPECT_EQ(seen[i], seen[0]) << "member " << i << " saw another order";
        EXPECT_EQ(seen[i][0].seq, 1u);
        EXPECT_EQ(seen[i][1].seq, 2u);
    }
    // Two senders race; whichever the room ordered first has seq 1.
    std::set<std::string> texts{seen[0][0].text, seen[0][1].text};
    EXPECT_EQ(texts, (std::set<std::string>{"one", "two"}));
    for (auto& l : seen[0]) {
        EXPECT_EQ(l.room_id, room);
        if (l.text == "one") {
            EXPECT_EQ(l.sender, "ann");
            EXPECT_EQ(l.sender_id, ida);
            EXPECT_EQ(l.client_ts, 111u);
        } else {
            EXPECT_EQ(l.sender, "ben");
            EXPECT_EQ(l.sender_id, idb);
            EXPECT_EQ(l.client_ts, 222u);
        }
        EXPECT_EQ(l.client_seq, 1u);
        EXPECT_GT(l.server_ts_us, 1600000000000000u) << "wall clock microseconds";
    }
    outsider.expect_nothing();

    // Leave: the leaver gets the ack, the others member_left; the leaver hears nothing more.
    b.send_leave();
    auto f = b.expect(msg_type::leave_room_res);
    ASSERT_NE(f.as<proto::leave_room_res>(), nullptr);
    EXPECT_EQ(f.as<proto::leave_room_res>()->room_id(), room);
    a.expect_member_event(msg_type::member_left, room, "ben");
    c.expect_member_event(msg_type::member_left, room, "ben");
    c.send_chat("three", 2);
    auto l3a = a.expect_chat();
    auto l3c = c.expect_chat();
    EXPECT_EQ(l3a, l3c);
    EXPECT_EQ(l3a.seq, 3u);
    EXPECT_EQ(l3a.sender_id, idc);
    b.expect_nothing();
    outsider.expect_nothing();
    EXPECT_EQ(b.sync().size(), 0u);

    // The room is listed with its member count until the last member leaves.
    auto rooms = outsider.list();
    ASSERT_EQ(rooms.size(), 1u);
    EXPECT_EQ(rooms[0], std::make_tuple(room, std::string("lobby"), 2u));
    a.send_leave();
    a.expect(msg_type::leave_room_res);
    c.expect_member_event(msg_type::member_left, room, "ann");
    c.send_leave();
    c.expect(msg_type::leave_room_res);
    EXPECT_TRUE(outsider.list().empty()) << "an empty room is removed";
    b.send_join(room);
    b.expect_error(msg_type::join_room_req, error_code::unknown_room);
    for (auto* x : {&a, &b, &c, &outsider}) x->expect_nothing(std::chrono::milliseconds(20));
    stop_cleanly(*srv);
}

TEST_P(flows, room_request_errors) {
    auto srv = start();
    chat_client a(srv->port()), b(srv->port());
    a.login("ann");
    b.login("ben");

    b.send_leave();
    b.expect_error(msg_type::leave_room_req, error_code::not_in_room);
    b.send_chat("nobody hears this");
    b.expect_error(msg_type::chat_req, error_code::not_in_room);
    b.send_join(0);
    b.expect_error(msg_type::join_room_req, error_code::unknown_room);
    b.send_join((77u << 8) | 0);
    b.expect_error(msg_type::join_room_req, error_code::unknown_room);
    b.send_join((1u << 8) | 200);  // owner shard 200 does not exist
    b.expect_error(msg_type::join_room_req, error_code::unknown_room);
    b.send_create("");
    b.expect_error(msg_type::create_room_req, error_code::invalid_name);
    b.send_create(std::string(65, 'r'));
    b.expect_error(msg_type::create_room_req, error_code::invalid_name);
    b.send_create("tab\there");
    b.expect_error(msg_type::create_room_req, error_code::invalid_name);
    b.send_create("\xff\xfe");
    b.expect_error(msg_type::create_room_req, error_code::invalid_name);

    auto room = a.create("caf\xc3\xa9 \xe2\x98\x95");
    // One room at a time: joining again, joining another, or creating while in a room fails.
    a.send_join(room);
    a.expect_error(msg_type::join_room_req, error_code::already_in_room);
    a.send_create("second");
    a.expect_error(msg_type::create_room_req, error_code::already_in_room);
    EXPECT_EQ(b.join(room), (std::vector<std::string>{"ann", "ben"}));
    a.expect_member_event(msg_type::member_joined, room, "ben");
    b.send_join(room);
    b.expect_error(msg_type::join_room_req, error_code::already_in_room);
    // Empty and oversized chat text.
    b.send_chat("");
    b.expect_error(msg_type::chat_req, error_code::bad_request);
    b.send_chat(std::string(60001, 'x'));
    b.expect_error(msg_type::chat_req, error_code::bad_request);
    // The largest text goes through (a frame above the 4 KiB pre-login limit).
    std::string big(60000, 'y');
    b.send_chat(big, 9);
    auto la = a.expect_chat();
    auto lb = b.expect_chat();
    EXPECT_EQ(la, lb);
    EXPECT_EQ(la.text, big);
    EXPECT_EQ(la.seq, 1u);
    a.expect_nothing();
    stop_cleanly(*srv);
}

TEST_P(flows, a_closed_session_stays_a_member_offline) {
    auto srv = start();
    chat_client a(srv->port()), b(srv->port());
    a.login("ann");
    b.login("ben");
    auto room = a.create("r");
    b.join(room);
    a.expect_member_event(msg_type::member_joined, room, "ben");
    b.close();
    a.expect_presence(room, "ben", false);
    auto rooms = a.list();
    ASSERT_EQ(rooms.size(), 1u);
    EXPECT_EQ(std::get<2>(rooms[0]), 2u) << "ben is still a member, offline";
    a.close();
    // Nobody is online, but ann and ben still belong to the room (they did not leave): it stays,
    // listed with its two members, and a login puts each back in it (docs/protocol.md, "Rejoin").
    chat_client c(srv->port());
    c.login("cat");
    EXPECT_TRUE(eventually([&] {
        auto l = c.list_online();
        return l.size() == 1 && std::get<0>(l[0]) == room && std::get<1>(l[0]) == 2u && std::get<2>(l[0]) == 0u;
    }));
    chat_client a2(srv->port());
    a2.login("ann");
    auto f = a2.expect(msg_type::join_room_res);
    auto* res = f.as<proto::join_room_res>();
    ASSERT_TRUE(res && res->room() && res->members());
    EXPECT_EQ(res->room()->id(), room);
    EXPECT_EQ(chat_client::member_states(f), (std::vector<std::string>{"ann", "ben-"}));
    chat_client b2(srv->port());
    b2.login("ben");
    b2.expect(msg_type::join_room_res);
    a2.expect_presence(room, "ben", true);
    b2.send_chat("back", 1);
    EXPECT_EQ(a2.expect_chat().text, "back");
    EXPECT_EQ(b2.expect_chat().text, "back");
    // Leaving on purpose ends the membership: the next login stays out, and the room is deleted
    // once nobody belongs to it any more.
    b2.send_leave();
    b2.expect(msg_type::leave_room_res);
    a2.expect_member_event(msg_type::member_left, room, "ben");
    b2.close();
    chat_client b3(srv->port());
    b3.login("ben");
    b3.expect_nothing();
    a2.send_leave();
    a2.expect(msg_type::leave_room_res);
    EXPECT_TRUE(b3.list().empty()) << "nobody belongs to the room: deleted";
    stop_cleanly(*srv);
}

TEST_P(flows, list_rooms_gathers_every_shard) {
    auto srv = start(3);
    // Enough creators that the kernel spreads them over several shards (room id & 0xff = owner).
    std::vector<std::unique_ptr<chat_client>> cs;
    std::set<std::uint64_t> ids;
    std::set<unsigned> owners;
    for (int i = 0; i < 12; ++i) {
        cs.push_back(std::make_unique<chat_client>(srv->port()));
        cs.back()->login("u" + std::to_string(i));
        auto id = cs.back()->create("room" + std::to_string(i));
        ids.insert(id);
        owners.insert(static_cast<unsigned>(id & 0xff));
    }
    EXPECT_EQ(ids.size(), 12u) << "room ids are unique across shards";
    EXPECT_GE(owners.size(), 2u) << "12 connections all landed on one of 3 shards";
    auto rooms = cs[0]->list();
    ASSERT_EQ(rooms.size(), 12u);
    std::set<std::uint64_t> listed;
    for (auto& [id, name, n] : rooms) {
        listed.insert(id);
        EXPECT_EQ(n, 1u);
    }
    EXPECT_EQ(listed, ids);
    EXPECT_TRUE(std::is_sorted(rooms.begin(), rooms.end())) << "sorted by id";
    stop_cleanly(*srv);
}

STRIX_CHAT_BACKENDS(flows);

}  // namespace
