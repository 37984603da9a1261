// strix-chat-server's cluster options: parsed from the command line and a config file, and
// refused with one sentence naming the fix (SQLite with --cluster, no or a bad --node-id, a bad
// Redis URL, --node-id without --cluster).
#include "apps/chat/server/options/chat_options.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace strix::chat;

parse_result parse(std::vector<std::string> args) {
    args.insert(args.begin(), "strix-chat-server");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return parse_options(static_cast<int>(argv.size()), argv.data());
}

chat_options with(const std::string& redis, std::uint32_t node, const std::string& db) {
    chat_options o;
    o.cluster.redis = redis;
    o.cluster.node_id = node;
    o.db = db;
    return o;
}

const std::string pg = "postgresql://postgres@127.0.0.1:5432/chat";

TEST(cluster_options, parses_from_the_command_line) {
    const auto r = parse({"--cluster", "redis://127.0.0.1:6390", "--node-id", "3", "--db", pg, "--node-ttl-ms", "5000",
                          "--position-check-ms", "250", "--stream-max", "2000"});
    ASSERT_TRUE(r.options);
    EXPECT_EQ(r.options->cluster.redis, "redis://127.0.0.1:6390");
    EXPECT_EQ(r.options->cluster.node_id, 3u);
    EXPECT_EQ(r.options->cluster.node_ttl_ms, 5000u);
    EXPECT_EQ(r.options->cluster.position_check_ms, 250u);
    EXPECT_EQ(r.options->cluster.stream_max, 2000u);
    EXPECT_TRUE(r.options->cluster.enabled());
    // Single node by default.
    const auto plain = parse({});
    ASSERT_TRUE(plain.options);
    EXPECT_FALSE(plain.options->cluster.enabled());
}

TEST(cluster_options, parses_from_a_config_file) {
    char path[] = "/tmp/strix-cluster-options-XXXXXX";
    const int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
    std::ofstream(path) << "cluster = \"redis://127.0.0.1:7001\"\nnode-id = 2\ndb = \"" << pg << "\"\n";
    const auto r = parse({"--config", path, "--node-id", "5"});
    ::unlink(path);
    ASSERT_TRUE(r.options);
    EXPECT_EQ(r.options->cluster.redis, "redis://127.0.0.1:7001");
    EXPECT_EQ(r.options->cluster.node_id, 5u);  // the command line wins
}

TEST(cluster_options, sqlite_with_cluster_is_refused_with_the_fix) {
    const auto err = validate(with("redis://127.0.0.1:6379", 1, "sqlite:var/strix.db"));
    EXPECT_NE(err.find("--cluster needs a PostgreSQL --db"), std::string::npos) << err;
    EXPECT_NE(err.find("postgresql://"), std::string::npos) << err;
    EXPECT_EQ(parse({"--cluster", "redis://127.0.0.1:6379", "--node-id", "1"}).exit_code, 2);  // default --db is SQLite
}

TEST(cluster_options, node_ids_and_urls_are_checked) {
    EXPECT_NE(validate(with("redis://127.0.0.1:6379", 0, pg)).find("--node-id between 1 and 65535"), std::string::npos);
    EXPECT_NE(validate(with("redis://127.0.0.1:6379", 70000, pg)).find("--node-id between 1 and 65535"),
              std::string::npos);
    EXPECT_NE(validate(with("http://127.0.0.1:6379", 1, pg)).find("redis://host:port"), std::string::npos);
    EXPECT_NE(validate(with("redis://127.0.0.1:99999", 1, pg)).find("bad port"), std::string::npos);
    EXPECT_NE(validate(with("", 4, pg)).find("--node-id applies to cluster mode only"), std::string::npos);
    EXPECT_EQ(validate(with("redis://localhost", 1, pg)), "");
    EXPECT_EQ(validate(with("redis://10.0.0.5:6380/0", 65535, pg)), "");
    auto o = with("redis://127.0.0.1:6379", 1, pg);
    o.cluster.node_ttl_ms = 100;
    EXPECT_NE(validate(o).find("--node-ttl-ms"), std::string::npos);
}

}  // namespace
