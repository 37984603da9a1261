// One membership model (docs/protocol.md, "Membership"): an account is a member of a room from
// its join until it leaves; a disconnect only makes it offline (member_presence, not
// member_left); the room is deleted when its last member leaves, not when it is merely without
// sessions; join_room_res lists every member with its online state.
#include "chat_fixture.hpp"

#include <gtest/gtest.h>

namespace {

using namespace strix;
using namespace strix::test;
using proto::error_code;
using proto::msg_type;

class membership : public chat_test {};

// The membership scenario as a new user tried it: three members, one disconnects, one leaves, the
// last leaves. The room used to stay listed with 0 members and joinable while the page said it
// was deleted, and the disconnect was announced as a leave.
TEST_P(membership, a_disconnect_is_offline_and_the_room_goes_with_its_last_member) {
    auto srv = start();
    chat_client a(srv->port()), b(srv->port()), c(srv->port()), d(srv->port());
    a.login("ann");
    b.login("ben");
    c.login("cat");
    d.login("dan");
    const auto room = a.create("trio");
    b.join(room);
    a.expect_member_event(msg_type::member_joined, room, "ben");
    c.send_join(room);
    auto jc = c.expect(msg_type::join_room_res);
    EXPECT_EQ(chat_client::member_states(jc), (std::vector<std::string>{"ann", "ben", "cat"}));
    a.expect_member_event(msg_type::member_joined, room, "cat");
    b.expect_member_event(msg_type::member_joined, room, "cat");

    // ann disconnects: still a member, offline. The others hear of it as presence, not a leave.
    a.close();
    b.expect_presence(room, "ann", false);
    c.expect_presence(room, "ann", false);
    EXPECT_EQ(d.list_online(), (std::vector<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>>{{room, 3, 2}}));

    // ben leaves on purpose: member_left to those online.
    b.send_leave();
    b.expect(msg_type::leave_room_res);
    c.expect_member_event(msg_type::member_left, room, "ben");
    // cat leaves: ann still belongs, so the room stays, listed with its one (offline) member.
    c.send_leave();
    c.expect(msg_type::leave_room_res);
    EXPECT_EQ(d.list_online(), (std::vector<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>>{{room, 1, 0}}));
    b.expect_nothing();
    c.expect_nothing();

    // dan joins and sees ann, offline; ann's login brings her back as presence, not as a join.
    d.send_join(room);
    auto jd = d.expect(msg_type::join_room_res);
    EXPECT_EQ(chat_client::member_states(jd), (std::vector<std::string>{"ann-", "dan"}));
    chat_client a2(srv->port());
    a2.login("ann");
    auto ja = a2.expect(msg_type::join_room_res);
    EXPECT_EQ(chat_client::member_states(ja), (std::vector<std::string>{"ann", "dan"}));
    d.expect_presence(room, "ann", true);

    // dan leaves, then ann, the last member: the room is deleted.
    d.send_leave();
    d.expect(msg_type::leave_room_res);
    a2.expect_member_event(msg_type::member_left, room, "dan");
    a2.send_leave();
    a2.expect(msg_type::leave_room_res);
    EXPECT_TRUE(d.list_online().empty()) << "the last member left: the room is gone";
    d.send_join(room);
    d.expect_error(msg_type::join_room_req, error_code::unknown_room);
    // A later login of a former member puts nobody anywhere.
    chat_client a3(srv->port());
    a3.login("ann");
    a3.expect_nothing();
    stop_cleanly(*srv);
}

// A second session of an online member changes nothing for the others; the member goes offline
// only when its last session goes.
TEST_P(membership, presence_follows_the_last_session_of_an_account) {
    auto srv = start();
    chat_client a(srv->port()), b(srv->port());
    a.login("ann");
    b.login("ben");
    const auto room = a.create("r");
    b.join(room);
    a.expect_member_event(msg_type::member_joined, room, "ben");
    chat_client b2(srv->port());
    b2.login("ben");  // ben belongs to the room: his login puts the new session in it
    auto j = b2.expect(msg_type::join_room_res);
    EXPECT_EQ(chat_client::member_states(j), (std::vector<std::string>{"ann", "ben"}));
    b.close();
    a.expect_nothing();  // ben is still online through b2
    b2.close();
    a.expect_presence(room, "ben", false);
    stop_cleanly(*srv);
}

STRIX_CHAT_BACKENDS(membership);

}  // namespace
