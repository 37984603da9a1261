// A session's requests take effect in the order sent, whatever shard owns the rooms involved:
// pipelined leave + join + chat across shards, a hundred join/leave pairs in one write, login
// followed at once by room requests; room lists (gathered from every shard) one at a time.
#include "chat_fixture.hpp"

#include <set>

using namespace strix::test;
using proto::error_code;
using proto::msg_type;

namespace {

class order : public chat_test {
protected:
    // Clients (logged in) and one room each, until two rooms have different owner shards.
    struct placed {
        std::unique_ptr<chat_client> c;
        std::uint64_t room = 0;
    };
    std::vector<placed> rooms_on_two_shards(std::uint16_t port) {
        std::vector<placed> out;
        std::set<unsigned> owners;
        for (int i = 0; i < 16 && owners.size() < 2; ++i) {
            placed p;
            p.c = std::make_unique<chat_client>(port);
            p.c->login("owner" + std::to_string(i));
            p.room = p.c->create("r" + std::to_string(i));
            if (!owners.insert(static_cast<unsigned>(p.room & 0xff)).second) continue;
            out.push_back(std::move(p));
        }
        return out;
    }
    std::vector<std::byte> frame_of(flatbuffers::FlatBufferBuilder& fbb, msg_type t) {
        auto b = strix::chat::finish_frame(fbb, t);
        return {b->data(), b->data() + b->size()};
    }
    std::vector<std::byte> join_frame(std::uint64_t room) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createjoin_room_req(fbb, room));
        return frame_of(fbb, msg_type::join_room_req);
    }
    std::vector<std::byte> leave_frame() {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createleave_room_req(fbb));
        return frame_of(fbb, msg_type::leave_room_req);
    }
    std::vector<std::byte> chat_frame(const std::string& text) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createchat_req(fbb, fbb.CreateString(text), 0, 1));
        return frame_of(fbb, msg_type::chat_req);
    }
    static void append(std::vector<std::byte>& a, const std::vector<std::byte>& b) {
        a.insert(a.end(), b.begin(), b.end());
    }
};

TEST_P(order, leave_join_and_chat_in_one_write_take_effect_in_order_across_shards) {
    auto srv = start(2);
    auto two = rooms_on_two_shards(srv->port());
    ASSERT_EQ(two.size(), 2u) << "no two rooms on different shards; the test proves nothing";
    const std::uint64_t a = two[0].room, b = two[1].room;
    chat_client u(srv->port());
    u.login("mover");
    u.join(a);
    two[0].c->expect_member_event(msg_type::member_joined, a, "mover");
    // One write: leave A, join B, say something in B.
    std::vector<std::byte> burst;
    append(burst, leave_frame());
    append(burst, join_frame(b));
    append(burst, chat_frame("hello B"));
    ASSERT_TRUE(u.send_raw(burst));
    u.expect(msg_type::leave_room_res);
    auto j = u.expect(msg_type::join_room_res);
    auto* jr = j.as<proto::join_room_res>();
    ASSERT_NE(jr, nullptr);
    EXPECT_EQ(jr->room()->id(), b);
    auto m = u.expect(msg_type::chat_msg);
    auto* mm = m.as<proto::chat_msg>();
    ASSERT_NE(mm, nullptr);
    EXPECT_EQ(mm->room_id(), b);
    EXPECT_EQ(mm->text()->str(), "hello B");
    // B's owner sees the newcomer and the message; A's owner saw the leave.
    two[1].c->expect_member_event(msg_type::member_joined, b, "mover");
    EXPECT_EQ(two[1].c->expect(msg_type::chat_msg).as<proto::chat_msg>()->text()->str(), "hello B");
    two[0].c->expect_member_event(msg_type::member_left, a, "mover");
}

TEST_P(order, a_hundred_join_leave_pairs_in_one_write_each_get_their_reply_in_order) {
    // Room changes unthrottled: this is about order, not about the room-change rate limit.
    auto srv = start(2, {"--chat-rate", "100000", "--chat-burst", "100000", "--room-rate", "100000", "--room-burst",
                         "100000"});
    auto two = rooms_on_two_shards(srv->port());
    ASSERT_EQ(two.size(), 2u);
    chat_client u(srv->port());
    u.login("churner");
    std::vector<std::byte> burst;
    for (int i = 0; i < 100; ++i) {
        append(burst, join_frame(two[static_cast<std::size_t>(i % 2)].room));
        append(burst, leave_frame());
    }
    ASSERT_TRUE(u.send_raw(burst));
    for (int i = 0; i < 100; ++i) {
        auto j = u.expect(msg_type::join_room_res);
        auto* jr = j.as<proto::join_room_res>();
        ASSERT_NE(jr, nullptr) << "pair " << i;
        EXPECT_EQ(jr->room()->id(), two[static_cast<std::size_t>(i % 2)].room) << "pair " << i;
        u.expect(msg_type::leave_room_res);
    }
    u.sync();
}

TEST_P(order, requests_sent_right_behind_a_login_wait_for_it) {
    auto srv = start(2);
    chat_client u(srv->port());
    std::vector<std::byte> burst;
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createlogin_req(fbb, fbb.CreateString("eager"), fbb.CreateString("pw")));
        append(burst, frame_of(fbb, msg_type::login_req));
    }
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createcreate_room_req(fbb, fbb.CreateString("first")));
        append(burst, frame_of(fbb, msg_type::create_room_req));
    }
    append(burst, chat_frame("in my own room"));
    ASSERT_TRUE(u.send_raw(burst));
    u.expect(msg_type::login_res);
    u.expect(msg_type::create_room_res);
    EXPECT_EQ(u.expect(msg_type::chat_msg).as<proto::chat_msg>()->text()->str(), "in my own room");
}

TEST_P(order, room_lists_are_answered_one_at_a_time_in_order) {
    auto srv = start(2);
    chat_client u(srv->port());
    u.login("lister");
    std::vector<std::byte> burst;
    for (int i = 0; i < 20; ++i) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createlist_rooms_req(fbb));
        append(burst, frame_of(fbb, msg_type::list_rooms_req));
    }
    append(burst, chat_frame("not in a room"));  // refused, but only after the twenty lists
    ASSERT_TRUE(u.send_raw(burst));
    auto replies = u.sync();
    ASSERT_EQ(replies.size(), 21u);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(replies[static_cast<std::size_t>(i)].type, msg_type::list_rooms_res) << i;
    EXPECT_EQ(replies[20].type, msg_type::error_res);
}

STRIX_CHAT_BACKENDS(order);

}  // namespace
