// Moderation, direct messages, blocks, typing and read markers across two cluster nodes: a kick
// or ban decided on node A takes the target's sessions on node B out of the room within a
// second, a banned account cannot join through B or be put back by a login, a direct message
// from A reaches its peer on B, a block set on B refuses the sender on A, typing and read
// markers reach the other node without being stored.
#include "cluster_nodes.hpp"

#include <chrono>
#include <thread>

namespace {

using namespace strix;
using namespace strix::test;
using namespace std::chrono_literals;
using proto::error_code;
using proto::mod_action;
using proto::msg_type;

// The next frame of type t (others in between skipped), within 10 s.
frame next_of(chat_client& c, msg_type t) {
    for (;;) {
        auto f = c.recv(10s);
        if (!f) {
            ADD_FAILURE() << "no " << proto::EnumNamemsg_type(t);
            return {};
        }
        if (f->type == t) return std::move(*f);
    }
}

// Reads notices (chat_msg of kind notice) until one of `action`; its action (none if it never came).
mod_action next_notice(chat_client& c, mod_action action) {
    for (;;) {
        auto f = next_of(c, msg_type::chat_msg);
        auto* m = f.as<proto::chat_msg>();
        if (!m || m->kind() != proto::msg_kind::notice || !m->notice()) {
            ADD_FAILURE() << "not a notice";
            return mod_action::none;
        }
        if (m->notice()->action() == action) return action;
    }
}

// The code of the next error_res (none if it never came).
error_code next_error(chat_client& c) {
    auto f = next_of(c, msg_type::error_res);
    auto* e = f.as<proto::error_res>();
    return e ? e->code() : error_code::none;
}

TEST(cluster_moderation, AKickAndABanOnOneNodeTakeEffectOnTheOtherWithinASecond) {
    redis_server redis;
    two_nodes n(redis.port());
    ASSERT_TRUE(n.a.ready()) << n.a.log();
    ASSERT_TRUE(n.b.ready()) << n.b.log();
    chat_client ann(n.a.port()), ben(n.b.port()), cat(n.b.port());
    ann.login_v2("ann");
    ben.login_v2("ben");
    cat.login_v2("cat");
    const auto room = ann.create("mods");
    ben.join(room);
    cat.join(room);

    const auto t0 = std::chrono::steady_clock::now();
    ann.send_moderate(room, mod_action::kick, ben.me);
    EXPECT_EQ(next_notice(ben, mod_action::kick), mod_action::kick);
    next_of(ben, msg_type::leave_room_res);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << "the kick took a second or more to reach node B";
    ben.send_chat_in(room, "still in?");
    EXPECT_EQ(next_error(ben), error_code::not_in_room);

    ann.send_moderate(room, mod_action::ban, cat.me);
    EXPECT_EQ(next_notice(cat, mod_action::ban), mod_action::ban);
    next_of(cat, msg_type::leave_room_res);
    cat.send_join(room);
    EXPECT_EQ(next_error(cat), error_code::banned);
    // Not put back by a login on either node, and refused there too.
    chat_client cat_a(n.a.port());
    EXPECT_TRUE(cat_a.login_v2("cat").empty());
    cat_a.send_join(room);
    EXPECT_EQ(next_error(cat_a), error_code::banned);
    // The kicked one may come back through node B; a mute set on A holds it there.
    ben.join(room);
    ann.send_moderate(room, mod_action::mute, ben.me, 0, 60);
    EXPECT_EQ(next_notice(ben, mod_action::mute), mod_action::mute);
    ben.send_chat_in(room, "muted?");
    EXPECT_EQ(next_error(ben), error_code::muted);
}

TEST(cluster_moderation, DirectMessagesBlocksTypingAndReadMarkersCrossNodes) {
    redis_server redis;
    two_nodes n(redis.port());
    ASSERT_TRUE(n.a.ready()) << n.a.log();
    ASSERT_TRUE(n.b.ready()) << n.b.log();
    chat_client ann(n.a.port()), ben(n.b.port()), ben_a(n.a.port());
    ann.login_v2("ann");
    ben.login_v2("ben");
    ben_a.login_v2("ben");

    ann.send_direct("ben", "across", 1);
    auto j = next_of(ann, msg_type::join_room_res);
    const auto room = j.as<proto::join_room_res>()->room()->id();
    EXPECT_EQ(j.as<proto::join_room_res>()->room()->kind(), proto::room_kind::direct);
    // ben's sessions on both nodes are put in the direct room; the message reaches each, live or
    // (if it came first) in history.
    for (chat_client* c : {&ben, &ben_a}) {
        auto bj = next_of(*c, msg_type::join_room_res);
        auto* r = bj.as<proto::join_room_res>();
        ASSERT_TRUE(r && r->room());
        EXPECT_EQ(r->room()->id(), room);
        if (r->last_seq() == 0) {
            auto m = next_of(*c, msg_type::chat_msg);
            EXPECT_EQ(to_line(*m.as<proto::chat_msg>()).text, "across");
        }
    }

    // Typing on A reaches ben on B (never stored); a read marker set on B reaches ben on A.
    flatbuffers::FlatBufferBuilder t;
    t.Finish(proto::Createtyping_req(t, room));
    ann.send(t, msg_type::typing_req);
    auto typing = next_of(ben, msg_type::typing);
    EXPECT_EQ(typing.as<proto::typing>()->player()->name()->str(), "ann");
    flatbuffers::FlatBufferBuilder rd;
    rd.Finish(proto::Createread_req(rd, room, 1));
    ben.send(rd, msg_type::read_req);
    EXPECT_EQ(next_of(ben, msg_type::read_res).as<proto::read_res>()->seq(), 1u);
    auto marker = next_of(ben_a, msg_type::read_marker);
    EXPECT_EQ(marker.as<proto::read_marker>()->room_id(), room);
    EXPECT_EQ(marker.as<proto::read_marker>()->seq(), 1u);

    // ben blocks ann on B: ann's messages on A are refused, until he lifts it.
    ben.send_block("ann", true);
    EXPECT_TRUE(next_of(ben, msg_type::block_res).as<proto::block_res>()->blocked());
    const auto deadline = std::chrono::steady_clock::now() + 1s;
    error_code code = error_code::none;
    while (std::chrono::steady_clock::now() < deadline) {
        ann.send_chat_in(room, "hello?");
        for (;;) {
            auto f = ann.recv(10s);
            ASSERT_TRUE(f);
            if (f->type == msg_type::error_res) {
                code = f->as<proto::error_res>()->code();
                break;
            }
            if (f->type == msg_type::chat_msg) break;  // not yet on node A
        }
        if (code == error_code::blocked) break;
        std::this_thread::sleep_for(20ms);
    }
    EXPECT_EQ(code, error_code::blocked) << "node A did not hear of the block within a second";
}

}  // namespace
