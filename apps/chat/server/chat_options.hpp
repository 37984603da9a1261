#pragma once
// chat_options: everything strix-chat-server can be told, from the command line and optionally a
// TOML file (--config, read by CLI11: `key = value` lines whose keys are the long option names;
// command-line values win).

#include <strix/core/io_backend.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace strix::chat {

/// When a chat message is acknowledged (its chat_msg goes out, the sender's copy included).
enum class ack_mode : std::uint8_t {
    stored,  // after the database committed it: no acknowledged message is lost in a crash
    early,   // as soon as it is queued for the database: faster, a crash loses what was not committed
};

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
    ack_mode ack = ack_mode::stored;         // --ack stored|early (docs/protocol.md, "Durability")
    std::uint32_t commit_delay_us = 0;       // group commit gathers this long after a batch's first entry (0: commit when free)
    std::size_t max_queued = 4 * 1024 * 1024;          // queued output that disconnects a slow consumer
    std::chrono::milliseconds stall_timeout{5000};     // output not drained this long = slow consumer
    // Timeouts (0 = never). Before login the login timeout is the shorter one; idle is for
    // logged-in sessions that send nothing (ping_req counts).
    std::chrono::milliseconds login_timeout{10000};    // no successful login this long after connecting: closed
    std::chrono::milliseconds frame_timeout{10000};    // a frame not complete this long after its first byte: closed
    std::chrono::milliseconds idle_timeout{300000};    // nothing received this long: closed
    // Connection caps (0 = none): beyond them a connection is accepted and reset at once.
    std::size_t max_connections = 10000;
    std::size_t max_connections_per_address = 256;     // TCP source addresses; Unix-socket clients count in the total
    // Logins: password hashes queued or running at once (beyond: server_busy), and the failed
    // login throttle (see login_throttle.hpp).
    std::size_t login_queue = 64;
    unsigned login_free_failures = 3;                  // per account name, before backoff
    unsigned login_lockout_failures = 10;              // per account name, before lockout
    unsigned address_free_failures = 20;               // per source address, before backoff
    unsigned address_lockout_failures = 100;           // per source address, before lockout
    std::chrono::milliseconds login_backoff{1000};     // first wait, doubled per failure
    std::chrono::milliseconds login_lockout{300000};   // the lockout
    // Room changes (create_room_req, join_room_req) per session: token bucket like chat.
    double room_rate = 5.0;
    double room_burst = 10.0;
    // member_joined / member_left wait this long at the room's owner, so that a join and a leave
    // of one session inside the window cancel out (0 = sent at once, nothing coalesced).
    std::chrono::milliseconds notice_delay{100};
    bool pin_threads = false;  // --pin (docs/architecture.md, "Pinning")
    io_backend io = io_backend::automatic;             // --io: epoll, uring, or auto (STRIX_IO, else epoll)
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
