// Conversations (protocol version 2) across two cluster nodes: a session on node B is in two
// rooms made on node A, chats in each by room id, and its next login, on node A, lists both
// rooms with the read marker it set on node B and puts it back in each; messages cross nodes in
// each room's one order.
#include "cluster_nodes.hpp"

#include <set>

namespace {

using namespace strix;
using namespace strix::test;
using proto::msg_type;

// The next chat_msg (member notices and presence in between are skipped).
chat_line next_chat(chat_client& c) {
    for (;;) {
        auto f = c.recv(std::chrono::seconds(10));
        if (!f) {
            ADD_FAILURE() << "no chat_msg";
            return {};
        }
        if (f->type == msg_type::chat_msg) return to_line(*f->as<proto::chat_msg>());
    }
}

TEST(cluster_conversations, ASessionInTwoRoomsMadeOnTheOtherNodeAndItsLoginThere) {
    redis_server redis;
    const std::string db = shared_pg_server().create_database();
    temp_dir dir;
    server_process a(db, dir.path() + "/a.log", 2, node_args(redis.port(), 1));
    ASSERT_TRUE(a.ready()) << a.log();
    server_process b(db, dir.path() + "/b.log", 2, node_args(redis.port(), 2));
    ASSERT_TRUE(b.ready()) << b.log();

    chat_client ann(a.port());
    ann.login_v2("ann");
    const auto red = ann.create("red");
    const auto blue = ann.create("blue");
    {
        chat_client ben(b.port());
        ben.login_v2("ben");
        ben.join(red);
        ben.join(blue);
        ben.send_chat_in(red, "ben in red", 1);
        ben.send_chat_in(blue, "ben in blue", 2);
        // Each room has its own order: the two may arrive either way round.
        for (chat_client* c : {&ann, &ben}) {
            std::set<std::pair<std::uint64_t, std::string>> got;
            for (int i = 0; i < 2; ++i) {
                const chat_line l = next_chat(*c);
                got.emplace(l.room_id, l.text);
            }
            EXPECT_EQ(got,
                      (std::set<std::pair<std::uint64_t, std::string>>{{red, "ben in red"}, {blue, "ben in blue"}}));
        }
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createread_req(fbb, red, 1));
        ben.send(fbb, msg_type::read_req);
        for (;;) {
            auto f = ben.recv(std::chrono::seconds(10));
            ASSERT_TRUE(f) << "no read_res";
            if (f->type != msg_type::read_res) continue;
            EXPECT_EQ(f->as<proto::read_res>()->seq(), 1u);
            break;
        }
    }
    // ben's next login is on node A: both rooms, red read up to 1, blue up to its join point (0).
    chat_client ben(a.port());
    const auto rooms = ben.login_v2("ben");
    ASSERT_EQ(rooms.size(), 2u);
    EXPECT_EQ(rooms[0], (std::pair<std::uint64_t, std::uint64_t>{red, 1}));
    EXPECT_EQ(rooms[1], (std::pair<std::uint64_t, std::uint64_t>{blue, 0}));
    std::set<std::uint64_t> joined;
    for (int i = 0; i < 2; ++i) {
        auto f = ben.expect(msg_type::join_room_res);
        if (auto* r = f.as<proto::join_room_res>(); r && r->room()) joined.insert(r->room()->id());
    }
    EXPECT_EQ(joined, (std::set<std::uint64_t>{red, blue}));
    ben.send_chat_in(blue, "back on A", 3);
    const chat_line l = next_chat(ann);
    EXPECT_EQ(l.room_id, blue);
    EXPECT_EQ(l.text, "back on A");
    EXPECT_EQ(l.seq, 2u) << "blue's second message";
}

}  // namespace
