// Large rooms (docs/protocol.md, "Large rooms"): past --member-list-limit members a room announces
// no joins, leaves or presence changes and join_room_res lists no members, only the counts, so
// that a join costs O(1) rather than a notice to every member; chat still reaches every member,
// once, in order. At or below the limit the notices and the list are as before.
#include "chat_fixture.hpp"
#include "metrics_scrape.hpp"

#include <gtest/gtest.h>

namespace {

using namespace strix;
using namespace strix::test;
using proto::msg_type;

class large_room : public chat_test {
protected:
    std::unique_ptr<server_process> start_limited(const char* limit) {
        mport_ = free_port();
        return start(2, {"--member-list-limit", limit, "--notice-delay-ms", "0", "--metrics-port",
                         std::to_string(mport_)});
    }
    long long suppressed() {
        return metric_value(http_get(mport_, "/metrics"), "strix_member_notices_suppressed_total");
    }
    std::uint16_t mport_ = 0;
};

// What a join_room_res says: its room's (members, online) and the members it lists.
struct join_answer {
    std::uint32_t members = 0, online = 0;
    std::vector<std::string> listed;
};

join_answer answer_of(const frame& f) {
    join_answer out;
    auto* r = f.as<proto::join_room_res>();
    if (r == nullptr || r->room() == nullptr) return out;
    out.members = r->room()->members();
    out.online = r->room()->online();
    out.listed = chat_client::member_states(f);
    return out;
}

TEST_P(large_room, past_the_limit_joins_are_not_announced_and_chat_reaches_everyone) {
    auto srv = start_limited("3");
    std::vector<chat_client> c;
    const char* names[] = {"ann", "ben", "cat", "dan", "eve"};
    for (const char* n : names) {
        c.emplace_back(srv->port());
        c.back().login(n);
    }
    const auto room = c[0].create("big");
    // At the limit: every join announced, the full list.
    c[1].join(room);
    c[0].expect_member_event(msg_type::member_joined, room, "ben");
    c[2].send_join(room);
    auto j2 = answer_of(c[2].expect(msg_type::join_room_res));
    EXPECT_EQ(j2.listed, (std::vector<std::string>{"ann", "ben", "cat"}));
    c[0].expect_member_event(msg_type::member_joined, room, "cat");
    c[1].expect_member_event(msg_type::member_joined, room, "cat");
    EXPECT_EQ(suppressed(), 0);
    // Past it: no list, the counts, and nothing to the others.
    for (std::size_t i = 3; i < 5; ++i) {
        c[i].send_join(room);
        auto j = answer_of(c[i].expect(msg_type::join_room_res));
        EXPECT_TRUE(j.listed.empty()) << names[i];
        EXPECT_EQ(j.members, i + 1);
        EXPECT_EQ(j.online, i + 1);
    }
    EXPECT_EQ(suppressed(), 2);
    // Chat: every member gets every message once, in order, and nothing else (no member_joined).
    for (const char* text : {"one", "two", "three"}) c[0].send_chat_in(room, text);
    for (auto& x : c) {
        for (const char* text : {"one", "two", "three"}) EXPECT_EQ(x.expect_chat().text, text);
        x.expect_nothing();
    }
    // Typing in a large room goes to nobody, counted with the notices.
    {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createtyping_req(fbb, room));
        c[1].send(fbb, msg_type::typing_req);
        ASSERT_TRUE(eventually([&] { return suppressed() == 3; })) << "the typing was dropped and counted";
        for (auto& x : c) x.expect_nothing();
    }
    // A disconnect and a login (which puts eve back) are presence changes: not announced either;
    // the new session's list is empty too.
    c[4].close();
    ASSERT_TRUE(eventually([&] { return suppressed() == 4; })) << "eve went offline, unannounced";
    chat_client eve(srv->port());
    eve.login("eve");
    auto je = answer_of(eve.expect(msg_type::join_room_res));
    EXPECT_TRUE(je.listed.empty());
    EXPECT_EQ(je.members, 5u);
    // The counter may not show eve's return yet when her reply arrives (it read 4 once, in make test).
    EXPECT_TRUE(eventually([&] { return suppressed() == 5; })) << "eve came back, unannounced: " << suppressed();
    EXPECT_EQ(c[3].list_online(), (std::vector<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>>{{room, 5, 5}}));
    // dan leaves: four members, still large; then cat: three, announced again.
    c[3].send_leave();
    c[3].expect(msg_type::leave_room_res);
    EXPECT_EQ(suppressed(), 6);
    c[2].send_leave();
    c[2].expect(msg_type::leave_room_res);
    c[0].expect_member_event(msg_type::member_left, room, "cat");
    c[1].expect_member_event(msg_type::member_left, room, "cat");
    eve.expect_member_event(msg_type::member_left, room, "cat");
    EXPECT_EQ(suppressed(), 6);
    EXPECT_EQ(c[0].list_online(), (std::vector<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>>{{room, 3, 3}}));
    c[0].expect_nothing();
    stop_cleanly(*srv);
}

// A limit of 0 makes every room large: even a room of two lists nobody.
TEST_P(large_room, a_limit_of_zero_lists_nobody) {
    auto srv = start_limited("0");
    chat_client a(srv->port()), b(srv->port());
    a.login("ann");
    b.login("ben");
    const auto room = a.create("r");
    b.send_join(room);
    auto j = answer_of(b.expect(msg_type::join_room_res));
    EXPECT_TRUE(j.listed.empty());
    EXPECT_EQ(j.members, 2u);
    EXPECT_EQ(j.online, 2u);
    a.expect_nothing();
    EXPECT_EQ(suppressed(), 1);
    stop_cleanly(*srv);
}

INSTANTIATE_TEST_SUITE_P(db, large_room, ::testing::Values(backend::sqlite), backend_name);

}  // namespace
