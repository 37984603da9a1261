#pragma once
// The chat server as a child process for black-box tests, over a fresh database per test:
// SQLite (a file in a temporary directory) or PostgreSQL (a database on the test binary's one
// throw-away cluster, tests/support/pg_server.hpp). Suites derive from chat_test and run once
// per back end.

#include <strix/core/asan_poison.hpp>  // STRIX_ASAN
#include "chat_test_client.hpp"

#include "apps/chat/storage/chat_store.hpp"
#include <support/loopback.hpp>
#include <support/pg_server.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace strix::test {
using namespace strix::chat;  // the chat application's storage and protocol types

#if STRIX_ASAN
inline constexpr bool sanitized = true;
#else
inline constexpr bool sanitized = false;
#endif

enum class backend { sqlite, postgres };

inline std::string read_file(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

/// strix-chat-server running as a child process on an ephemeral port.
class server_process {
public:
    /// Starts the server on `db_url` with --password-cost fast, no metrics, `shards` shards and
    /// `extra` arguments; waits until it says where it listens (ready_ says whether it did).
    server_process(const std::string& db_url, const std::string& log_path, unsigned shards = 2,
                   std::vector<std::string> extra = {})
        : log_(log_path), proc_("strix-chat-server", args(db_url, shards, std::move(extra)), log_path) {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        const std::string marker = "listening on 127.0.0.1:";
        while (std::chrono::steady_clock::now() < deadline) {
            auto text = read_file(log_);
            if (auto pos = text.find(marker); pos != std::string::npos) {
                port_ = static_cast<std::uint16_t>(std::stoi(text.substr(pos + marker.size())));
                return;
            }
            int status = 0;
            if (::waitpid(proc_.pid(), &status, WNOHANG) == proc_.pid()) {
                exited_ = true;
                exit_status_ = status;
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }

    bool ready() const { return port_ != 0; }
    std::uint16_t port() const { return port_; }
    std::string log() const { return read_file(log_); }
    /// The WebSocket port the server announced with --ws-port (0: none).
    std::uint16_t ws_port() const {
        // "web chat page http(s)://127.0.0.1:PORT/ (WebSocket ws(s)://127.0.0.1:PORT/ws)"
        const std::string page = "web chat page http", host = "://127.0.0.1:";
        auto text = log();
        auto pos = text.find(page);
        if (pos != std::string::npos) pos = text.find(host, pos);
        return pos == std::string::npos ? 0 : static_cast<std::uint16_t>(std::stoi(text.substr(pos + host.size())));
    }

    /// Sends sig and waits for the exit; returns the wait status (-1 on timeout).
    int stop(int sig = SIGTERM, std::chrono::milliseconds within = std::chrono::seconds(30)) {
        if (exited_) return exit_status_;
        proc_.signal(sig);
        exit_status_ = proc_.wait_exit(within);
        exited_ = exit_status_ != -1;
        return exit_status_;
    }

    pid_t pid() const { return proc_.pid(); }

    static std::vector<std::string> args(const std::string& db_url, unsigned shards, std::vector<std::string> extra) {
        std::vector<std::string> a{"--port",          "0",    "--db",     db_url,
                                   "--metrics-port",  "0",    "--shards", std::to_string(shards),
                                   "--password-cost", "fast", "--no-pin"};
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    }

private:
    std::string log_;
    child proc_;
    std::uint16_t port_ = 0;
    bool exited_ = false;
    int exit_status_ = -1;
};

/// Base of the chat suites: a fresh database of the parameter's back end per test.
class chat_test : public ::testing::TestWithParam<backend> {
protected:
    void SetUp() override {
        ASSERT_FALSE(dir_.path().empty());
        if (GetParam() == backend::sqlite) {
            db_url_ = "sqlite:" + dir_.path() + "/chat.db";
        } else {
            // A missing PostgreSQL is a failure, not a skip: it is a declared dependency.
            db_url_ = shared_pg_server().create_database();
        }
    }

    /// Starts a server on this test's database; fails the test if it does not come up.
    std::unique_ptr<server_process> start(unsigned shards = 2, std::vector<std::string> extra = {}) {
        auto log = dir_.path() + "/server" + std::to_string(++servers_) + ".log";
        auto s = std::make_unique<server_process>(db_url_, log, shards, std::move(extra));
        EXPECT_TRUE(s->ready()) << "server did not start:\n" << s->log();
        return s;
    }

    /// Opens the test's database directly (after the server exited) to check what it stored.
    std::unique_ptr<chat_store> open_store() { return open_chat_store(db_url_, password_policy::fast_for_tests()); }

    /// Expects a clean exit (status 0) after SIGTERM.
    static void stop_cleanly(server_process& s) {
        int status = s.stop(SIGTERM);
        ASSERT_NE(status, -1) << "server did not exit after SIGTERM";
        ASSERT_TRUE(WIFEXITED(status)) << "server died by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
                                       << "\n"
                                       << s.log();
        EXPECT_EQ(WEXITSTATUS(status), 0) << s.log();
    }

    temp_dir dir_;
    std::string db_url_;
    int servers_ = 0;
};

inline std::string backend_name(const ::testing::TestParamInfo<backend>& i) {
    return i.param == backend::sqlite ? "sqlite" : "postgres";
}

#define STRIX_CHAT_BACKENDS(suite)                                                                                \
    INSTANTIATE_TEST_SUITE_P(db, suite,                                                                           \
                             ::testing::Values(::strix::test::backend::sqlite, ::strix::test::backend::postgres), \
                             ::strix::test::backend_name)

}  // namespace strix::test
