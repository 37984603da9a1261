// strix-chat-server over TLS as people meet it, through the real programs: strix-chat-client and
// strix-chat-load log in and chat over TLS (the load tool verifying content, counts and order), a
// server other machines can reach refuses plain TCP unless told, SIGHUP swaps the certificate for
// new connections while open ones carry on, a client that cannot verify the server stops before
// its password leaves, and --pg-sslmode reaches libpq. Certificates: tests/support/test_certs.hpp.
#include "chat_fixture.hpp"

#include "apps/chat/server/options/chat_options.hpp"
#include <support/test_certs.hpp>
#include <support/tls_peer.hpp>
#include "tls_chat.hpp"

#include <nlohmann/json.hpp>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>

using namespace strix;
using namespace strix::chat;
using namespace strix::test;
using proto::msg_type;

namespace {

struct ran {
    int status = -1;  // exit status; -1 when killed or still running at the limit
    std::string output;
};

/// Runs STRIX_BIN_DIR/<program> with `input` on its stdin until it exits (killed after `limit`);
/// stdout and stderr together go to `log` and come back in output.
ran run_program(const std::string& program, std::vector<std::string> args, const std::string& input,
                const std::string& log, std::chrono::seconds limit = std::chrono::seconds(60)) {
    ::signal(SIGPIPE, SIG_IGN);  // a program that exits before reading its input
    int in[2];
    if (::pipe(in) != 0) return {};
    std::string path = std::string(STRIX_BIN_DIR) + "/" + program;
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(in[0], 0);
        ::close(in[0]);
        ::close(in[1]);
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        std::vector<char*> argv{path.data()};
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        ::execv(path.c_str(), argv.data());
        ::_exit(127);
    }
    ::close(in[0]);
    [[maybe_unused]] const ssize_t w = ::write(in[1], input.data(), input.size());  // small: fits the pipe
    ::close(in[1]);
    ran r;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int st = 0;
    while (::waitpid(pid, &st, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &st, 0);
            r.output = read_file(log) + "\n(killed after the time limit)";
            return r;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.output = read_file(log);
    return r;
}

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

/// The serial number of the certificate in a PEM file, in hex as the programs print it.
std::string serial_of_file(const std::string& pem) {
    FILE* f = std::fopen(pem.c_str(), "r");
    if (f == nullptr) return "";
    X509* x = PEM_read_X509(f, nullptr, nullptr, nullptr);
    std::fclose(f);
    std::string out = serial_text(x);
    X509_free(x);
    return out;
}

void copy_file(const std::string& from, const std::string& to) {
    std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
}

/// Waits up to 10 s for `text` to appear in the server's log `count` times.
bool log_shows(const server_process& s, const std::string& text, std::size_t count = 1) {
    for (int i = 0; i < 1000; ++i) {
        const std::string log = s.log();
        std::size_t n = 0;
        for (auto at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++n;
        if (n >= count) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

/// The port from "listening on HOST:PORT" in a log, waiting up to 20 s; 0 if it never came.
std::uint16_t listening_port(const std::string& log, const std::string& host) {
    const std::string marker = "listening on " + host + ":";
    for (int i = 0; i < 2000; ++i) {
        const std::string text = read_file(log);
        if (auto at = text.find(marker); at != std::string::npos)
            return static_cast<std::uint16_t>(std::stoi(text.substr(at + marker.size())));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
}

class chat_tls : public chat_test {
protected:
    std::vector<std::string> tls_args() const { return {"--tls-cert", certs_.cert, "--tls-key", certs_.key}; }
    std::string log(const std::string& name) const { return dir_.path() + "/" + name + ".log"; }

    test_certs certs_;
};

TEST_P(chat_tls, the_client_and_the_load_tool_log_in_and_chat_over_tls) {
    const std::string sock = dir_.path() + "/chat.sock";
    auto extra = tls_args();
    extra.insert(extra.end(), {"--unix", sock});
    auto s = start(2, extra);
    ASSERT_TRUE(s->ready());
    EXPECT_NE(s->log().find("(TLS) and unix:" + sock + " (plain)"), std::string::npos) << s->log();
    const std::string port = std::to_string(s->port());
    const std::vector<std::string> client{"--tls",
                                          "--ca",
                                          certs_.ca,
                                          "--port",
                                          port,
                                          "--name",
                                          "alice",
                                          "--password",
                                          "pw",
                                          "--state-dir",
                                          dir_.path() + "/state"};

    // The interactive client, scripted: a room, a line said in it and its echo from the server.
    auto c = run_program("strix-chat-client", client, "/create tls-room\nhello over tls\n/quit\n", log("client1"));
    EXPECT_EQ(c.status, 0) << c.output;
    EXPECT_NE(c.output.find("connected to 127.0.0.1:" + port + " over TLSv1.3"), std::string::npos) << c.output;
    EXPECT_NE(c.output.find("serial " + serial_of_file(certs_.cert) + ","), std::string::npos) << c.output;
    EXPECT_NE(c.output.find("logged in as alice (player 1), new account"), std::string::npos) << c.output;
    EXPECT_NE(c.output.find("#1] alice: hello over tls\n"), std::string::npos) << c.output;
    // Again, presenting the device token the first login stored: the same account.
    auto again = run_program("strix-chat-client", client, "/rooms\n/quit\n", log("client2"));
    EXPECT_EQ(again.status, 0) << again.output;
    EXPECT_NE(again.output.find("logged in as alice (player 1)\n"), std::string::npos) << again.output;
    EXPECT_NE(again.output.find("  tls-room  ("), std::string::npos) << again.output;

    // The load tool: every delivery verified (room order, sender order, exact text, exactly once).
    const std::string json_path = dir_.path() + "/load.json";
    auto l = run_program("strix-chat-load", {"--tls", "--ca",     certs_.ca, "--port",         port, "--clients",
                                             "24",    "--rooms",  "4",       "--rps",          "5",  "--duration",
                                             "2",     "--warmup", "0.5",     "--report-every", "2",  "--name-prefix",
                                             "tls",   "--json",   json_path},
                         "", log("load"), std::chrono::seconds(120));
    ASSERT_EQ(l.status, 0) << l.output;
    EXPECT_NE(l.output.find("strix-chat-load: TLS: TLSv1.3"), std::string::npos) << l.output;
    const auto j = nlohmann::json::parse(read_file(json_path));
    EXPECT_TRUE(j["ok"].get<bool>());
    EXPECT_TRUE(j["tls"].get<bool>());
    EXPECT_GE(j["sent"].get<std::uint64_t>(), 200u);  // 24 clients x 5 rps x 2 s = 240 planned
    EXPECT_EQ(j["delivered"].get<std::uint64_t>(), j["expected_deliveries"].get<std::uint64_t>());
    EXPECT_EQ(j["delivered"].get<std::uint64_t>(), j["sent"].get<std::uint64_t>() * 6);  // 6 members per room
    for (const char* k : {"lost", "duplicates", "out_of_order", "gaps", "corrupt", "disconnects"})
        EXPECT_EQ(j[k].get<std::uint64_t>(), 0u) << k;

    // The Unix socket beside the TLS port stays plain.
    auto u = run_program("strix-chat-load",
                         {"--unix", sock, "--clients", "6", "--rooms", "2", "--rps", "5", "--duration", "1", "--warmup",
                          "0.5", "--report-every", "1", "--name-prefix", "unix"},
                         "", log("load-unix"), std::chrono::seconds(120));
    EXPECT_EQ(u.status, 0) << u.output;

    // Plain bytes on the TLS port log nobody in: the server closes.
    chat_client plain(s->port());
    ASSERT_TRUE(plain.send_login("mallory", "pw"));
    EXPECT_FALSE(plain.recv(std::chrono::seconds(5)).has_value());
    stop_cleanly(*s);
}

TEST_P(chat_tls, a_server_other_machines_can_reach_needs_tls_or_insecure_plaintext) {
    for (const char* host : {"0.0.0.0", "*", "10.1.2.3"}) {
        auto r =
            run_program("strix-chat-server", server_process::args(db_url_, 1, {"--host", host}), "", log("refused"));
        EXPECT_EQ(r.status, 2) << host << ": " << r.output;
        EXPECT_NE(r.output.find("--host " + std::string(host) + " is reachable from other machines"), std::string::npos)
            << r.output;
        EXPECT_NE(r.output.find("--tls-cert FILE --tls-key FILE"), std::string::npos) << r.output;
        EXPECT_NE(r.output.find("--insecure-plaintext"), std::string::npos) << r.output;
        EXPECT_EQ(lines(r.output), 1u) << r.output;
    }
    {
        // --insecure-plaintext: it starts, warns, and serves plain TCP.
        child srv("strix-chat-server", server_process::args(db_url_, 1, {"--host", "0.0.0.0", "--insecure-plaintext"}),
                  log("insecure"));
        const std::uint16_t port = listening_port(log("insecure"), "0.0.0.0");
        ASSERT_NE(port, 0) << read_file(log("insecure"));
        EXPECT_NE(read_file(log("insecure")).find("(plain TCP)"), std::string::npos);
        EXPECT_NE(read_file(log("insecure")).find("warning: --insecure-plaintext: passwords and device tokens reach"),
                  std::string::npos)
            << read_file(log("insecure"));
        chat_client c(port);
        EXPECT_NE(c.login("carol"), 0u);
        srv.signal(SIGTERM);
        const int st = srv.wait_exit(std::chrono::seconds(30));
        EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << read_file(log("insecure"));
    }
    {
        // With a certificate (here from the config file's keys) the same address starts without a
        // warning and speaks TLS.
        const std::string config = dir_.path() + "/tls.toml";
        std::ofstream(config) << "host = \"0.0.0.0\"\ntls-cert = \"" << certs_.cert << "\"\ntls-key = \"" << certs_.key
                              << "\"\n";
        child srv("strix-chat-server", server_process::args(db_url_, 1, {"--config", config}), log("tls-any"));
        const std::uint16_t port = listening_port(log("tls-any"), "0.0.0.0");
        ASSERT_NE(port, 0) << read_file(log("tls-any"));
        EXPECT_EQ(read_file(log("tls-any")).find("warning"), std::string::npos) << read_file(log("tls-any"));
        tls_chat t(port, certs_.ca);
        ASSERT_TRUE(t.ok()) << t.error();
        EXPECT_NE(t.login("carol"), 0u);
        srv.signal(SIGTERM);
        EXPECT_NE(srv.wait_exit(std::chrono::seconds(30)), -1);
    }
    {
        // Loopback other than 127.0.0.1 stays plain without a word.
        child srv("strix-chat-server", server_process::args(db_url_, 1, {"--host", "127.0.0.2"}), log("loopback"));
        ASSERT_NE(listening_port(log("loopback"), "127.0.0.2"), 0) << read_file(log("loopback"));
        EXPECT_EQ(read_file(log("loopback")).find("warning"), std::string::npos) << read_file(log("loopback"));
        srv.signal(SIGTERM);
        EXPECT_NE(srv.wait_exit(std::chrono::seconds(30)), -1);
    }
    for (const char* h : {"127.0.0.1", "127.255.3.4", "::1", "::ffff:127.0.0.1"}) EXPECT_TRUE(is_loopback_host(h)) << h;
    for (const char* h : {"0.0.0.0", "*", "::", "10.0.0.1", "128.0.0.1", "::ffff:10.0.0.1", "localhost"})
        EXPECT_FALSE(is_loopback_host(h)) << h;
}

TEST_P(chat_tls, sighup_swaps_the_certificate_for_new_connections_and_open_ones_carry_on) {
    const std::string cert = dir_.path() + "/live-cert.pem", key = dir_.path() + "/live-key.pem";
    copy_file(certs_.cert, cert);
    copy_file(certs_.key, key);
    auto s = start(2, {"--tls-cert", cert, "--tls-key", key});
    ASSERT_TRUE(s->ready());
    const std::string first = serial_of_file(certs_.cert), second = serial_of_file(certs_.cert2);
    ASSERT_FALSE(first.empty());
    ASSERT_NE(first, second);

    tls_chat open(s->port(), certs_.ca);
    ASSERT_TRUE(open.ok()) << open.error();
    EXPECT_EQ(open.serial(), first);
    ASSERT_NE(open.login("alice"), 0u);

    copy_file(certs_.cert2, cert);
    copy_file(certs_.key2, key);
    ASSERT_EQ(::kill(s->pid(), SIGHUP), 0);
    ASSERT_TRUE(log_shows(*s, "TLS certificate reloaded")) << s->log();
    EXPECT_NE(s->log().find("serial " + second + ","), std::string::npos) << s->log();
    tls_chat fresh(s->port(), certs_.ca);
    ASSERT_TRUE(fresh.ok()) << fresh.error();
    EXPECT_EQ(fresh.serial(), second);
    // What the real client sees.
    auto c = run_program("strix-chat-client",
                         {"--tls", "--ca", certs_.ca, "--port", std::to_string(s->port()), "--name", "bob",
                          "--password", "pw", "--state-dir", dir_.path() + "/state"},
                         "/quit\n", log("client"));
    EXPECT_EQ(c.status, 0) << c.output;
    EXPECT_NE(c.output.find("serial " + second + ","), std::string::npos) << c.output;
    EXPECT_TRUE(open.ping(77)) << "the connection made before the reload stopped serving";

    // A broken file: the reload fails with the file and the reason, and the last good one stays.
    std::ofstream(cert, std::ios::trunc) << "not a certificate\n";
    ASSERT_EQ(::kill(s->pid(), SIGHUP), 0);
    ASSERT_TRUE(log_shows(*s, "TLS reload failed")) << s->log();
    EXPECT_NE(s->log().find("TLS reload failed, new connections keep the previous certificate: TLS certificate " +
                            cert + ": "),
              std::string::npos)
        << s->log();
    tls_chat after(s->port(), certs_.ca);
    ASSERT_TRUE(after.ok()) << after.error();
    EXPECT_EQ(after.serial(), second);
    EXPECT_TRUE(open.ping(78));
    EXPECT_NE(after.login("carol"), 0u);
    stop_cleanly(*s);
}

TEST_P(chat_tls, a_client_that_cannot_verify_the_server_stops_before_its_password_leaves) {
    auto s = start(1, tls_args());
    ASSERT_TRUE(s->ready());
    const std::string port = std::to_string(s->port());
    auto client = [&](const std::string& password, std::vector<std::string> tls, const std::string& name) {
        std::vector<std::string> args{"--port",     port,     "--name",      "dave",
                                      "--password", password, "--state-dir", dir_.path() + "/state"};
        args.insert(args.end(), tls.begin(), tls.end());
        return run_program("strix-chat-client", args, "/quit\n", log(name));
    };
    auto wrong_ca = client("secret", {"--tls", "--ca", certs_.other_ca}, "wrong-ca");
    EXPECT_EQ(wrong_ca.status, 1) << wrong_ca.output;
    EXPECT_NE(wrong_ca.output.find("error: TLS: the server's certificate is not trusted for 127.0.0.1: "),
              std::string::npos)
        << wrong_ca.output;
    EXPECT_NE(wrong_ca.output.find("--ca must name"), std::string::npos) << wrong_ca.output;
    EXPECT_EQ(wrong_ca.output.find("connected"), std::string::npos) << wrong_ca.output;
    EXPECT_EQ(lines(wrong_ca.output), 1u) << wrong_ca.output;

    auto wrong_name = client("secret", {"--tls", "--ca", certs_.ca, "--server-name", "other.example"}, "wrong-name");
    EXPECT_EQ(wrong_name.status, 1) << wrong_name.output;
    EXPECT_NE(wrong_name.output.find("not trusted for other.example: hostname mismatch"), std::string::npos)
        << wrong_name.output;

    auto no_ca = client("secret", {"--tls", "--ca", dir_.path() + "/missing.pem"}, "no-ca");
    EXPECT_EQ(no_ca.status, 1) << no_ca.output;
    EXPECT_NE(no_ca.output.find("missing.pem: No such file or directory"), std::string::npos) << no_ca.output;

    auto load = run_program("strix-chat-load",
                            {"--tls", "--ca", certs_.other_ca, "--port", port, "--clients", "2", "--rooms", "1",
                             "--duration", "1", "--name-prefix", "dave"},
                            "", log("load-wrong-ca"));
    EXPECT_NE(load.status, 0) << load.output;
    // Whichever of the two clients finishes its handshake first reports.
    EXPECT_NE(load.output.find("strix-chat-load: FAILED: client "), std::string::npos) << load.output;
    EXPECT_NE(load.output.find("): TLS: the server's certificate is not trusted for 127.0.0.1: unable to get local "
                               "issuer certificate (--ca must name"),
              std::string::npos)
        << load.output;

    // Nothing of dave's reached the server: the name is still free, so another password creates it.
    auto good = client("other", {"--tls", "--ca", certs_.ca}, "good");
    EXPECT_EQ(good.status, 0) << good.output;
    EXPECT_NE(good.output.find("logged in as dave (player 1), new account"), std::string::npos) << good.output;
    stop_cleanly(*s);

    // --tls against a plain server: one line saying what is likely wrong.
    auto plain = start(1);
    ASSERT_TRUE(plain->ready());
    auto to_plain = run_program("strix-chat-client",
                                {"--tls", "--ca", certs_.ca, "--port", std::to_string(plain->port()), "--name", "erin",
                                 "--password", "pw", "--state-dir", dir_.path() + "/state"},
                                "/quit\n", log("to-plain"));
    EXPECT_EQ(to_plain.status, 1) << to_plain.output;
    EXPECT_NE(to_plain.output.find("does the server serve TLS on this port?"), std::string::npos) << to_plain.output;
    stop_cleanly(*plain);
}

STRIX_CHAT_BACKENDS(chat_tls);

// libpq's own sslmode, through --pg-sslmode: the test cluster has no certificate, so "require"
// must fail in libpq's words (the mode reached it) and "disable" must connect. Over TCP: libpq
// ignores sslmode on a Unix socket.
TEST(chat_tls_postgres, pg_sslmode_reaches_libpq) {
    temp_dir dir;
    shared_pg_server().create_database("strix_tls_sslmode");
    const std::string url = shared_pg_server().tcp_url_for("strix_tls_sslmode");
    auto require = run_program("strix-chat-server", server_process::args(url, 1, {"--pg-sslmode", "require"}), "",
                               dir.path() + "/r.log");
    EXPECT_EQ(require.status, 1) << require.output;
    EXPECT_NE(require.output.find("?sslmode=require"), std::string::npos) << require.output;
    EXPECT_NE(require.output.find("SSL"), std::string::npos) << require.output;

    server_process ok(url, dir.path() + "/ok.log", 1, {"--pg-sslmode", "disable"});
    ASSERT_TRUE(ok.ready()) << ok.log();
    EXPECT_NE(ok.log().find("database " + url + "?sslmode=disable"), std::string::npos) << ok.log();
    const int st = ok.stop();
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << ok.log();

    auto sqlite = run_program("strix-chat-server",
                              server_process::args("sqlite:" + dir.path() + "/x.db", 1, {"--pg-sslmode", "require"}),
                              "", dir.path() + "/s.log");
    EXPECT_EQ(sqlite.status, 2) << sqlite.output;
    EXPECT_NE(sqlite.output.find("--pg-sslmode applies to a postgresql:// --db only"), std::string::npos)
        << sqlite.output;
}

}  // namespace
