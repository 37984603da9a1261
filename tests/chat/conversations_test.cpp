// Conversations, protocol version 2 (docs/protocol.md, "Conversations"): a session is in many
// rooms at once, chat_req and leave_room_req name their room, a login lists every room of the
// account and puts the session back in each, resume works per room after that login, and the
// rooms-per-account limit refuses before anything is stored. Version 1 sessions keep one room.
#include "chat_fixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace {

using namespace strix;
using namespace strix::test;
using proto::error_code;
using proto::msg_type;

class conversations : public chat_test {
protected:
    // The room ids of the next n join_room_res (a login's rejoins answer in any order).
    static std::set<std::uint64_t> joined_rooms(chat_client& c, std::size_t n) {
        std::set<std::uint64_t> ids;
        for (std::size_t i = 0; i < n; ++i) {
            auto f = c.expect(msg_type::join_room_res);
            auto* r = f.as<proto::join_room_res>();
            if (r && r->room()) ids.insert(r->room()->id());
        }
        return ids;
    }
    // Reads c's frames until it has seen n chat messages (notices in between are skipped).
    static void see_chats(chat_client& c, int n) {
        while (n > 0) {
            auto f = c.recv();
            ASSERT_TRUE(f) << n << " chat messages never came";
            if (f->type == msg_type::chat_msg) --n;
        }
    }
};

TEST_P(conversations, a_session_is_in_several_rooms_and_each_request_names_its_room) {
    auto srv = start();
    chat_client a(srv->port()), b(srv->port()), c(srv->port());
    EXPECT_TRUE(a.login_v2("ann").empty());
    b.login_v2("ben");
    c.login_v2("cat");
    const auto red = a.create("red");
    const auto blue = a.create("blue");
    ASSERT_NE(red, blue);
    b.join(red);
    a.expect_member_event(msg_type::member_joined, red, "ben");
    c.join(blue);
    a.expect_member_event(msg_type::member_joined, blue, "cat");

    // Each message reaches its own room's members only.
    a.send_chat_in(red, "to red", 1);
    for (chat_client* x : {&a, &b}) {
        auto m = x->expect_chat();
        EXPECT_EQ(m.room_id, red);
        EXPECT_EQ(m.text, "to red");
    }
    a.send_chat_in(blue, "to blue", 2);
    for (chat_client* x : {&a, &c}) {
        auto m = x->expect_chat();
        EXPECT_EQ(m.room_id, blue);
        EXPECT_EQ(m.text, "to blue");
    }
    b.expect_nothing();

    // In two rooms, a request without room_id is ambiguous; one for a room it is not in is refused.
    a.send_chat("which room?");
    a.expect_error(msg_type::chat_req, error_code::not_in_room);
    b.send_chat_in(blue, "not mine");
    b.expect_error(msg_type::chat_req, error_code::not_in_room);
    a.send_leave();
    a.expect_error(msg_type::leave_room_req, error_code::not_in_room);
    a.send_join(red);
    a.expect_error(msg_type::join_room_req, error_code::already_in_room);
    c.expect_nothing();

    // Leaving one room keeps the other; then room_id 0 means the one left.
    a.send_leave_room(red);
    auto left = a.expect(msg_type::leave_room_res);
    EXPECT_EQ(left.as<proto::leave_room_res>()->room_id(), red);
    b.expect_member_event(msg_type::member_left, red, "ann");
    a.send_chat("only blue now", 3);
    EXPECT_EQ(c.expect_chat().text, "only blue now");
    EXPECT_EQ(a.expect_chat().room_id, blue);
}

TEST_P(conversations, a_login_lists_every_room_and_puts_the_session_back_in_each) {
    auto srv = start();
    std::uint64_t r1, r2, r3;
    {
        chat_client a(srv->port());
        a.login_v2("ann");
        r1 = a.create("one");
        r2 = a.create("two");
        r3 = a.create("three");
        a.send_leave_room(r2);
        a.expect(msg_type::leave_room_res);
    }
    chat_client b(srv->port());
    b.login_v2("ben");
    b.join(r3);
    // Ann's first session may still be closing when ben joins: its "ann is offline" can reach ben
    // after his join, before or after his own message, before ann's "online" below. The next
    // frame of type `want` for ben, past that one notice (and no other frame).
    bool offline_seen = false;
    auto ben_next = [&](msg_type want) {
        for (;;) {
            auto f = b.recv();
            if (!f) {
                ADD_FAILURE() << "ben: nothing more";
                return std::optional<frame>{};
            }
            auto* p = f->type == msg_type::member_presence ? f->as<proto::member_presence>() : nullptr;
            if (p && !p->online() && !offline_seen) {
                offline_seen = true;
                continue;
            }
            EXPECT_EQ(f->type, want);
            return f;
        }
    };
    b.send_chat_in(r3, "while ann is away", 1);
    ben_next(msg_type::chat_msg);

    chat_client a(srv->port());
    const auto rooms = a.login_v2("ann");
    ASSERT_EQ(rooms.size(), 2u);
    EXPECT_EQ(rooms[0].first, r1);  // oldest join first
    EXPECT_EQ(rooms[1].first, r3);
    EXPECT_EQ(rooms[0].second, 0u);  // nothing marked read
    EXPECT_EQ(joined_rooms(a, 2), (std::set<std::uint64_t>{r1, r3}));
    auto online = ben_next(msg_type::member_presence);  // ann is back
    ASSERT_TRUE(online.has_value() && online->type == msg_type::member_presence);
    auto* p = online->as<proto::member_presence>();
    ASSERT_TRUE(p && p->player() && p->player()->name());
    EXPECT_EQ(p->room_id(), r3);
    EXPECT_EQ(p->player()->name()->str(), "ann");
    EXPECT_TRUE(p->online());
    a.send_chat_in(r3, "back", 2);
    auto back = ben_next(msg_type::chat_msg);
    ASSERT_TRUE(back.has_value() && back->type == msg_type::chat_msg);
    EXPECT_EQ(to_line(*back->as<proto::chat_msg>()).text, "back");
    EXPECT_EQ(a.expect_chat().room_id, r3);

    // A version 1 login of the same account is put back in the room it joined last, alone.
    chat_client old(srv->port());
    old.login("ann");
    auto j = old.expect(msg_type::join_room_res);
    EXPECT_EQ(j.as<proto::join_room_res>()->room()->id(), r3);
    old.expect_nothing();
}

TEST_P(conversations, resume_covers_several_rooms_after_one_login) {
    auto srv = start();
    chat_client b(srv->port());
    b.login_v2("ben");
    const auto x = b.create("x");
    const auto y = b.create("y");
    std::uint64_t seen_x = 0, seen_y = 0;
    {
        chat_client a(srv->port());
        a.login_v2("ann");
        a.join(x);
        a.join(y);
        b.send_chat_in(x, "x1", 1);
        seen_x = a.expect_chat().seq;
        b.send_chat_in(y, "y1", 2);
        seen_y = a.expect_chat().seq;
    }
    // Missed while away: two in x, one in y (ben sees all five of his, so they are numbered).
    b.send_chat_in(x, "x2", 3);
    b.send_chat_in(x, "x3", 4);
    b.send_chat_in(y, "y2", 5);
    see_chats(b, 5);

    chat_client a(srv->port());
    EXPECT_EQ(a.login_v2("ann").size(), 2u);
    std::uint64_t to_x = 0, to_y = 0;
    for (int i = 0; i < 2; ++i) {
        auto f = a.expect(msg_type::join_room_res);
        auto* r = f.as<proto::join_room_res>();
        ASSERT_TRUE(r && r->room());
        (r->room()->id() == x ? to_x : to_y) = r->last_seq();
    }
    EXPECT_EQ(to_x, seen_x + 2);
    EXPECT_EQ(to_y, seen_y + 1);
    for (auto [room, from, want] : {std::tuple{x, seen_x, std::vector<std::string>{"x2", "x3"}},
                                    std::tuple{y, seen_y, std::vector<std::string>{"y2"}}}) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createresume_req(fbb, room, from));
        a.send(fbb, msg_type::resume_req);
        auto f = a.expect(msg_type::resume_res);
        auto* r = f.as<proto::resume_res>();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->room_id(), room);
        EXPECT_EQ(r->status(), proto::resume_status::complete);
        std::vector<std::string> texts;
        if (r->messages())
            for (auto* m : *r->messages()) texts.push_back(m->text()->str());
        EXPECT_EQ(texts, want);
    }
}

TEST_P(conversations, the_room_limit_refuses_before_anything_is_stored) {
    auto srv = start(2, {"--max-rooms-per-account", "2"});
    chat_client b(srv->port());
    b.login_v2("ben");
    const auto bens = b.create("bens");
    chat_client a(srv->port());
    a.login_v2("ann");
    const auto one = a.create("one");
    a.create("two");
    a.send_create("three");
    a.expect_error(msg_type::create_room_req, error_code::room_limit);
    a.send_join(bens);
    a.expect_error(msg_type::join_room_req, error_code::room_limit);
    b.expect_nothing();
    // Nothing was made or stored: three rooms exist, ann belongs to two.
    EXPECT_EQ(a.list().size(), 3u);
    a.send_leave_room(one);
    a.expect(msg_type::leave_room_res);
    a.join(bens);
    a.close();
    chat_client again(srv->port());
    EXPECT_EQ(again.login_v2("ann").size(), 2u);
}

TEST_P(conversations, version_1_sessions_keep_one_room_and_unknown_versions_are_refused) {
    auto srv = start();
    chat_client a(srv->port());
    a.login("ann");
    a.create("mine");
    a.send_create("second");
    a.expect_error(msg_type::create_room_req, error_code::already_in_room);
    a.send_chat("no room_id needed", 1);
    EXPECT_EQ(a.expect_chat().text, "no room_id needed");

    chat_client z(srv->port());
    z.send_login_version("zed", "pw", 3);
    z.expect_error(msg_type::login_req, error_code::bad_request);
    EXPECT_NE(z.login("zed"), 0u) << "the session may log in after the refusal";
}

namespace {
void send_read(chat_client& c, std::uint64_t room, std::uint64_t seq) {
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(proto::Createread_req(fbb, room, seq));
    c.send(fbb, msg_type::read_req);
}
void send_typing(chat_client& c, std::uint64_t room) {
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(proto::Createtyping_req(fbb, room));
    c.send(fbb, msg_type::typing_req);
}
std::uint64_t read_seq(chat_client& c, msg_type t, std::uint64_t room) {
    auto f = c.expect(t);
    if (t == msg_type::read_res) {
        auto* r = f.as<proto::read_res>();
        EXPECT_TRUE(r && r->room_id() == room);
        return r ? r->seq() : 0;
    }
    auto* r = f.as<proto::read_marker>();
    EXPECT_TRUE(r && r->room_id() == room);
    return r ? r->seq() : 0;
}
}  // namespace

TEST_P(conversations, read_markers_rise_sync_to_the_other_sessions_and_come_back_at_login) {
    auto srv = start();
    chat_client b(srv->port()), a1(srv->port());
    b.login_v2("ben");
    const auto room = b.create("r");
    a1.login_v2("ann");
    a1.join(room);
    b.expect_member_event(msg_type::member_joined, room, "ann");
    for (int i = 1; i <= 3; ++i) b.send_chat_in(room, "m" + std::to_string(i), static_cast<std::uint64_t>(i));
    for (int i = 0; i < 3; ++i) {
        b.expect_chat();
        a1.expect_chat();
    }
    chat_client a2(srv->port());
    ASSERT_EQ(a2.login_v2("ann").size(), 1u);
    a2.expect(msg_type::join_room_res);

    send_read(a1, room, 2);
    EXPECT_EQ(read_seq(a1, msg_type::read_res, room), 2u);
    EXPECT_EQ(read_seq(a2, msg_type::read_marker, room), 2u);  // the account's other session
    send_read(a1, room, 1);  // never falls: the answer says where it is, nobody else hears
    EXPECT_EQ(read_seq(a1, msg_type::read_res, room), 2u);
    send_read(a2, room, 99);  // past the room's last message: taken as the last
    EXPECT_EQ(read_seq(a2, msg_type::read_res, room), 3u);
    EXPECT_EQ(read_seq(a1, msg_type::read_marker, room), 3u);
    b.expect_nothing();
    send_read(b, room + 1000, 1);
    b.expect_error(msg_type::read_req, error_code::not_in_room);

    // Stored: a later login lists the marker. A new member's starts at its join point.
    chat_client c(srv->port());
    c.login_v2("cat");
    c.join(room);
    a1.close();
    a2.close();
    c.close();
    b.sync();
    chat_client a3(srv->port()), c2(srv->port());
    const auto ann_rooms = a3.login_v2("ann");
    ASSERT_EQ(ann_rooms.size(), 1u);
    EXPECT_EQ(ann_rooms[0].second, 3u);
    const auto cat_rooms = c2.login_v2("cat");
    ASSERT_EQ(cat_rooms.size(), 1u);
    EXPECT_EQ(cat_rooms[0].second, 3u) << "nothing before the join point is unread";
}

TEST_P(conversations, typing_reaches_the_other_sessions_is_never_stored_and_is_rate_limited) {
    auto srv = start();
    chat_client a(srv->port()), b(srv->port());
    a.login_v2("ann");
    b.login_v2("ben");
    const auto room = a.create("t");
    b.join(room);
    a.expect_member_event(msg_type::member_joined, room, "ben");
    send_typing(a, room);
    auto f = b.expect(msg_type::typing);
    auto* t = f.as<proto::typing>();
    ASSERT_TRUE(t && t->player());
    EXPECT_EQ(t->room_id(), room);
    EXPECT_EQ(t->player()->name()->str(), "ann");
    a.expect_nothing();  // the typer hears nothing back
    // Five at once pass (the burst: one was spent above only by ann), the sixth is refused; none
    // of it is history.
    for (int i = 0; i < 6; ++i) send_typing(b, room);
    b.expect_error(msg_type::typing_req, error_code::rate_limited);
    for (int i = 0; i < 5; ++i) a.expect(msg_type::typing);
    send_typing(a, room + 1000);
    a.expect_error(msg_type::typing_req, error_code::not_in_room);
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(proto::Createhistory_req(fbb, room, 0, 0, 50));
    a.send(fbb, msg_type::history_req);
    auto h = a.expect(msg_type::history_res);
    auto* hr = h.as<proto::history_res>();
    ASSERT_TRUE(hr);
    EXPECT_TRUE(!hr->messages() || hr->messages()->size() == 0);
}

STRIX_CHAT_BACKENDS(conversations);

}  // namespace
