#pragma once
// chat_options: everything strix-chat-server can be told, from the command line and optionally a
// TOML file (--config, read by CLI11: `key = value` lines whose keys are the long option names;
// command-line values win).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace strix::chat {

struct chat_options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 7000;
    std::string unix_path;                   // also accept clients on this Unix socket path
    std::string db = "sqlite:var/strix.db";  // sqlite:<path> or postgresql://...
    std::uint16_t metrics_port = 9100;       // 0 = no metrics endpoint
    unsigned shards = 0;                     // 0 = one per online CPU
    bool auto_register = true;               // first login of an unknown name creates the account
    double chat_rate = 50.0;                 // chat_req per second per session (token bucket refill)
    double chat_burst = 100.0;               // bucket size
    bool fast_passwords = false;             // --password-cost fast: cheap hashes, for tests and load runs
    unsigned db_workers = 2;                 // database threads (logins, chat log writes)
    std::size_t db_queue = 65536;            // chat log records the writer may hold before refusing
    std::size_t max_queued = 4 * 1024 * 1024;          // queued output that disconnects a slow consumer
    std::chrono::milliseconds stall_timeout{5000};     // output not drained this long = slow consumer
    std::chrono::milliseconds idle_timeout{0};         // 0 = never
    bool pin_threads = true;
    std::uint32_t poll_spin_us = 0;                    // shards busy-poll this long after work (0 = sleep at once)
};

/// What parse_options() decided: run with these options, or exit now with this status
/// (after --help, or after printing a one-sentence error to stderr).
struct parse_result {
    std::optional<chat_options> options;
    int exit_code = 0;
};

/// Parses argv (and --config FILE). Prints help or one clear error sentence itself.
/// Main thread, before the server starts.
parse_result parse_options(int argc, char** argv);

/// Checks value ranges; returns an empty string when valid, else one sentence naming the
/// problem and the fix. Any thread.
std::string validate(const chat_options& o);

}  // namespace strix::chat
