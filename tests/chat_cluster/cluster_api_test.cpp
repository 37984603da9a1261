// The server API on a cluster of two nodes (A and B) sharing PostgreSQL and Redis: a post through
// A's API reaches the room's members on B in order, whether or not A has a session in the room;
// one idempotency key sent to A, to B and to A restarted makes one message, delivered once (and
// two nodes posting one key at the same moment make one too); kick, ban, mute and delete through
// A take effect on B's sessions; a room made through A is usable from B; a direct message through
// A reaches its peer on B; a disconnect on A closes the account's sessions on B.
#include "cluster_nodes.hpp"

#include <support/http_client.hpp>

#include <nlohmann/json.hpp>

#include <fstream>
#include <future>
#include <memory>

namespace {

using namespace strix;
using namespace strix::test;
using namespace std::chrono_literals;
using nlohmann::json;
using proto::error_code;
using proto::mod_action;
using proto::msg_type;

const std::string key = "cluster-api-test-key-0123456789";

std::pair<int, json> call(std::uint16_t port, const std::string& method, const std::string& path,
                          const std::string& body = "") {
    http_client c(port);
    c.send(method + " " + path + " HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer " + key +
           "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    const http_reply r = c.read();
    return {r.status, json::parse(r.body, nullptr, false)};
}

std::pair<int, json> post(std::uint16_t port, const std::string& path, const json& body) {
    return call(port, "POST", path, body.dump());
}

// Two nodes, each with the server API on its own port; A can be restarted on the same ports.
struct api_nodes {
    api_nodes()
        : db(shared_pg_server().create_database()), keys(dir.path() + "/keys"), api_a(free_port()), api_b(free_port()) {
        std::ofstream(keys) << key << " backend\n";
        start_a();
        b = std::make_unique<server_process>(db, dir.path() + "/b.log", 2, args(2, api_b));
    }
    std::vector<std::string> args(unsigned node, std::uint16_t api) const {
        std::vector<std::string> v = node_args(redis.port(), node);
        v.insert(v.end(), {"--api-port", std::to_string(api), "--api-keys", keys});
        return v;
    }
    void start_a() { a = std::make_unique<server_process>(db, dir.path() + "/a.log", 2, args(1, api_a)); }
    // A's API answers (its listener may open a moment after the chat port a restart waits for).
    bool api_a_up() const {
        for (auto until = clock_type::now() + 5s; clock_type::now() < until; std::this_thread::sleep_for(20ms))
            if (call(api_a, "GET", "/api/v1/openapi.json").first == 200) return true;
        return false;
    }
    bool ready() const { return a->ready() && b->ready(); }
    std::string logs() const { return "A:\n" + a->log() + "\nB:\n" + b->log(); }

    redis_server redis;
    temp_dir dir;
    std::string db, keys;
    std::uint16_t api_a, api_b;
    std::unique_ptr<server_process> a, b;
};

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

// The next chat_msg's line (a failure and an empty line if none comes within 10 s).
chat_line next_chat(chat_client& c) {
    auto f = next_of(c, msg_type::chat_msg);
    auto* m = f.as<proto::chat_msg>();
    return m ? to_line(*m) : chat_line{};
}

// The notices' actions and the chat texts c gets within `quiet` of silence.
std::vector<std::string> texts_within(chat_client& c, std::chrono::milliseconds quiet) {
    std::vector<std::string> out;
    while (auto f = c.recv(quiet))
        if (auto* m = f->type == msg_type::chat_msg ? f->as<proto::chat_msg>() : nullptr)
            out.push_back(to_line(*m).text);
    return out;
}

// Reads notices until one of `action` (others, about other members, skipped); none if it never came.
mod_action next_notice(chat_client& c, mod_action action) {
    for (;;) {
        auto f = next_of(c, msg_type::chat_msg);
        auto* m = f.as<proto::chat_msg>();
        if (!m || m->kind() != proto::msg_kind::notice || !m->notice()) return mod_action::none;
        if (m->notice()->action() == action) return action;
    }
}

error_code next_error(chat_client& c) {
    auto f = next_of(c, msg_type::error_res);
    auto* e = f.as<proto::error_res>();
    return e ? e->code() : error_code::none;
}

std::string messages_path(std::uint64_t room) { return "/api/v1/rooms/" + std::to_string(room) + "/messages"; }

TEST(cluster_api, a_disconnect_on_one_node_closes_the_sessions_on_the_other) {
    api_nodes n;
    ASSERT_TRUE(n.ready()) << n.logs();
    chat_client on_a(n.a->port()), on_b(n.b->port()), other(n.b->port());
    on_a.login_v2("ann");
    on_b.login_v2("ann");
    other.login_v2("ben");

    const auto [st, body] = call(n.api_a, "POST", "/api/v1/users/ann/disconnect");
    ASSERT_EQ(st, 200) << body;
    EXPECT_EQ(body["closed"], 1) << "node A's own session";
    for (chat_client* c : {&on_a, &on_b}) {
        const auto start = clock_type::now();
        auto f = c->recv(5s);
        ASSERT_TRUE(f.has_value());
        ASSERT_EQ(f->type, msg_type::error_res);
        EXPECT_EQ(f->as<proto::error_res>()->code(), proto::error_code::forbidden);
        EXPECT_FALSE(c->recv(5s).has_value()) << "closed";
        EXPECT_LT(ms_since(start), 4000);
    }
    other.sync();  // ben, on B with ann, stays
}

TEST(cluster_api, posts_on_one_node_reach_the_members_on_the_other_in_order) {
    api_nodes n;
    ASSERT_TRUE(n.ready()) << n.logs();
    chat_client ben(n.b->port()), ann(n.a->port());
    ben.login_v2("ben");
    ann.login_v2("ann");
    const auto room = ben.create("posts");

    // A has nobody in the room: its API reads the room from the database and publishes.
    std::vector<std::uint64_t> answered;
    for (int i = 0; i < 3; ++i) {
        const auto [st, body] = post(n.api_a, messages_path(room), {{"text", "api " + std::to_string(i)}});
        ASSERT_EQ(st, 200) << body << n.logs();
        EXPECT_FALSE(body["repeated"].get<bool>());
        answered.push_back(body["seq"].get<std::uint64_t>());
        if (i == 1) ben.send_chat_in(room, "ben's own", 7);  // a session's message in between
    }
    std::vector<chat_line> got;
    for (int i = 0; i < 4; ++i) got.push_back(next_chat(ben));
    for (std::size_t i = 1; i < got.size(); ++i) EXPECT_EQ(got[i].seq, got[i - 1].seq + 1) << "in order, no gap";
    std::vector<std::uint64_t> api_seqs;
    for (const auto& l : got)
        if (l.text.starts_with("api ")) {
            api_seqs.push_back(l.seq);
            EXPECT_EQ(l.sender_id, 0u) << "the application's own message";
        }
    EXPECT_EQ(api_seqs, answered) << "each post delivered once, with the seq it was answered with";

    // With a member on A too, and sent as an account: both nodes deliver it with the same seq.
    ann.join(room);
    const auto [st, body] = post(n.api_a, messages_path(room), {{"text", "to both"}, {"from", "ann"}});
    ASSERT_EQ(st, 200) << body;
    for (chat_client* c : {&ann, &ben}) {
        const chat_line l = next_chat(*c);
        EXPECT_EQ(l.text, "to both");
        EXPECT_EQ(l.sender, "ann");
        EXPECT_EQ(l.seq, body["seq"].get<std::uint64_t>());
    }
    // Stored: the history through B's API has them all.
    const auto [hs, history] = call(n.api_b, "GET", "/api/v1/rooms/" + std::to_string(room) + "/history");
    ASSERT_EQ(hs, 200) << history;
    EXPECT_EQ(history["messages"].size(), 5u) << history;
    EXPECT_EQ(post(n.api_a, messages_path(999999), {{"text", "x"}}).first, 404);
}

TEST(cluster_api, one_idempotency_key_makes_one_message_across_nodes_and_restarts) {
    api_nodes n;
    ASSERT_TRUE(n.ready()) << n.logs();
    chat_client ben(n.b->port());
    ben.login_v2("ben");
    const auto room = ben.create("idem");
    const json msg{{"text", "exactly once"}, {"idempotency_key", "order-17"}};

    const auto [s1, first] = post(n.api_a, messages_path(room), msg);
    ASSERT_EQ(s1, 200) << first << n.logs();
    EXPECT_FALSE(first["repeated"].get<bool>());
    const auto [s2, on_b] = post(n.api_b, messages_path(room), msg);
    ASSERT_EQ(s2, 200) << on_b;
    EXPECT_TRUE(on_b["repeated"].get<bool>());
    EXPECT_EQ(on_b["seq"], first["seq"]);
    n.a->stop();
    n.start_a();
    ASSERT_TRUE(n.a->ready()) << n.a->log();
    ASSERT_TRUE(n.api_a_up()) << n.a->log();
    const auto [s3, restarted] = post(n.api_a, messages_path(room), msg);
    ASSERT_EQ(s3, 200) << restarted;
    EXPECT_TRUE(restarted["repeated"].get<bool>());
    EXPECT_EQ(restarted["seq"], first["seq"]);

    // Two nodes given one new key at the same moment: one message, both answers name it.
    const json race{{"text", "raced"}, {"idempotency_key", "order-18"}};
    auto on_a = std::async(std::launch::async, [&] { return post(n.api_a, messages_path(room), race); });
    auto on_b2 = std::async(std::launch::async, [&] { return post(n.api_b, messages_path(room), race); });
    const auto ra = on_a.get(), rb = on_b2.get();
    ASSERT_EQ(ra.first, 200) << ra.second;
    ASSERT_EQ(rb.first, 200) << rb.second;
    EXPECT_EQ(ra.second["seq"], rb.second["seq"]);
    EXPECT_NE(ra.second["repeated"].get<bool>(), rb.second["repeated"].get<bool>()) << "exactly one made it";

    EXPECT_EQ(texts_within(ben, 700ms), (std::vector<std::string>{"exactly once", "raced"}));
    const auto [hs, history] = call(n.api_b, "GET", "/api/v1/rooms/" + std::to_string(room) + "/history");
    ASSERT_EQ(hs, 200) << history;
    EXPECT_EQ(history["messages"].size(), 2u) << history;
}

TEST(cluster_api, moderation_and_delete_through_one_node_reach_the_sessions_on_the_other) {
    api_nodes n;
    ASSERT_TRUE(n.ready()) << n.logs();
    chat_client ben(n.b->port()), cat(n.b->port()), dan(n.b->port());
    ben.login_v2("ben");
    cat.login_v2("cat");
    dan.login_v2("dan");
    const auto room = ben.create("moderated");
    cat.join(room);
    dan.join(room);
    const std::string base = "/api/v1/rooms/" + std::to_string(room);

    auto [ms, mb] = post(n.api_a, base + "/mute", {{"user", "cat"}, {"duration_s", 60}});
    ASSERT_EQ(ms, 204) << mb << n.logs();
    EXPECT_EQ(next_notice(cat, mod_action::mute), mod_action::mute);
    cat.send_chat_in(room, "muted?");
    EXPECT_EQ(next_error(cat), error_code::muted);

    EXPECT_EQ(post(n.api_a, base + "/kick", {{"user", "dan"}}).first, 204);
    EXPECT_EQ(next_notice(dan, mod_action::kick), mod_action::kick);
    next_of(dan, msg_type::leave_room_res);

    EXPECT_EQ(post(n.api_a, base + "/ban", {{"user", "cat"}}).first, 204);
    EXPECT_EQ(next_notice(cat, mod_action::ban), mod_action::ban);
    next_of(cat, msg_type::leave_room_res);
    cat.send_join(room);
    EXPECT_EQ(next_error(cat), error_code::banned);

    EXPECT_EQ(post(n.api_a, base + "/kick", {{"user", "ben"}}).first, 403) << "never the owner";

    const auto [ds, db] = call(n.api_a, "DELETE", base);
    ASSERT_EQ(ds, 204) << db;
    next_of(ben, msg_type::leave_room_res);
    ben.send_join(room);
    EXPECT_EQ(next_error(ben), error_code::unknown_room);
    EXPECT_EQ(call(n.api_a, "DELETE", base).first, 404);
}

TEST(cluster_api, a_room_made_through_one_node_is_usable_from_the_other) {
    api_nodes n;
    ASSERT_TRUE(n.ready()) << n.logs();
    const auto [st, made] = post(n.api_a, "/api/v1/rooms", {{"name", "made by the app"}, {"owner", "ben"}});
    EXPECT_EQ(st, 404) << "ben has no account yet: " << made;
    chat_client ben(n.b->port()), cat(n.b->port());
    ben.login_v2("ben");
    const auto [st2, made2] = post(n.api_a, "/api/v1/rooms", {{"name", "made by the app"}, {"owner", "ben"}});
    ASSERT_EQ(st2, 201) << made2 << n.logs();
    const auto room = made2["id"].get<std::uint64_t>();
    // ben's next login on B puts it in the room it owns.
    chat_client ben2(n.b->port());
    const auto rooms = ben2.login_v2("ben");
    EXPECT_NE(std::find_if(rooms.begin(), rooms.end(), [&](const auto& r) { return r.first == room; }), rooms.end());
    cat.login_v2("cat");
    cat.join(room);
    ben2.send_chat_in(room, "welcome", 1);
    EXPECT_EQ(next_chat(cat).text, "welcome");
    EXPECT_EQ(post(n.api_b, messages_path(room), {{"text", "through B"}}).first, 200);
    EXPECT_EQ(next_chat(cat).text, "through B");
}

TEST(cluster_api, a_direct_message_through_one_node_reaches_its_peer_on_the_other) {
    api_nodes n;
    ASSERT_TRUE(n.ready()) << n.logs();
    chat_client ann(n.b->port()), ben(n.b->port());
    ann.login_v2("ann");
    ben.login_v2("ben");
    const auto [st, body] = post(n.api_a, "/api/v1/users/ben/messages", {{"from", "ann"}, {"text", "psst"}});
    ASSERT_EQ(st, 200) << body << n.logs();
    const auto room = body["room_id"].get<std::uint64_t>();
    for (chat_client* c : {&ann, &ben}) {
        auto j = next_of(*c, msg_type::join_room_res);
        auto* r = j.as<proto::join_room_res>();
        ASSERT_TRUE(r && r->room());
        EXPECT_EQ(r->room()->id(), room);
        EXPECT_EQ(r->room()->kind(), proto::room_kind::direct);
        // Stored before this session was put in: it is in the room's history (last_seq says so),
        // not sent live.
        if (r->last_seq() >= body["seq"].get<std::uint64_t>()) continue;
        const chat_line l = next_chat(*c);
        EXPECT_EQ(l.text, "psst");
        EXPECT_EQ(l.sender, "ann");
        EXPECT_EQ(l.seq, body["seq"].get<std::uint64_t>());
    }
}

}  // namespace
