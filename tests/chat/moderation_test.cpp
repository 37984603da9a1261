// Roles and moderation (docs/protocol.md, "Roles and moderation"): the creator owns a room, the
// owner promotes admins, owner and admins kick, ban, mute and erase, every action reaches the
// members as a notice in the room's order, and each refusal comes as its error code.
#include "chat_fixture.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace {

using namespace strix;
using namespace strix::test;
using proto::error_code;
using proto::mod_action;
using proto::msg_type;

class moderation : public chat_test {
protected:
    // ann owns `room`; ben and cat are members (each has seen the others arrive).
    struct trio {
        chat_client a, b, c;
        std::uint64_t room = 0;
        explicit trio(std::uint16_t port) : a(port), b(port), c(port) {}
    };
    static void fill(trio& t) {
        t.a.login_v2("ann");
        t.b.login_v2("ben");
        t.c.login_v2("cat");
        t.room = t.a.create("mods");
        t.b.join(t.room);
        t.a.expect_member_event(msg_type::member_joined, t.room, "ben");
        t.c.join(t.room);
        t.a.expect_member_event(msg_type::member_joined, t.room, "cat");
        t.b.expect_member_event(msg_type::member_joined, t.room, "cat");
    }
    // history_req of the newest 50 in `room`: (seq, kind, text) of each.
    static std::vector<std::tuple<std::uint64_t, proto::msg_kind, std::string>> history(chat_client& c,
                                                                                        std::uint64_t room) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createhistory_req(fbb, room, 0, 0, 50));
        c.send(fbb, msg_type::history_req);
        auto f = c.expect(msg_type::history_res);
        std::vector<std::tuple<std::uint64_t, proto::msg_kind, std::string>> out;
        auto* h = f.as<proto::history_res>();
        if (h && h->messages())
            for (auto* m : *h->messages()) out.emplace_back(m->seq(), m->kind(), m->text() ? m->text()->str() : "");
        return out;
    }
};

TEST_P(moderation, the_owner_promotes_and_an_admin_kicks_while_a_member_may_not) {
    auto srv = start();
    trio t(srv->port());
    fill(t);
    // The creator is the owner; members are members.
    t.a.send_join(t.room);
    t.a.expect_error(msg_type::join_room_req, error_code::already_in_room);
    t.c.send_moderate(t.room, mod_action::kick, t.b.me);
    t.c.expect_error(msg_type::moderate_req, error_code::forbidden);
    t.b.send_moderate(t.room, mod_action::promote, t.c.me);
    t.b.expect_error(msg_type::moderate_req, error_code::forbidden);

    t.a.send_moderate(t.room, mod_action::promote, t.b.me);
    for (chat_client* x : {&t.a, &t.b, &t.c}) {
        auto n = x->expect_notice(t.room, mod_action::promote);
        EXPECT_EQ(n.target, t.b.me);
        EXPECT_EQ(n.sender_id, t.a.me);
        EXPECT_EQ(n.role, proto::member_role::admin);
    }
    // An admin acts on members, not on the owner.
    t.b.send_moderate(t.room, mod_action::kick, t.a.me);
    t.b.expect_error(msg_type::moderate_req, error_code::forbidden);
    t.b.send_moderate(t.room, mod_action::kick, t.c.me);
    for (chat_client* x : {&t.a, &t.b, &t.c}) EXPECT_EQ(x->expect_notice(t.room, mod_action::kick).target, t.c.me);
    // The kicked session is out: leave_room_res after the notice, and its messages are refused.
    auto left = t.c.expect(msg_type::leave_room_res);
    EXPECT_EQ(left.as<proto::leave_room_res>()->room_id(), t.room);
    t.c.send_chat_in(t.room, "still here?");
    t.c.expect_error(msg_type::chat_req, error_code::not_in_room);
    t.b.send_moderate(t.room, mod_action::kick, t.c.me);
    t.b.expect_error(msg_type::moderate_req, error_code::not_in_room);
    // A kick is not a ban: it may join again, and its join shows it without a role.
    auto names = t.c.join(t.room);
    EXPECT_EQ(names.size(), 3u);
    t.a.expect_member_event(msg_type::member_joined, t.room, "cat");
    t.b.expect_member_event(msg_type::member_joined, t.room, "cat");
}

TEST_P(moderation, a_ban_keeps_the_account_out_of_joins_and_logins_until_lifted_or_expired) {
    auto srv = start();
    trio t(srv->port());
    fill(t);
    t.a.send_moderate(t.room, mod_action::ban, t.c.me);
    for (chat_client* x : {&t.a, &t.b, &t.c}) {
        auto n = x->expect_notice(t.room, mod_action::ban);
        EXPECT_EQ(n.target, t.c.me);
        EXPECT_EQ(n.until_us, 0u);  // no end
    }
    t.c.expect(msg_type::leave_room_res);
    t.c.send_join(t.room);
    t.c.expect_error(msg_type::join_room_req, error_code::banned);
    // Nor may it resume the room's messages.
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(proto::Createresume_req(fbb, t.room, 0));
    t.c.send(fbb, msg_type::resume_req);
    t.c.expect_error(msg_type::resume_req, error_code::not_in_room);
    // A new session of the account is not put back in the room.
    chat_client c2(srv->port());
    EXPECT_TRUE(c2.login_v2("cat").empty());
    c2.send_join(t.room);
    c2.expect_error(msg_type::join_room_req, error_code::banned);

    t.a.send_moderate(t.room, mod_action::unban, t.c.me);
    t.a.expect_notice(t.room, mod_action::unban);
    t.b.expect_notice(t.room, mod_action::unban);
    t.c.join(t.room);
    t.a.expect_member_event(msg_type::member_joined, t.room, "cat");
    t.b.expect_member_event(msg_type::member_joined, t.room, "cat");

    // A ban with an end: refused until it passes.
    t.a.send_moderate(t.room, mod_action::ban, t.c.me, 0, 1);
    auto n = t.a.expect_notice(t.room, mod_action::ban);
    EXPECT_GT(n.until_us, 0u);
    t.b.expect_notice(t.room, mod_action::ban);
    t.c.expect_notice(t.room, mod_action::ban);
    t.c.expect(msg_type::leave_room_res);
    t.c.send_join(t.room);
    t.c.expect_error(msg_type::join_room_req, error_code::banned);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    t.c.join(t.room);
}

TEST_P(moderation, a_mute_refuses_messages_for_its_time_and_arguments_are_checked) {
    auto srv = start();
    trio t(srv->port());
    fill(t);
    t.a.send_moderate(t.room, mod_action::mute, t.b.me);  // a mute needs seconds
    t.a.expect_error(msg_type::moderate_req, error_code::bad_request);
    t.a.send_moderate(t.room, mod_action::mute, t.b.me, 0, 400 * 24 * 3600);
    t.a.expect_error(msg_type::moderate_req, error_code::bad_request);
    t.a.send_moderate(t.room, mod_action::kick, t.a.me);
    t.a.expect_error(msg_type::moderate_req, error_code::bad_request);
    t.a.send_moderate(t.room, mod_action::erase, 0, 1);  // no message 1 yet
    t.a.expect_error(msg_type::moderate_req, error_code::bad_request);
    t.a.send_moderate(t.room + 1000, mod_action::kick, t.b.me);
    t.a.expect_error(msg_type::moderate_req, error_code::not_in_room);

    t.a.send_moderate(t.room, mod_action::mute, t.b.me, 0, 60);
    for (chat_client* x : {&t.a, &t.b, &t.c}) EXPECT_GT(x->expect_notice(t.room, mod_action::mute).until_us, 0u);
    t.b.send_chat_in(t.room, "hello?");
    t.b.expect_error(msg_type::chat_req, error_code::muted);
    t.c.send_chat_in(t.room, "cat may", 1);
    EXPECT_EQ(t.a.expect_chat().text, "cat may");
    EXPECT_EQ(t.b.expect_chat().text, "cat may");
    EXPECT_EQ(t.c.expect_chat().text, "cat may");
    t.a.send_moderate(t.room, mod_action::unmute, t.b.me);
    for (chat_client* x : {&t.a, &t.b, &t.c}) x->expect_notice(t.room, mod_action::unmute);
    t.b.send_chat_in(t.room, "ben again", 2);
    for (chat_client* x : {&t.a, &t.b, &t.c}) EXPECT_EQ(x->expect_chat().text, "ben again");
}

TEST_P(moderation, an_erased_message_is_a_tombstone_in_history_and_ownership_moves_by_transfer) {
    auto srv = start();
    trio t(srv->port());
    fill(t);
    t.c.send_chat_in(t.room, "regrettable", 1);
    std::uint64_t seq = 0;
    for (chat_client* x : {&t.a, &t.b, &t.c}) seq = x->expect_chat().seq;
    t.a.send_moderate(t.room, mod_action::erase, 0, seq);
    for (chat_client* x : {&t.a, &t.b, &t.c}) {
        auto n = x->expect_notice(t.room, mod_action::erase);
        EXPECT_EQ(n.target_seq, seq);
        EXPECT_EQ(n.target, 0u);
    }
    // History has the tombstone in its place and the notices as notices.
    auto h = history(t.b, t.room);
    ASSERT_EQ(h.size(), 2u);
    EXPECT_EQ(std::get<0>(h[0]), seq);
    EXPECT_EQ(std::get<1>(h[0]), proto::msg_kind::deleted);
    EXPECT_EQ(std::get<2>(h[0]), "");
    EXPECT_EQ(std::get<1>(h[1]), proto::msg_kind::notice);

    // The owner hands over by transfer (becoming an admin), and an owner who leaves hands the
    // room to its oldest admin.
    t.a.send_moderate(t.room, mod_action::transfer, t.b.me);
    for (chat_client* x : {&t.a, &t.b, &t.c}) {
        auto n = x->expect_notice(t.room, mod_action::transfer);
        EXPECT_EQ(n.target, t.b.me);
        EXPECT_EQ(n.role, proto::member_role::owner);
    }
    // ann is an admin now: she may not act on ben (owner), who may demote and promote.
    t.a.send_moderate(t.room, mod_action::kick, t.b.me);
    t.a.expect_error(msg_type::moderate_req, error_code::forbidden);
    t.b.send_moderate(t.room, mod_action::demote, t.a.me);
    for (chat_client* x : {&t.a, &t.b, &t.c}) EXPECT_EQ(x->expect_notice(t.room, mod_action::demote).target, t.a.me);
    t.b.send_moderate(t.room, mod_action::promote, t.c.me);
    for (chat_client* x : {&t.a, &t.b, &t.c}) x->expect_notice(t.room, mod_action::promote);
    t.b.send_leave_room(t.room);
    t.b.expect(msg_type::leave_room_res);
    for (chat_client* x : {&t.a, &t.c}) {
        // Its leave, then the transfer from it to cat (the oldest admin; ann joined earlier).
        x->expect_member_event(msg_type::member_left, t.room, "ben");
        auto n = x->expect_notice(t.room, mod_action::transfer);
        EXPECT_EQ(n.target, t.c.me);
        EXPECT_EQ(n.sender_id, t.b.me);
    }
    // The roles are stored: a new session of ann's sees them in join_room_res.
    t.a.close();
    chat_client a2(srv->port());
    a2.login_v2("ann");
    auto j = a2.expect(msg_type::join_room_res);
    auto* r = j.as<proto::join_room_res>();
    ASSERT_TRUE(r && r->members());
    EXPECT_EQ(r->members()->size(), 2u);
    for (auto* m : *r->members())
        EXPECT_EQ(m->role(), m->name()->str() == "cat" ? proto::member_role::owner : proto::member_role::member)
            << m->name()->str();
}

STRIX_CHAT_BACKENDS(moderation);

}  // namespace
