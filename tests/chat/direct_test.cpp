// Direct messages and blocks (docs/protocol.md, "Direct messages"): the first direct_req makes
// the pair's room and puts both accounts' sessions in it, later ones (either way) find the same
// room, nobody else may join it or see it listed, an account that blocks another refuses its
// messages, and the refusals come as their error codes.
#include "chat_fixture.hpp"

#include <gtest/gtest.h>

#include <set>

namespace {

using namespace strix;
using namespace strix::test;
using proto::error_code;
using proto::msg_type;

class direct : public chat_test {
protected:
    // The next chat_msg; a member_presence before it is skipped (the peer coming online in the
    // room races the messages).
    static chat_line next_chat(chat_client& c) {
        for (;;) {
            auto f = c.recv();
            if (!f) {
                ADD_FAILURE() << "no chat_msg";
                return {};
            }
            if (f->type == msg_type::member_presence) continue;
            EXPECT_EQ(f->type, msg_type::chat_msg);
            auto* m = f->as<proto::chat_msg>();
            return m ? to_line(*m) : chat_line{};
        }
    }
    // The next frame must be the direct room's join_room_res listing exactly `a` and `b`;
    // returns (room id, last_seq).
    static std::pair<std::uint64_t, std::uint64_t> expect_direct_room(chat_client& c, const std::string& a,
                                                                      const std::string& b) {
        auto f = c.expect(msg_type::join_room_res);
        auto* r = f.as<proto::join_room_res>();
        if (!r || !r->room() || !r->members()) {
            ADD_FAILURE() << "no direct room";
            return {0, 0};
        }
        EXPECT_EQ(r->room()->kind(), proto::room_kind::direct);
        EXPECT_EQ(r->room()->name()->str(), "");
        std::set<std::string> names;
        for (auto* m : *r->members()) names.insert(m->name()->str());
        EXPECT_EQ(names, (std::set<std::string>{a, b}));
        return {r->room()->id(), r->last_seq()};
    }
    // The next frame other than member_presence must be error_res{request, code}.
    static void refused(chat_client& c, msg_type request, error_code code) {
        for (;;) {
            auto f = c.recv();
            ASSERT_TRUE(f) << "no error_res";
            if (f->type == msg_type::member_presence) continue;
            ASSERT_EQ(f->type, msg_type::error_res);
            EXPECT_EQ(f->as<proto::error_res>()->request(), request);
            EXPECT_EQ(f->as<proto::error_res>()->code(), code);
            return;
        }
    }
    // The peer learns of the room by its join_room_res; the first message either came before
    // that (last_seq says so: it is in history) or reaches it live after.
    static chat_line first_message(chat_client& c, std::uint64_t room, std::uint64_t last_seq) {
        if (last_seq == 0) return c.expect_chat();
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createhistory_req(fbb, room, 0, 0, 50));
        c.send(fbb, msg_type::history_req);
        auto f = c.expect(msg_type::history_res);
        auto* h = f.as<proto::history_res>();
        if (!h || !h->messages() || h->messages()->size() == 0) return {};
        return to_line(*h->messages()->Get(h->messages()->size() - 1));
    }
};

TEST_P(direct, the_first_message_makes_the_room_for_both_and_later_ones_find_it) {
    auto srv = start();
    chat_client a(srv->port()), b(srv->port()), c(srv->port());
    a.login_v2("ann");
    b.login_v2("ben");
    c.login_v2("cat");
    a.send_direct("ben", "hi ben", 1);
    auto [room, a_last] = expect_direct_room(a, "ann", "ben");
    EXPECT_EQ(a_last, 0u);
    auto mine = next_chat(a);
    EXPECT_EQ(mine.room_id, room);
    EXPECT_EQ(mine.text, "hi ben");
    EXPECT_EQ(mine.client_seq, 1u);
    auto [b_room, b_last] = expect_direct_room(b, "ann", "ben");
    EXPECT_EQ(b_room, room);
    auto got = first_message(b, room, b_last);
    EXPECT_EQ(got.text, "hi ben");
    EXPECT_EQ(got.sender, "ann");
    c.expect_nothing();

    // Again from ann (the session knows the room) and back from ben (the database finds it).
    a.send_direct("ben", "again", 2);
    EXPECT_EQ(next_chat(a).room_id, room);
    EXPECT_EQ(b.expect_chat().text, "again");
    b.send_direct("ann", "hello ann", 1);
    EXPECT_EQ(b.expect_chat().room_id, room);
    EXPECT_EQ(next_chat(a).text, "hello ann");
    b.send_chat_in(room, "as chat_req", 2);
    EXPECT_EQ(b.expect_chat().seq, 4u);
    EXPECT_EQ(next_chat(a).seq, 4u);

    // Nobody else sees or enters it.
    EXPECT_TRUE(c.list().empty());
    c.send_join(room);
    c.expect_error(msg_type::join_room_req, error_code::forbidden);
    a.expect_nothing();
    // A later login of ann's lists it with its rooms.
    chat_client a2(srv->port());
    auto rooms = a2.login_v2("ann");
    ASSERT_EQ(rooms.size(), 1u);
    EXPECT_EQ(rooms[0].first, room);
}

TEST_P(direct, an_offline_peer_finds_the_room_and_its_messages_at_its_next_login) {
    auto srv = start();
    {
        chat_client d(srv->port());
        d.login_v2("dan");
    }
    chat_client a(srv->port());
    a.login_v2("ann");
    a.send_direct("dan", "while you were out", 7);
    auto [room, last] = expect_direct_room(a, "ann", "dan");
    EXPECT_EQ(last, 0u);
    a.expect_chat();
    chat_client d(srv->port());
    auto rooms = d.login_v2("dan");
    ASSERT_EQ(rooms.size(), 1u);
    EXPECT_EQ(rooms[0].first, room);
    auto [d_room, d_last] = expect_direct_room(d, "ann", "dan");
    EXPECT_EQ(d_room, room);
    EXPECT_EQ(d_last, 1u);
    EXPECT_EQ(first_message(d, room, d_last).text, "while you were out");
}

TEST_P(direct, a_block_refuses_the_blocked_accounts_messages_until_lifted) {
    auto srv = start();
    chat_client a(srv->port()), b(srv->port());
    a.login_v2("ann");
    b.login_v2("ben");
    a.send_direct("ben", "first", 1);
    auto [room, last] = expect_direct_room(a, "ann", "ben");
    next_chat(a);
    auto [b_room, b_last] = expect_direct_room(b, "ann", "ben");
    first_message(b, room, b_last);

    b.send_block("ann", true);
    auto f = b.expect(msg_type::block_res);
    auto* br = f.as<proto::block_res>();
    ASSERT_TRUE(br && br->player());
    EXPECT_EQ(br->player()->name()->str(), "ann");
    EXPECT_TRUE(br->blocked());
    a.send_chat_in(room, "are you there?");
    refused(a, msg_type::chat_req, error_code::blocked);
    a.send_direct("ben", "hello?");
    refused(a, msg_type::chat_req, error_code::blocked);
    // A fresh session (no room known) meets the database's refusal.
    chat_client a2(srv->port());
    a2.login_v2("ann");
    a2.expect(msg_type::join_room_res);
    a2.send_direct("ben", "from elsewhere");
    a2.expect_error(msg_type::direct_req, error_code::blocked);
    b.expect_nothing();
    // ben may still write to ann: a block is one way.
    b.send_chat_in(room, "I can write", 2);
    EXPECT_EQ(b.expect_chat().text, "I can write");

    b.send_block("ann", false);
    EXPECT_FALSE(b.expect(msg_type::block_res).as<proto::block_res>()->blocked());
    a.send_chat_in(room, "thanks", 3);
    EXPECT_EQ(b.expect_chat().text, "thanks");
}

TEST_P(direct, refusals_unknown_self_version_1_and_the_room_limit) {
    auto srv = start(2, {"--max-rooms-per-account", "1"});
    chat_client a(srv->port()), b(srv->port()), old(srv->port());
    a.login_v2("ann");
    b.login_v2("ben");
    a.send_direct("nobody", "hi");
    a.expect_error(msg_type::direct_req, error_code::unknown_account);
    a.send_direct("ann", "me");
    a.expect_error(msg_type::direct_req, error_code::invalid_name);
    a.send_direct("bad name!", "hi");
    a.expect_error(msg_type::direct_req, error_code::invalid_name);
    a.send_direct("ben", "");
    a.expect_error(msg_type::direct_req, error_code::bad_request);
    a.send_block("nobody", true);
    a.expect_error(msg_type::block_req, error_code::unknown_account);
    old.login("cat");
    old.send_direct("ann", "v1");
    old.expect_error(msg_type::direct_req, error_code::bad_request);
    // ann belongs to one room, her limit: a direct room would be a second.
    a.create("mine");
    a.send_direct("ben", "hi");
    a.expect_error(msg_type::direct_req, error_code::room_limit);
    b.expect_nothing();
}

STRIX_CHAT_BACKENDS(direct);

}  // namespace
