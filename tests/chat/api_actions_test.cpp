// The server API's calls that act (docs/api.md): POST /api/v1/rooms/{room_id}/messages stores a
// backend's message and delivers it to every member once as a chat_msg, and the same idempotency
// key sent again (pipelined while the first is in flight, later, and after a restart) answers the
// first seq and delivers nothing; a user's presence and the disconnect of its sessions; a room
// made by the application, and kick, ban and mute with the owner's authority.
#include "chat_fixture.hpp"

#include <support/http_client.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

namespace strix::test {
namespace {

using nlohmann::json;

const std::string key = "api-messages-test-key-0123456789";

class api_actions : public chat_test {
protected:
    std::unique_ptr<server_process> start_api() {
        const std::string keys = dir_.path() + "/keys";
        std::ofstream(keys) << key << " backend\n";
        api_port_ = free_port();
        return start(2, {"--api-port", std::to_string(api_port_), "--api-keys", keys});
    }
    static std::string post(std::uint64_t room, const json& body) {
        const std::string text = body.dump();
        return "POST /api/v1/rooms/" + std::to_string(room) +
               "/messages HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nAuthorization: Bearer " + key +
               "\r\nContent-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text;
    }
    // One request on a fresh connection: the status and the body parsed.
    std::pair<int, json> call(std::uint64_t room, const json& body) {
        http_client c(api_port_);
        c.send(post(room, body));
        const http_reply r = c.read();
        return {r.status, json::parse(r.body, nullptr, false)};
    }
    // The next chat_msg c receives: (seq, sender name, text); member notices before it are skipped.
    static std::tuple<std::uint64_t, std::string, std::string> next_message(chat_client& c) {
        for (;;) {
            auto f = c.recv();
            if (!f) {
                ADD_FAILURE() << "no chat_msg";
                return {};
            }
            if (f->type != proto::msg_type::chat_msg) continue;
            auto* m = f->as<proto::chat_msg>();
            return {m->seq(), m->sender() && m->sender()->name() ? m->sender()->name()->str() : "",
                    m->text() ? m->text()->str() : ""};
        }
    }
    // Any request with the key and a JSON body ("" for none): the status and the body parsed.
    std::pair<int, json> request(const std::string& method, const std::string& path, const std::string& body = "") {
        http_client c(api_port_);
        c.send(method + " " + path + " HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + key +
               "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
               body);
        const http_reply r = c.read();
        return {r.status, json::parse(r.body, nullptr, false)};
    }
    std::uint16_t api_port_ = 0;
};

TEST_P(api_actions, one_key_three_posts_one_restart_one_message) {
    auto s = start_api();
    std::uint64_t room = 0;
    {
        chat_client alice(s->port()), bob(s->port());
        ASSERT_NE(alice.login("alice"), 0u);
        ASSERT_NE(bob.login("bob"), 0u);
        room = alice.create("announcements");
        bob.join(room);
        // Two posts of one key on one connection, the second sent while the first is in flight.
        http_client c(api_port_);
        const json body{{"text", "maintenance at 22:00"}, {"idempotency_key", "notice-1"}};
        ASSERT_TRUE(c.send(post(room, body) + post(room, body)));
        const http_reply first = c.read(), second = c.read();
        ASSERT_EQ(first.status, 200) << first.body;
        ASSERT_EQ(second.status, 200) << second.body;
        const json a = json::parse(first.body), b = json::parse(second.body);
        EXPECT_FALSE(a["repeated"].get<bool>());
        EXPECT_TRUE(b["repeated"].get<bool>());
        EXPECT_EQ(a["seq"], b["seq"]);
        for (chat_client* m : {&alice, &bob}) {
            const auto [seq, sender, text] = next_message(*m);
            EXPECT_EQ(seq, a["seq"].get<std::uint64_t>());
            EXPECT_EQ(sender, "") << "the application's own message has no sender name";
            EXPECT_EQ(text, "maintenance at 22:00");
            m->sync();
            m->expect_nothing();
        }
        // Another key is another message; `from` names its sender.
        const auto [st, res] = call(room, {{"text", "hello from alice's backend"}, {"from", "alice"}});
        ASSERT_EQ(st, 200);
        EXPECT_EQ(res["seq"], a["seq"].get<std::uint64_t>() + 1);
        EXPECT_EQ(std::get<1>(next_message(bob)), "alice");
    }
    stop_cleanly(*s);

    // The third post comes after a restart: the key is found with the stored message.
    auto again = start_api();
    chat_client bob(again->port());
    ASSERT_NE(bob.login("bob"), 0u);
    const auto [st, res] = call(room, {{"text", "maintenance at 22:00"}, {"idempotency_key", "notice-1"}});
    ASSERT_EQ(st, 200);
    EXPECT_TRUE(res["repeated"].get<bool>());
    bob.sync();
    bob.expect_nothing(std::chrono::milliseconds(200));
    stop_cleanly(*again);
    auto store = open_store();
    std::size_t copies = 0;
    for (const auto& e : store->room_history(room, 100)) copies += e.text == "maintenance at 22:00";
    EXPECT_EQ(copies, 1u);
}

TEST_P(api_actions, bad_posts_are_refused_with_their_status) {
    auto s = start_api();
    chat_client alice(s->port());
    ASSERT_NE(alice.login("alice"), 0u);
    const std::uint64_t room = alice.create("r");
    EXPECT_EQ(call(room + 256, {{"text", "x"}}).first, 404);
    EXPECT_EQ(call(room, {{"text", ""}}).first, 400);
    EXPECT_EQ(call(room, {{"nothing", "x"}}).first, 400);
    EXPECT_EQ(call(room, {{"text", 5}}).first, 400);
    EXPECT_EQ(call(room, {{"text", "x"}, {"from", "bad name!"}}).first, 400);
    const auto [st, res] = call(room, {{"text", "x"}, {"from", "nobody"}});
    EXPECT_EQ(st, 404);
    EXPECT_EQ(res["error"], "unknown_account");
    alice.sync();
    alice.expect_nothing();
    stop_cleanly(*s);
}

TEST_P(api_actions, presence_and_disconnect_count_the_accounts_sessions) {
    auto s = start_api();
    chat_client a1(s->port()), a2(s->port()), b(s->port());
    ASSERT_NE(a1.login("ann"), 0u);
    ASSERT_NE(a2.login("ann"), 0u);
    ASSERT_NE(b.login("ben"), 0u);
    auto [st, body] = request("GET", "/api/v1/users/ann/presence");
    ASSERT_EQ(st, 200);
    EXPECT_EQ(body, (json{{"user", "ann"}, {"online", true}, {"sessions", 2}}));
    EXPECT_EQ(request("GET", "/api/v1/users/nobody/presence").first, 404);
    std::tie(st, body) = request("POST", "/api/v1/users/ann/disconnect");
    ASSERT_EQ(st, 200);
    EXPECT_EQ(body["closed"], 2);
    for (chat_client* c : {&a1, &a2}) {
        auto f = c->expect(proto::msg_type::error_res);
        EXPECT_EQ(f.as<proto::error_res>()->code(), proto::error_code::forbidden);
        EXPECT_FALSE(c->recv(std::chrono::seconds(3)).has_value()) << "closed";
    }
    std::tie(st, body) = request("GET", "/api/v1/users/ann/presence");
    EXPECT_EQ(body["sessions"], 0);
    EXPECT_EQ(request("GET", "/api/v1/users/ben/presence").second["sessions"], 1) << "ben stays";
    b.sync();
    stop_cleanly(*s);
}

// Each shard finds an account's sessions through an index (several on one shard are chained):
// six of ann's on two shards close newest, oldest and middle first, and each presence counts
// those left; then the disconnect closes the rest and only those.
TEST_P(api_actions, presence_follows_an_accounts_sessions_as_they_close_in_any_order) {
    auto s = start_api();
    std::vector<std::unique_ptr<chat_client>> ann;
    for (int i = 0; i < 6; ++i) {
        ann.push_back(std::make_unique<chat_client>(s->port()));
        ASSERT_NE(ann.back()->login("ann"), 0u);
    }
    chat_client ben(s->port());
    ASSERT_NE(ben.login("ben"), 0u);
    auto sessions = [&](const std::string& user) {
        return request("GET", "/api/v1/users/" + user + "/presence").second["sessions"].get<int>();
    };
    ASSERT_EQ(sessions("ann"), 6);
    int left = 6;
    for (std::size_t i : {std::size_t{5}, std::size_t{0}, std::size_t{2}}) {
        ann[i]->close();
        --left;
        // The close reaches the server after the client's: wait for the count to follow.
        int n = -1;
        for (int tries = 0; tries < 200 && (n = sessions("ann")) != left; ++tries)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        EXPECT_EQ(n, left) << "after closing session " << i;
    }
    const auto [st, body] = request("POST", "/api/v1/users/ann/disconnect");
    ASSERT_EQ(st, 200);
    EXPECT_EQ(body["closed"], 3);
    for (std::size_t i : {std::size_t{1}, std::size_t{3}, std::size_t{4}}) {
        auto f = ann[i]->expect(proto::msg_type::error_res);
        EXPECT_EQ(f.as<proto::error_res>()->code(), proto::error_code::forbidden);
    }
    EXPECT_EQ(sessions("ann"), 0);
    EXPECT_EQ(sessions("ben"), 1);
    ben.sync();
    stop_cleanly(*s);
}

TEST_P(api_actions, the_application_makes_rooms_and_moderates_with_the_owners_authority) {
    auto s = start_api();
    chat_client owner(s->port()), member(s->port());
    owner.login_v2("olga");
    member.login_v2("max");  // version 2: notices reach it
    // A room owned by olga, who is offline in it until her next login puts her there.
    auto [st, room] = request("POST", "/api/v1/rooms", json{{"name", "support"}, {"owner", "olga"}}.dump());
    ASSERT_EQ(st, 201) << room;
    const std::uint64_t id = room["id"];
    EXPECT_EQ(room["members"], 1);
    EXPECT_EQ(request("POST", "/api/v1/rooms", json{{"name", "x"}, {"owner", "nobody"}}.dump()).first, 404);
    EXPECT_EQ(request("POST", "/api/v1/rooms", json{{"name", ""}}.dump()).first, 400);
    EXPECT_EQ(request("POST", "/api/v1/rooms", json{{"name", "ownerless"}}.dump()).first, 201);
    auto [gst, info] = request("GET", "/api/v1/rooms/" + std::to_string(id));
    ASSERT_EQ(gst, 200);
    ASSERT_EQ(info["members"].size(), 1u);
    EXPECT_EQ(info["members"][0]["name"], "olga");
    EXPECT_EQ(info["members"][0]["role"], "owner");
    EXPECT_EQ(member.join(id), (std::vector<std::string>{"olga", "max"}));

    // Mute, then kick: each reaches the room as a notice from the application (sender id 0).
    const std::string path = "/api/v1/rooms/" + std::to_string(id);
    EXPECT_EQ(request("POST", path + "/mute", json{{"user", "max"}}.dump()).first, 400) << "a mute needs a duration";
    EXPECT_EQ(request("POST", path + "/mute", json{{"user", "max"}, {"duration_s", 60}}.dump()).first, 204);
    auto f = member.expect(proto::msg_type::chat_msg);
    auto* n = f.as<proto::chat_msg>();
    ASSERT_TRUE(n && n->notice());
    EXPECT_EQ(n->notice()->action(), proto::mod_action::mute);
    EXPECT_EQ(n->sender()->id(), 0u);
    ASSERT_TRUE(member.send_chat_in(id, "can I talk?"));
    member.expect_error(proto::msg_type::chat_req, proto::error_code::muted);
    // Nobody acts on the owner, not even the application.
    auto [ost, why] = request("POST", path + "/kick", json{{"user", "olga"}}.dump());
    EXPECT_EQ(ost, 403) << why;
    EXPECT_EQ(request("POST", path + "/kick", json{{"user", "nobody"}}.dump()).first, 404);
    EXPECT_EQ(request("POST", "/api/v1/rooms/999999/kick", json{{"user", "max"}}.dump()).first, 404);
    EXPECT_EQ(request("POST", path + "/ban", json{{"user", "max"}}.dump()).first, 204);
    f = member.expect(proto::msg_type::chat_msg);
    EXPECT_EQ(f.as<proto::chat_msg>()->notice()->action(), proto::mod_action::ban);
    member.expect(proto::msg_type::leave_room_res);
    member.send_join(id);
    member.expect_error(proto::msg_type::join_room_req, proto::error_code::banned);
    stop_cleanly(*s);
}

// DELETE: every session in the room leaves it, the room is gone from lists and joins, its
// members' next login does not put them back, and its stored messages stay readable.
TEST_P(api_actions, deleting_a_room_takes_every_session_out) {
    auto s = start_api();
    std::uint64_t id = 0, direct = 0;
    {
        chat_client ann(s->port()), ben(s->port());
        ann.login_v2("ann");
        ben.login_v2("ben");
        id = ann.create("doomed");
        ben.join(id);
        ASSERT_TRUE(ann.send_chat_in(id, "last words"));
        next_message(ann);
        next_message(ben);
        ASSERT_TRUE(ann.send_direct("ben", "psst"));
        direct = ann.expect(proto::msg_type::join_room_res).as<proto::join_room_res>()->room()->id();
        // Both read what the direct room sent them now: its owner is another room's, so its
        // frames may otherwise arrive after the leave below and stand in for the refused join.
        // (Ben has "psst" live unless it was sent before his join: then it is in the room's history.)
        const auto joined = ben.expect(proto::msg_type::join_room_res);
        EXPECT_EQ(joined.as<proto::join_room_res>()->room()->id(), direct);
        EXPECT_EQ(std::get<2>(next_message(ann)), "psst");
        if (joined.as<proto::join_room_res>()->last_seq() == 0) {
            EXPECT_EQ(std::get<2>(next_message(ben)), "psst");
        }
        const std::string path = "/api/v1/rooms/" + std::to_string(id);
        EXPECT_EQ(request("DELETE", "/api/v1/rooms/" + std::to_string(direct)).first, 403);
        EXPECT_EQ(request("DELETE", path).first, 204);
        for (chat_client* c : {&ann, &ben}) {
            bool left = false;
            for (int i = 0; i < 10 && !left; ++i) {
                auto f = c->recv();
                ASSERT_TRUE(f.has_value());
                if (f->type == proto::msg_type::leave_room_res) left = f->as<proto::leave_room_res>()->room_id() == id;
            }
            EXPECT_TRUE(left);
        }
        EXPECT_EQ(request("DELETE", path).first, 404);
        EXPECT_EQ(request("GET", path).first, 404);
        ben.send_join(id);
        ben.expect_error(proto::msg_type::join_room_req, proto::error_code::unknown_room);
        auto [hst, history] = request("GET", path + "/history");
        EXPECT_EQ(hst, 404) << "the room is gone; its rows stay for retention";
    }
    chat_client ann(s->port());
    const auto rooms = ann.login_v2("ann");
    for (const auto& [room, last_read] : rooms) EXPECT_NE(room, id) << "a deleted room is no one's";
    stop_cleanly(*s);
}

// A direct message from the application on an account's behalf: the pair's room is made and both
// accounts' sessions go in before the message, which each gets once; blocks apply.
TEST_P(api_actions, a_direct_message_opens_the_pairs_room_and_reaches_both) {
    auto s = start_api();
    chat_client ann(s->port()), ben(s->port());
    ann.login_v2("ann");
    ben.login_v2("ben");
    const json body{{"from", "ann"}, {"text", "hi ben"}, {"idempotency_key", "dm-1"}};
    auto [st, res] = request("POST", "/api/v1/users/ben/messages", body.dump());
    ASSERT_EQ(st, 200) << res;
    const std::uint64_t room = res["room_id"];
    EXPECT_FALSE(res["repeated"].get<bool>());
    for (chat_client* c : {&ann, &ben}) {
        auto j = c->expect(proto::msg_type::join_room_res);
        EXPECT_EQ(j.as<proto::join_room_res>()->room()->kind(), proto::room_kind::direct);
        EXPECT_EQ(j.as<proto::join_room_res>()->room()->id(), room);
        const auto [seq, sender, text] = next_message(*c);
        EXPECT_EQ(seq, res["seq"].get<std::uint64_t>());
        EXPECT_EQ(sender, "ann");
        EXPECT_EQ(text, "hi ben");
    }
    auto again = request("POST", "/api/v1/users/ben/messages", body.dump());
    EXPECT_EQ(again.first, 200);
    EXPECT_TRUE(again.second["repeated"].get<bool>());
    EXPECT_EQ(again.second["room_id"], room);
    EXPECT_EQ(request("POST", "/api/v1/users/nobody/messages", body.dump()).first, 404);
    EXPECT_EQ(request("POST", "/api/v1/users/ann/messages", body.dump()).first, 400) << "to oneself";
    ASSERT_TRUE(ben.send_block("ann", true));
    ben.expect(proto::msg_type::block_res);
    auto blocked = request("POST", "/api/v1/users/ben/messages", json{{"from", "ann"}, {"text", "x"}}.dump());
    EXPECT_EQ(blocked.first, 403) << blocked.second;
    for (chat_client* c : {&ann, &ben}) {
        c->sync();
        c->expect_nothing();
    }
    stop_cleanly(*s);
}

STRIX_CHAT_BACKENDS(api_actions);

}  // namespace
}  // namespace strix::test
