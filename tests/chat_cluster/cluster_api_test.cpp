// The server API on a cluster: POST /api/v1/users/{user}/disconnect on node A closes the
// account's sessions on node B too (a chat:ctl signal), and the writes that are not cluster-ready
// yet say so (501) rather than acting on one node's view.
#include "cluster_nodes.hpp"

#include <support/http_client.hpp>

#include <nlohmann/json.hpp>

#include <fstream>

namespace {

using namespace strix;
using namespace strix::test;
using namespace std::chrono_literals;
using nlohmann::json;
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

TEST(cluster_api, a_disconnect_on_one_node_closes_the_sessions_on_the_other) {
    redis_server redis;
    temp_dir dir;
    const std::string db = shared_pg_server().create_database();
    const std::string keys = dir.path() + "/keys";
    std::ofstream(keys) << key << " backend\n";
    const std::uint16_t api_port = free_port();
    std::vector<std::string> a_args = node_args(redis.port(), 1);
    a_args.insert(a_args.end(), {"--api-port", std::to_string(api_port), "--api-keys", keys});
    server_process a(db, dir.path() + "/a.log", 2, a_args), b(db, dir.path() + "/b.log", 2, node_args(redis.port(), 2));
    ASSERT_TRUE(a.ready()) << a.log();
    ASSERT_TRUE(b.ready()) << b.log();
    chat_client on_a(a.port()), on_b(b.port()), other(b.port());
    on_a.login_v2("ann");
    on_b.login_v2("ann");
    other.login_v2("ben");

    const auto [st, body] = call(api_port, "POST", "/api/v1/users/ann/disconnect");
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
    EXPECT_EQ(call(api_port, "POST", "/api/v1/rooms/256/messages", json{{"text", "x"}}.dump()).first, 501);
}

}  // namespace
