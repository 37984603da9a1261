#pragma once
// chat_options: everything strix-chat-server can be told, from the command line and optionally a
// TOML file (--config, read by CLI11: `key = value` lines whose keys are the long option names;
// command-line values win). What the engine, the server and the login throttle take lives in
// their own config structs, embedded here and filled by the parser, not copied field by field.

#include "apps/chat/server/hooks/hook_options.hpp"
#include "apps/chat/server/login/login_throttle.hpp"
#include "apps/chat/server/options/api_options.hpp"
#include "apps/chat/server/options/cluster_options.hpp"
#include "apps/chat/server/options/jwt_options.hpp"

#include <strix/core/engine.hpp>
#include <strix/net/server.hpp>
#include <strix/net/tls.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strix::chat {

/// The WebSocket listener (--ws-port, --ws-path, --ws-origins): browsers and other WebSocket
/// clients, as ordinary chat members, on its own port beside the TCP one, with the web chat page
/// at `/`. It listens on --host, with TLS (wss://) when --tls-cert is given.
struct ws_listen_options {
    bool enabled = false;       // --ws-port was given
    std::uint16_t port = 0;     // 0 = any free port (the server tells which)
    std::string path = "/ws";   // where the upgrade is accepted; `/` serves the page
    // Origin header values allowed to upgrade. Empty (the default): the page's own origin only,
    // i.e. an Origin equal to http(s)://<the request's Host>, and clients that send no Origin
    // (programs, not browsers: a browser always sends one). "*": any origin. Otherwise exact
    // origins such as "https://chat.example.com" (scheme://host[:port], no path).
    std::vector<std::string> origins;
};

/// When a chat message is acknowledged (its chat_msg goes out, the sender's copy included).
enum class ack_mode : std::uint8_t {
    stored,  // after the database committed it: no acknowledged message is lost in a crash
    early,   // as soon as it is queued for the database: faster, a crash loses what was not committed
};

struct chat_options {
    // The engine as strix::engine takes it: --shards, --pin, --io, --poll-spin-us (the rest keeps
    // the engine's defaults).
    engine_config engine;
    // The client listeners as strix::server takes them: --host, --port, --unix, the connection caps
    // (--max-connections, --max-connections-per-address; 0 = none: beyond them a connection is
    // accepted and reset at once) and the session limits: --max-queued, --stall-timeout-ms (a slow
    // consumer), --idle-timeout-ms, --frame-timeout-ms, and --login-timeout-ms as the handshake
    // timeout (a login ends it). Timeouts: 0 = never; before login the login timeout is the
    // shorter one, idle is for logged-in sessions that send nothing (ping_req counts). chat_server
    // adds the framing and the frame sizes.
    server_config server{.port = 7000,
                         .limits = {.max_queued = 4 * 1024 * 1024,
                                    .idle_timeout = std::chrono::milliseconds(300000),
                                    .stall_timeout = std::chrono::milliseconds(5000),
                                    .frame_timeout = std::chrono::milliseconds(10000),
                                    .handshake_timeout = std::chrono::milliseconds(10000)},
                         .max_sessions = 10000,
                         .max_sessions_per_address = 256};  // Unix-socket clients count in the total only
    // --tls-cert FILE --tls-key FILE: TLS on the TCP port (the Unix socket stays plain), loaded as
    // strix::tls_server takes it before the engine starts, reloaded on SIGHUP. Empty: plain TCP,
    // which validate() allows only on a loopback --host unless --insecure-plaintext is given.
    tls_server_config tls;
    bool insecure_plaintext = false;
    ws_listen_options ws;
    // --pg-sslmode MODE: libpq's sslmode for a postgresql:// --db (disable, allow, prefer, require,
    // verify-ca, verify-full), added to the URL as ?sslmode=MODE by parse_options (and then
    // cleared); the URL's own parameters (sslmode, sslrootcert, sslcert, sslkey) pass through.
    std::string pg_sslmode;
    // The failed-login throttle (login_throttle.hpp): --login-free-failures, --login-lockout-failures
    // (per account name), --address-free-failures, --address-lockout-failures (per source
    // address), --login-backoff-ms (the first wait, doubled per failure), --login-lockout-ms.
    login_throttle_config login_throttle;
    // --device-token-days: how long a device token a login hands out stays valid (docs/protocol.md,
    // "Device tokens"); 0 = none handed out, and presented ones are ignored.
    std::chrono::days device_token_ttl{30};
    // --revoke-device-tokens NAME: instead of serving, delete every device token of NAME from --db
    // and exit (the server may be running meanwhile: its next lookup finds none).
    std::string revoke_device_tokens;
    // --resume-token-minutes: how long a resume token (docs/protocol.md, "Resume tokens": a
    // reconnect logs in with it instead of the password) stays valid; 0 = none handed out, and
    // presented ones are refused (invalid_token, or the password decides when one is given).
    std::chrono::minutes resume_token_ttl{24 * 60};
    // --resume-max: a resume_req that would return more messages than this gets a gap answer
    // (so does one whose messages exceed resume_max_bytes(), a share of --max-queued).
    std::uint32_t resume_max = 1000;
    // Retention (docs/protocol.md, "History and retention"): --retention-max-age-s (messages
    // older than this go; 0 = no age limit), --retention-max-per-room (each room keeps its newest
    // this many; 0 = no count limit), enforced in the background every --retention-interval-ms
    // in DELETEs of at most --retention-batch rows.
    std::chrono::seconds retention_max_age{0};
    std::uint64_t retention_max_per_room = 0;
    std::uint32_t retention_batch = 500;
    std::chrono::milliseconds retention_interval{1000};
    std::string db = "sqlite:var/strix.db";  // sqlite:<path> or postgresql://...
    cluster_options cluster;                  // --cluster, --node-id, ... (cluster_options.hpp)
    jwt_options jwt;                          // --jwt-key, --logins, ... (jwt_options.hpp)
    hook_options hooks;                       // --webhook-*, --publish-hook-* (docs/webhooks.md)
    api_options api;                          // --api-port, --api-keys, ... (api_options.hpp)
    std::uint16_t metrics_port = 9100;       // 0 = no metrics endpoint
    bool auto_register = true;               // first login of an unknown name creates the account
    double chat_rate = 50.0;                 // chat_req per second per session (token bucket refill)
    double chat_burst = 100.0;               // bucket size
    bool fast_passwords = false;             // --password-cost fast: cheap hashes, for tests and load runs
    unsigned db_workers = 2;                 // database threads (logins, chat log writes)
    std::size_t db_queue = 65536;            // chat log records the writer may hold before refusing
    ack_mode ack = ack_mode::stored;         // --ack stored|early (docs/protocol.md, "Durability")
    std::uint32_t commit_delay_us =
        0;       // group commit gathers this long after a batch's first entry (0: commit when free)
    // Logins: password hashes queued or running at once (beyond: server_busy).
    std::size_t login_queue = 64;
    // Room changes (create_room_req, join_room_req) per session: token bucket like chat.
    double room_rate = 5.0;
    double room_burst = 10.0;
    // The rooms an account may belong to (protocol version 2; version 1 sessions are in one).
    std::size_t max_rooms_per_account = 100;
    // member_joined / member_left wait this long at the room's owner, so that a join and a leave
    // of one session inside the window cancel out (0 = sent at once, nothing coalesced).
    std::chrono::milliseconds notice_delay{100};
    // A room with more member accounts than this is large: its joins, leaves and presence
    // changes send no notices and join_room_res lists no members (docs/protocol.md, "Large
    // rooms"), so that a join costs O(1) rather than O(members).
    std::size_t member_list_limit = 1000;
};

/// The most bytes of stored messages one resume answer carries: a quarter of --max-queued (so
/// the answer never makes the session a slow consumer), at most 1 MiB, at least 64 KiB. Any thread.
inline std::size_t resume_max_bytes(const chat_options& o) {
    const std::size_t quarter = o.server.limits.max_queued / 4;
    return std::clamp<std::size_t>(quarter, 64 * 1024, 1024 * 1024);
}

/// Whether a retention policy is set. Any thread.
inline bool retention_enabled(const chat_options& o) {
    return o.retention_max_age.count() > 0 || o.retention_max_per_room > 0;
}

/// What parse_options() decided: run with these options, or exit now with this status
/// (after --help, or after printing a one-sentence error to stderr).
struct parse_result {
    std::optional<chat_options> options;
    int exit_code = 0;
};

/// Parses argv (and --config FILE). Prints help or one clear error sentence itself.
/// Main thread, before the server starts.
parse_result parse_options(int argc, char** argv);

/// Checks value ranges and the secure-by-default rule (plain TCP only on a loopback address);
/// returns an empty string when valid, else one sentence naming the problem and the fix. Any
/// thread.
std::string validate(const chat_options& o);

/// True for an address that only this host can reach: 127.0.0.0/8, ::1 (and ::ffff:127.x.y.z).
/// "*", 0.0.0.0, :: and every other address are not. Any thread.
bool is_loopback_host(const std::string& host);

}  // namespace strix::chat
