// strix-chat-server as an operator meets it: one clear sentence for bad configuration, a port in
// use or an unreachable database; a TOML config file; the SQLite directory made on demand; and
// the Prometheus metrics endpoint reporting what happened.
#include "chat_fixture.hpp"
#include "metrics_scrape.hpp"

#include <arpa/inet.h>

#include <algorithm>

using namespace strix;
using namespace strix::chat;
using namespace strix::test;
using proto::msg_type;

namespace {

struct outcome {
    int status = -1;
    std::string output;
};

/// Runs the server with args to completion (it must exit by itself within 20 s).
outcome run_to_exit(const std::vector<std::string>& args) {
    temp_dir dir;
    auto log = dir.path() + "/out.log";
    child c("strix-chat-server", args, log);
    outcome o;
    int st = c.wait_exit(std::chrono::seconds(20));
    o.status = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    o.output = read_file(log);
    return o;
}

/// Counts lines of output: an error is ONE sentence, not a dump.
std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(server_cli, a_port_in_use_is_one_clear_error) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(fd, 1), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    temp_dir dir;
    auto o = run_to_exit({"--port", std::to_string(ntohs(a.sin_port)), "--db", "sqlite:" + dir.path() + "/x.db",
                          "--metrics-port", "0", "--shards", "1", "--no-pin"});
    ::close(fd);
    EXPECT_EQ(o.status, 1) << o.output;
    EXPECT_NE(o.output.find("in use"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("--port"), std::string::npos) << "the message names the fix: " << o.output;
    EXPECT_EQ(lines(o.output), 1u) << o.output;
}

TEST(server_cli, an_unreachable_database_is_one_clear_error) {
    // Port 1 on loopback: nothing listens there.
    auto o = run_to_exit({"--port", "0", "--db", "postgresql://strix@127.0.0.1:1/strix", "--metrics-port", "0",
                          "--shards", "1", "--no-pin"});
    EXPECT_EQ(o.status, 1) << o.output;
    EXPECT_NE(o.output.find("cannot connect"), std::string::npos) << o.output;
    EXPECT_EQ(lines(o.output), 1u) << o.output;

    auto bad = run_to_exit({"--port", "0", "--db", "mysql://nope", "--metrics-port", "0"});
    EXPECT_EQ(bad.status, 2) << bad.output;
    EXPECT_NE(bad.output.find("--db must be sqlite:<path> or a postgresql:// URL"), std::string::npos) << bad.output;
    EXPECT_EQ(lines(bad.output), 1u) << bad.output;
}

TEST(server_cli, bad_options_and_config_files_are_rejected_with_a_reason) {
    temp_dir dir;
    auto bad_cost = run_to_exit({"--password-cost", "medium"});
    EXPECT_EQ(bad_cost.status, 2);
    EXPECT_NE(bad_cost.output.find("password-cost"), std::string::npos) << bad_cost.output;
    EXPECT_EQ(lines(bad_cost.output), 1u) << bad_cost.output;

    auto bad_rate = run_to_exit({"--chat-rate", "0", "--db", "sqlite:" + dir.path() + "/x.db"});
    EXPECT_EQ(bad_rate.status, 2);
    EXPECT_NE(bad_rate.output.find("--chat-rate must be a positive number"), std::string::npos) << bad_rate.output;

    auto long_unix = run_to_exit({"--unix", "/tmp/" + std::string(120, 'u'), "--db", "sqlite:" + dir.path() + "/x.db"});
    EXPECT_EQ(long_unix.status, 2);
    EXPECT_NE(long_unix.output.find("--unix path must be shorter than 108 bytes"), std::string::npos)
        << long_unix.output;
    EXPECT_EQ(lines(long_unix.output), 1u) << long_unix.output;

    auto spin = run_to_exit({"--poll-spin-us", "2000000", "--db", "sqlite:" + dir.path() + "/x.db"});
    EXPECT_EQ(spin.status, 2);
    EXPECT_NE(spin.output.find("--poll-spin-us must be at most"), std::string::npos) << spin.output;

    auto batch = run_to_exit({"--retention-batch", "0", "--db", "sqlite:" + dir.path() + "/x.db"});
    EXPECT_EQ(batch.status, 2);
    EXPECT_NE(batch.output.find("--retention-batch must be between 1 and 100000"), std::string::npos) << batch.output;
    EXPECT_EQ(lines(batch.output), 1u) << batch.output;

    auto cfg = dir.path() + "/bad.toml";
    std::ofstream(cfg) << "port = 0\nprot = 7000\n";
    auto typo = run_to_exit({"--config", cfg});
    EXPECT_EQ(typo.status, 2);
    EXPECT_NE(typo.output.find("unknown key 'prot'"), std::string::npos) << typo.output;
    EXPECT_EQ(lines(typo.output), 1u) << typo.output;

    // CLI11's reader keeps no line numbers: the error names the key instead.
    auto broken = dir.path() + "/broken.toml";
    std::ofstream(broken) << "port = \n";
    auto parse = run_to_exit({"--config", broken});
    EXPECT_EQ(parse.status, 2);
    EXPECT_NE(parse.output.find("key 'port' has no value"), std::string::npos) << parse.output;
    EXPECT_EQ(lines(parse.output), 1u) << parse.output;

    // An empty or unclosed array is no value either (CLI11 alone crashed on both: SIGSEGV).
    for (const char* text : {"host = []\n", "chat-rate =[s"}) {
        auto empty = dir.path() + "/empty.toml";
        std::ofstream(empty) << text;
        auto none = run_to_exit({"--config", empty});
        EXPECT_EQ(none.status, 2) << text << ": " << none.output;
        EXPECT_NE(none.output.find("has no value"), std::string::npos) << text << ": " << none.output;
        EXPECT_EQ(lines(none.output), 1u) << none.output;
    }

    // Booleans only for flags.
    auto boolean = dir.path() + "/boolean.toml";
    std::ofstream(boolean) << "port = true\n";
    auto not_flag = run_to_exit({"--config", boolean});
    EXPECT_EQ(not_flag.status, 2);
    EXPECT_NE(not_flag.output.find("--port"), std::string::npos) << not_flag.output;
    EXPECT_NE(not_flag.output.find("true"), std::string::npos) << not_flag.output;

    // A config file cannot name another config file.
    auto nested = dir.path() + "/nested.toml";
    std::ofstream(nested) << "config = \"" << cfg << "\"\n";
    auto again = run_to_exit({"--config", nested});
    EXPECT_EQ(again.status, 2);
    EXPECT_NE(again.output.find("config: This option is not allowed in a configuration file"), std::string::npos)
        << again.output;

    auto missing = run_to_exit({"--config", dir.path() + "/none.toml"});
    EXPECT_EQ(missing.status, 2);
    EXPECT_NE(missing.output.find("--config"), std::string::npos) << missing.output;
    EXPECT_NE(missing.output.find("none.toml"), std::string::npos) << missing.output;
}

TEST(server_cli, websocket_options_are_checked_and_read_from_the_config_file) {
    temp_dir dir;
    const std::string db = "sqlite:" + dir.path() + "/x.db";
    struct bad {
        std::vector<std::string> args;
        const char* says;
    };
    for (const bad& b : std::vector<bad>{
             {{"--ws-port", "0", "--ws-path", "/"}, "--ws-path must start with / and name a path other than /"},
             {{"--ws-port", "0", "--ws-path", "ws"}, "--ws-path must start with /"},
             {{"--ws-port", "0", "--ws-origins", "https://a.example,chat.example"}, "got 'chat.example'"},
             {{"--ws-port", "0", "--ws-origins", "https://a.example/page"}, "no path"},
             {{"--ws-port", "7000", "--port", "7000"}, "--ws-port must differ from --port"},
             {{"--ws-port", "0", "--host", "0.0.0.0", "--insecure-plaintext"}, "needs --ws-origins"},
         }) {
        std::vector<std::string> args = b.args;
        args.insert(args.end(), {"--db", db, "--metrics-port", "0"});
        auto o = run_to_exit(args);
        EXPECT_EQ(o.status, 2) << o.output;
        EXPECT_NE(o.output.find(b.says), std::string::npos) << o.output;
        EXPECT_EQ(lines(o.output), 1u) << o.output;
    }
    // Keys named like the options; the page is then served on the configured port.
    const std::uint16_t ws = free_port();
    auto cfg = dir.path() + "/ws.toml";
    std::ofstream(cfg) << "ws-port = " << ws << "\nws-path = \"/chat\"\nws-origins = \"https://chat.example\"\n"
                       << "port = 0\nmetrics-port = 0\nshards = 1\nno-pin = true\ndb = \"" << db << "\"\n";
    child c("strix-chat-server", {"--config", cfg}, dir.path() + "/log");
    ASSERT_TRUE(wait_listening(ws)) << read_file(dir.path() + "/log");
    chat_client ok, refused;
    EXPECT_TRUE(ok.connect_ws(ws, "/chat", "https://chat.example")) << ok.upgrade_reply().head;
    EXPECT_FALSE(refused.connect_ws(ws, "/chat", "http://127.0.0.1:" + std::to_string(ws)));
    EXPECT_EQ(refused.upgrade_reply().status, 403);
    c.signal(SIGTERM);
    EXPECT_EQ(c.wait_exit(std::chrono::seconds(20)), 0);
}

TEST(server_cli, a_connection_cap_past_the_descriptor_limit_is_one_warning_and_the_server_runs) {
    temp_dir dir;
    const auto port = free_port();
    const std::string log = dir.path() + "/log";
    // RLIMIT_NOFILE 2,000 (soft and hard) against a cap of 1,000,000 connections.
    child c("strix-chat-server",
            {"--port", std::to_string(port), "--db", "sqlite:" + dir.path() + "/x.db", "--metrics-port", "0",
             "--shards", "1", "--no-pin", "--max-connections", "1000000"},
            log, 2000);
    ASSERT_TRUE(wait_listening(port)) << read_file(log);
    chat_client a(port);
    EXPECT_NE(a.login("ann"), 0u);  // it serves
    const std::string out = read_file(log);
    const auto at = out.find("RLIMIT_NOFILE allows 2000");
    EXPECT_NE(at, std::string::npos) << out;
    EXPECT_NE(out.find("past about 1744 connections"), std::string::npos) << "it says what fits: " << out;
    EXPECT_EQ(out.find("RLIMIT_NOFILE", at + 1), std::string::npos) << "said once: " << out;
    c.signal(SIGTERM);
    EXPECT_EQ(c.wait_exit(std::chrono::seconds(20)), 0);
}

TEST(server_cli, a_config_file_sets_options_and_the_command_line_wins) {
    temp_dir dir;
    auto port = free_port();
    auto cfg = dir.path() + "/chat.toml";
    // The database path sits in directories that do not exist yet: the server makes them.
    std::ofstream(cfg) << "port = " << port << "\n"
                       << "db = \"sqlite:" << dir.path() << "/deep/er/chat.db\"\n"
                       << "metrics-port = 0\nshards = 1\npassword-cost = \"fast\"\nauto-register = false\n"
                       << "chat-burst = 1\nchat-rate = 0.01\nno-pin = true\n";
    child c("strix-chat-server", {"--config", cfg, "--chat-burst", "2"}, dir.path() + "/log");
    ASSERT_TRUE(wait_listening(port)) << read_file(dir.path() + "/log");
    EXPECT_TRUE(std::filesystem::exists(dir.path() + "/deep/er/chat.db"));
    chat_client a(port);
    a.send_login("nobody", "pw");
    a.expect_error(msg_type::login_req, proto::error_code::unknown_account);  // auto-register = false
    c.signal(SIGTERM);
    EXPECT_EQ(c.wait_exit(std::chrono::seconds(20)), 0);

    // With registration on, the burst comes from the command line (2), not the file (1).
    child c2("strix-chat-server", {"--config", cfg, "--chat-burst", "2", "--auto-register"}, dir.path() + "/log2");
    ASSERT_TRUE(wait_listening(port)) << read_file(dir.path() + "/log2");
    chat_client b(port);
    b.login("burst");
    b.create("r");
    for (int i = 0; i < 3; ++i) b.send_chat("x");
    // Two acknowledged, one refused. The refusal may come first: a chat_msg goes out once the
    // message is stored, an error at once (docs/protocol.md, "Replies follow the same order").
    int chats = 0, limited = 0;
    for (int i = 0; i < 3; ++i) {
        auto f = b.recv();
        ASSERT_TRUE(f);
        if (f->type == msg_type::chat_msg) ++chats;
        if (f->type == msg_type::error_res && f->as<proto::error_res>()->code() == proto::error_code::rate_limited)
            ++limited;
    }
    EXPECT_EQ(chats, 2);
    EXPECT_EQ(limited, 1);
    c2.signal(SIGTERM);
    EXPECT_EQ(c2.wait_exit(std::chrono::seconds(20)), 0);
}

TEST(server_cli, metrics_report_sessions_rooms_messages_and_the_database) {
    temp_dir dir;
    auto mport = free_port();
    server_process srv("sqlite:" + dir.path() + "/chat.db", dir.path() + "/server.log", 2,
                       {"--metrics-port", std::to_string(mport)});
    ASSERT_TRUE(srv.ready()) << srv.log();
    chat_client a(srv.port()), b(srv.port());
    a.login("ann");
    b.login("ben");
    auto room = a.create("r");
    b.join(room);
    a.expect_member_event(msg_type::member_joined, room, "ben");
    for (int i = 0; i < 5; ++i) a.send_chat("m" + std::to_string(i));
    for (int i = 0; i < 5; ++i) {
        a.expect_chat();
        b.expect_chat();
    }
    std::string text;
    // The chat log is written asynchronously; wait for the writer to commit all five.
    EXPECT_TRUE(eventually([&] {
        text = http_get(mport, "/metrics");
        return metric_value(text, "strix_db_written_total") == 5;
    })) << text;
    EXPECT_EQ(text.rfind("HTTP/1.0 200 OK", 0), 0u) << text;
    EXPECT_NE(text.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
    EXPECT_EQ(metric_value(text, "strix_chat_messages_total"), 5);
    // 5 messages to 2 members, plus ann's member_joined about ben.
    EXPECT_EQ(metric_value(text, "strix_broadcast_deliveries_total"), 11);
    EXPECT_EQ(metric_value(text, "strix_logins_total"), 2);
    EXPECT_EQ(metric_value(text, "strix_players"), 2);
    EXPECT_EQ(metric_value(text, "strix_sessions"), 2);
    EXPECT_EQ(metric_value(text, "strix_rooms"), 1);
    EXPECT_EQ(metric_value(text, "strix_job_queue_executed_total"), 2) << "two logins ran on the database pool";
    EXPECT_EQ(metric_value(text, "strix_db_queue_depth"), 0);
    EXPECT_GE(metric_value(text, "strix_app_messages_in_total"), 9);  // 2 logins, create, join, 5 chats
    EXPECT_GT(metric_value(text, "strix_io_reads_total"), 0);
    EXPECT_GT(metric_value(text, "strix_bytes_out_total"), 0);
    EXPECT_EQ(metric_value(text, "strix_slow_consumer_disconnects_total"), 0);
    // Receive buffers: both sessions read, so the pools handed some out; what is out now is
    // exactly what was taken and not yet given back (one snapshot: the counters are per shard).
    EXPECT_GE(metric_value(text, "strix_pool_allocs_total"), 2);
    EXPECT_GE(metric_value(text, "strix_pool_peak"), 1);
    EXPECT_EQ(metric_value(text, "strix_pool_allocs_total") - metric_value(text, "strix_pool_frees_total"),
              metric_value(text, "strix_pool_in_use"))
        << text;
    // The event-loop turn histogram: cumulative buckets, +Inf equal to the count, and the shards
    // did turn (logins, chats).
    {
        std::vector<long long> buckets;
        for (std::size_t pos = text.find("strix_loop_turn_seconds_bucket{"); pos != std::string::npos;
             pos = text.find("strix_loop_turn_seconds_bucket{", pos + 1))
            buckets.push_back(std::stoll(text.substr(text.find("} ", pos) + 2)));
        ASSERT_EQ(buckets.size(), 5u) << text;
        for (std::size_t i = 1; i < buckets.size(); ++i) EXPECT_LE(buckets[i - 1], buckets[i]) << text;
        EXPECT_EQ(buckets.back(), metric_value(text, "strix_loop_turn_seconds_count"));
        EXPECT_GT(buckets.back(), 5);
        EXPECT_NE(text.find("strix_loop_turn_seconds_bucket{le=\"+Inf\"}"), std::string::npos);
        EXPECT_GE(metric_value(text, "strix_loop_turn_max_us"), 0);
    }
    for (const char* name : {"strix_pool_in_use", "strix_pool_peak", "strix_send_buffers_in_use",
                             "strix_send_buffers_peak", "strix_job_queue_enqueued_total", "strix_job_queue_peak",
                             "strix_db_write_lag_us", "strix_io_writes_total", "strix_app_messages_out_total"})
        EXPECT_GE(metric_value(text, name), 0) << name << " missing";
    EXPECT_NE(http_get(mport, "/").find("404"), std::string::npos);
    EXPECT_EQ(srv.stop(), 0);
}

}  // namespace
