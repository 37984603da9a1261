#include "chat_options.hpp"

#include "apps/chat/server/rooms/room_id.hpp"

#include <CLI/CLI.hpp>

#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <type_traits>
#include <vector>

namespace strix::chat {
namespace {

// CLI11's own TOML reader for --config, with two checks it does not make by itself: every key must
// be a long option name (its own error for a typo says only "INI was not able to parse KEY"), and
// every key needs a value (it would give `port =` the type's default, 0, without a word).
class config_reader : public CLI::ConfigTOML {
public:
    explicit config_reader(const CLI::App& app) : app_(app) {}

    std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
        std::vector<CLI::ConfigItem> read = CLI::ConfigTOML::from_config(input);
        for (const CLI::ConfigItem& item : read) {
            if (!item.parents.empty())
                throw CLI::ConfigError("table [" + item.parents.front() +
                                       "] is not allowed: write every key at the top");
            if (app_.get_option_no_throw("--" + item.name) == nullptr)
                throw CLI::ConfigError("unknown key '" + item.name +
                                       "' (the keys are the long option names, see --help)");
            // `key = []` or an unclosed `[`: no value at all, and CLI11 2.1 would read the first of
            // none (SIGSEGV; found by fuzz/chat_config_fuzz.cpp).
            if (item.inputs.empty())
                throw CLI::ConfigError("key '" + item.name + "' has no value (leave the key out to keep the default)");
            for (const std::string& value : item.inputs) {
                if (value.empty())
                    throw CLI::ConfigError("key '" + item.name +
                                           "' has no value (leave the key out to keep the default)");
            }
        }
        return read;
    }

private:
    const CLI::App& app_;
};

// One sentence for a command line or config file CLI11 rejected.
std::string parse_error_sentence(const CLI::App& app, const CLI::ParseError& e) {
    const CLI::Option* config = app.get_config_ptr();
    const std::string path = config != nullptr && config->count() > 0 ? config->as<std::string>() : "";
    if (dynamic_cast<const CLI::ConfigError*>(&e) != nullptr) return "config file " + path + ": " + e.what();
    if (dynamic_cast<const CLI::FileError*>(&e) != nullptr) return std::string("--config: ") + e.what();
    return std::string(e.what()) + " (see --help)";
}

// CLI11 2.1 reads no std::chrono types: a duration option takes a whole number of the duration's
// units. A negative number is not stored but noted in `negative`, for parse_options to refuse
// in one sentence once parsing is over.
template <class Rep, class Duration>
CLI::Option* add_duration(CLI::App& app, const std::string& name, Duration& target, bool& negative,
                          const std::string& help) {
    return app
        .add_option_function<Rep>(
            name,
            [&target, &negative](const Rep& v) {
                if constexpr (std::is_signed_v<Rep>) {
                    if (v < 0) {
                        negative = true;
                        return;
                    }
                } else {
                    (void)negative;  // an unsigned option is never negative
                }
                target = Duration(v);
            },
            help)
        ->default_str(std::to_string(target.count()));
}

// A numeric address that other hosts can reach ("*" is every address). A name is neither: the
// listener refuses it later with its own sentence (addresses must be numeric).
bool listens_beyond_loopback(const std::string& host) {
    if (host == "*") return true;
    in_addr a4{};
    in6_addr a6{};
    const bool numeric = ::inet_pton(AF_INET, host.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &a6) == 1;
    return numeric && !is_loopback_host(host);
}

// The query parameter `key` in a postgresql:// URL (libpq's URI form: ?key=value&...).
bool url_has_param(const std::string& url, const std::string& key) {
    const std::size_t q = url.find('?');
    if (q == std::string::npos) return false;
    for (std::size_t at = q + 1; at < url.size();) {
        const std::size_t end = std::min(url.find('&', at), url.size());
        if (url.compare(at, key.size() + 1, key + "=") == 0) return true;
        at = end + 1;
    }
    return false;
}

// An --ws-origins entry: "*" or scheme://host[:port] with an http or https scheme, nothing after.
bool valid_origin(const std::string& o) {
    if (o == "*") return true;
    std::size_t host = 0;
    if (o.rfind("http://", 0) == 0)
        host = 7;
    else if (o.rfind("https://", 0) == 0)
        host = 8;
    else
        return false;
    return o.size() > host && o.find('/', host) == std::string::npos;
}

std::string validate_ws(const chat_options& o) {
    const ws_listen_options& ws = o.ws;
    if (!ws.enabled) return {};
    if (ws.path.size() < 2 || ws.path[0] != '/' || ws.path.find_first_of("?# ") != std::string::npos)
        return "--ws-path must start with / and name a path other than / (which serves the web page), e.g. /ws";
    // The page's origin follows from a specific address; behind a wildcard only the operator knows it.
    in_addr a4{};
    in6_addr a6{};
    const bool wildcard = o.server.host == "*" ||
                          (::inet_pton(AF_INET, o.server.host.c_str(), &a4) == 1 && a4.s_addr == htonl(INADDR_ANY)) ||
                          (::inet_pton(AF_INET6, o.server.host.c_str(), &a6) == 1 && IN6_IS_ADDR_UNSPECIFIED(&a6));
    if (wildcard && ws.origins.empty())
        return "--ws-port on --host " + o.server.host +
               " needs --ws-origins naming the web page's origins (e.g. https://chat.example.com), or * for any";
    if (ws.port != 0 && (ws.port == o.server.port || ws.port == o.metrics_port))
        return "--ws-port must differ from --port and --metrics-port";
    for (const std::string& origin : ws.origins) {
        if (!valid_origin(origin))
            return "--ws-origins takes * or origins like https://chat.example.com (scheme://host[:port], no path), "
                   "got '" +
                   origin + "'";
    }
    return {};
}

}  // namespace

bool is_loopback_host(const std::string& host) {
    in_addr a4{};
    if (::inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    in6_addr a6{};
    if (::inet_pton(AF_INET6, host.c_str(), &a6) != 1) return false;
    if (IN6_IS_ADDR_LOOPBACK(&a6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127;
}

std::string validate(const chat_options& o) {
    if (o.db.rfind("sqlite:", 0) != 0 && o.db.rfind("postgresql://", 0) != 0 && o.db.rfind("postgres://", 0) != 0)
        return "--db must be sqlite:<path> or a postgresql:// URL, got '" + o.db + "'";
    if (o.db == "sqlite:") return "--db sqlite: needs a file path, e.g. sqlite:var/strix.db";
    if (auto err = validate_cluster(o.cluster, o.db); !err.empty()) return err;
    if (auto err = validate_hooks(o.hooks); !err.empty()) return err;
    if (o.engine.shards > shard_stamp::max_shards)
        return "--shards must be at most 256 (room ids carry the owner shard in 8 bits)";
    if (!(o.chat_rate > 0) || !std::isfinite(o.chat_rate))
        return "--chat-rate must be a positive number of messages per second";
    if (!(o.chat_burst >= 1) || !std::isfinite(o.chat_burst)) return "--chat-burst must be at least 1";
    if (o.db_workers == 0 || o.db_workers > 64) return "--db-workers must be between 1 and 64";
    if (o.db_queue == 0) return "--db-queue must be at least 1";
    if (o.login_queue == 0) return "--login-queue must be at least 1";
    if (!(o.room_rate > 0) || !std::isfinite(o.room_rate))
        return "--room-rate must be a positive number of room changes per second";
    if (!(o.room_burst >= 1) || !std::isfinite(o.room_burst)) return "--room-burst must be at least 1";
    // The login's room list must fit one frame (about 28 bytes a room).
    if (o.max_rooms_per_account == 0 || o.max_rooms_per_account > 1000)
        return "--max-rooms-per-account must be between 1 and 1000";
    const login_throttle_config& t = o.login_throttle;
    if (t.account_free == 0 || t.account_lockout < t.account_free)
        return "--login-free-failures must be at least 1 and at most --login-lockout-failures";
    if (t.address_free == 0 || t.address_lockout < t.address_free)
        return "--address-free-failures must be at least 1 and at most --address-lockout-failures";
    if (t.backoff.count() <= 0 || t.lockout < t.backoff)
        return "--login-backoff-ms must be positive and at most --login-lockout-ms";
    if (o.device_token_ttl > std::chrono::days(3650)) return "--device-token-days must be at most 3650 (ten years)";
    if (o.resume_token_ttl > std::chrono::minutes(60 * 24 * 365))
        return "--resume-token-minutes must be at most 525600 (a year)";
    if (o.resume_max == 0) return "--resume-max must be at least 1";
    if (o.retention_batch == 0 || o.retention_batch > 100000) return "--retention-batch must be between 1 and 100000";
    if (retention_enabled(o) && o.retention_interval.count() <= 0)
        return "--retention-interval-ms must be positive when a retention limit is set";
    if (o.engine.poll_spin > std::chrono::seconds(1)) return "--poll-spin-us must be at most 1000000 (one second)";
    if (o.commit_delay_us > 1'000'000) return "--commit-delay-us must be at most 1000000 (one second)";
    if (o.server.port != 0 && o.metrics_port == o.server.port) return "--metrics-port must differ from --port";
    if (o.server.unix_path.size() >= 108) return "--unix path must be shorter than 108 bytes (sockaddr_un's limit)";
    if (o.tls.cert_file.empty() != o.tls.key_file.empty())
        return "--tls-cert and --tls-key go together: give both PEM files (the certificate chain and its key), or "
               "neither";
    const bool tls = !o.tls.cert_file.empty();
    if (tls && o.insecure_plaintext) return "--insecure-plaintext contradicts --tls-cert: leave out one of them";
    // Secure by default: a client that reaches the port from another machine would send its
    // password and device token in clear.
    if (o.server.tcp && !tls && !o.insecure_plaintext && listens_beyond_loopback(o.server.host))
        return "--host " + o.server.host +
               " is reachable from other machines and plain TCP would carry passwords and device tokens in clear: "
               "give --tls-cert FILE --tls-key FILE (README, \"Chat over TLS\", shows how to make a certificate), "
               "listen on 127.0.0.1, or pass --insecure-plaintext to serve plain TCP anyway";
    if (!tls && !o.insecure_plaintext && o.ws.enabled && listens_beyond_loopback(o.server.host))
        return "--host " + o.server.host +
               " is reachable from other machines and plain ws:// would carry passwords and device tokens in clear: "
               "give --tls-cert FILE --tls-key FILE (the WebSocket port then serves wss://), listen on 127.0.0.1, "
               "or pass --insecure-plaintext";
    if (auto err = validate_ws(o); !err.empty()) return err;
    if (auto err = validate_api(o); !err.empty()) return err;
    if (!o.pg_sslmode.empty()) {
        if (o.db.rfind("sqlite:", 0) == 0) return "--pg-sslmode applies to a postgresql:// --db only";
        if (url_has_param(o.db, "sslmode"))
            return "--pg-sslmode and the --db URL's sslmode= both set the mode: leave out one of them";
    }
    return {};
}

parse_result parse_options(int argc, char** argv) {
    chat_options o;
    CLI::App app{"strix-chat-server: rooms and chat over strix frames (docs/protocol.md)", "strix-chat-server"};
    session_limits& limits = o.server.limits;
    login_throttle_config& throttle = o.login_throttle;
    std::string password_cost = "interactive";
    bool negative_timeout = false;
    std::string ack = "stored";
    // A repeated option takes its last value, so a wrapper script can override what it passed.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    // Keys in the file are the long option names; CLI11 applies them to the options the command
    // line left unset, gives booleans only to flags, and refuses a `config` key inside the file.
    app.set_config("--config", "", "TOML file with the same keys as the long options (command line wins)")
        ->type_name("FILE");
    app.config_formatter(std::make_shared<config_reader>(app));
    app.add_option("--host", o.server.host, "address to listen on")->capture_default_str();
    app.add_option("--port", o.server.port, "TCP port for clients (0 = any free port)")->capture_default_str();
    app.add_option("--unix", o.server.unix_path, "also accept clients on this Unix socket path (same protocol)");
    app.add_option("--db", o.db, "database: sqlite:<path> (parent directory created) or postgresql://...")
        ->capture_default_str();
    add_cluster_options(app, o.cluster);
    add_jwt_options(app, o.jwt);
    add_hook_options(app, o.hooks);
    add_api_options(app, o.api);
    app.add_option("--tls-cert", o.tls.cert_file,
                   "TLS on the TCP port: the server's certificate (PEM, then its chain); reloaded on SIGHUP")
        ->type_name("FILE");
    app.add_option("--tls-key", o.tls.key_file, "the private key of --tls-cert (PEM); reloaded on SIGHUP")
        ->type_name("FILE");
    app.add_flag("--insecure-plaintext", o.insecure_plaintext,
                 "serve plain TCP on a --host other machines can reach (without it, such a server needs --tls-cert)");
    app.add_option("--pg-sslmode", o.pg_sslmode,
                   "libpq sslmode for a postgresql:// --db (default: libpq's, prefer); verify-full also needs "
                   "sslrootcert=FILE in the URL or ~/.postgresql/root.crt")
        ->check(CLI::IsMember({"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}))
        ->type_name("MODE");
    app.add_option_function<std::uint16_t>(
           "--ws-port",
           [&o](const std::uint16_t& port) {
               o.ws.enabled = true;
               o.ws.port = port;
           },
           "WebSocket clients (browsers) on this port of --host, and the web chat page at / (0 = any free port; "
           "wss:// with --tls-cert); off without it")
        ->type_name("PORT");
    app.add_option("--ws-path", o.ws.path, "the path of the WebSocket upgrade on --ws-port")->capture_default_str();
    app.add_option("--ws-origins", o.ws.origins,
                   "browser origins allowed to open a WebSocket, comma-separated, or *; default: only the page's own "
                   "origin (and clients that send no Origin)")
        ->delimiter(',')
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
        ->type_name("ORIGINS");
    app.add_option("--metrics-port", o.metrics_port, "Prometheus /metrics on 127.0.0.1 (0 = off)")
        ->capture_default_str();
    app.add_option("--shards", o.engine.shards, "shards (threads); 0 = one per online CPU")->capture_default_str();
    app.add_flag("--fd-table-per-shard", o.engine.fd_table_per_shard,
                 "give each shard its own descriptor table, so RLIMIT_NOFILE caps each shard's connections "
                 "rather than the process's (for more connections than the hard limit; Unix socket "
                 "connections then all stay on shard 0)");
    // One option with a negated name, so `auto-register = false` in the file means what it says.
    app.add_flag("--auto-register,!--no-auto-register", o.auto_register,
                 "the first login of an unknown name creates the account (default); --no-auto-register rejects "
                 "logins of unknown names");
    app.add_option("--chat-rate", o.chat_rate, "chat messages per second per session")->capture_default_str();
    app.add_option("--chat-burst", o.chat_burst, "chat messages a session may send at once")->capture_default_str();
    app.add_option("--password-cost", password_cost, "argon2id cost: interactive (default) or fast (tests, load runs)")
        ->check(CLI::IsMember({"interactive", "fast"}))
        ->capture_default_str();
    app.add_option("--db-workers", o.db_workers, "database threads")->capture_default_str();
    app.add_option("--db-queue", o.db_queue, "chat log records queued for the database before chat is refused")
        ->capture_default_str();
    app.add_option("--ack", ack,
                   "when a chat message is acknowledged: stored (after the database commit) or early (when "
                   "queued for the database: faster, but a crash loses the messages not yet committed)")
        ->check(CLI::IsMember({"stored", "early"}))
        ->capture_default_str();
    app.add_option("--commit-delay-us", o.commit_delay_us,
                   "group commit: the chat log writer gathers this long after a batch's first entry (0 = at once)")
        ->capture_default_str();
    app.add_option("--max-queued", limits.max_queued, "queued output (bytes) that disconnects a slow consumer")
        ->capture_default_str();
    add_duration<std::int64_t>(app, "--stall-timeout-ms", limits.stall_timeout, negative_timeout,
                               "output not drained this long disconnects a slow consumer (0 = never)");
    add_duration<std::int64_t>(app, "--idle-timeout-ms", limits.idle_timeout, negative_timeout,
                               "close connections silent this long (0 = never)");
    add_duration<std::int64_t>(app, "--login-timeout-ms", limits.handshake_timeout, negative_timeout,
                               "close connections not logged in this long after connecting (0 = never)");
    add_duration<std::int64_t>(
        app, "--frame-timeout-ms", limits.frame_timeout, negative_timeout,
        "close connections whose frame is not complete this long after its first byte (0 = never)");
    app.add_option("--max-connections", o.server.max_sessions,
                   "connections open at once; more are refused (0 = no cap)")
        ->capture_default_str();
    app.add_option("--max-connections-per-address", o.server.max_sessions_per_address,
                   "connections open at once from one IP address; more are refused (0 = no cap)")
        ->capture_default_str();
    app.add_option("--login-queue", o.login_queue,
                   "logins (password hashes) queued or running at once; more get server_busy")
        ->capture_default_str();
    app.add_option("--login-free-failures", throttle.account_free, "failed logins of one account before backoff")
        ->capture_default_str();
    app.add_option("--login-lockout-failures", throttle.account_lockout, "failed logins of one account before lockout")
        ->capture_default_str();
    app.add_option("--address-free-failures", throttle.address_free, "failed logins from one address before backoff")
        ->capture_default_str();
    app.add_option("--address-lockout-failures", throttle.address_lockout,
                   "failed logins from one address before lockout")
        ->capture_default_str();
    add_duration<std::int64_t>(app, "--login-backoff-ms", throttle.backoff, negative_timeout,
                               "first wait after the free failures; doubles per failure");
    add_duration<std::int64_t>(app, "--login-lockout-ms", throttle.lockout, negative_timeout,
                               "lockout after the lockout failures (also how long failures are remembered)");
    add_duration<std::int64_t>(app, "--device-token-days", o.device_token_ttl, negative_timeout,
                               "a successful login hands the client a device token valid this long, which exempts "
                               "its next logins from the per-name lockout (0 = no device tokens)");
    app.add_option("--revoke-device-tokens", o.revoke_device_tokens,
                   "do not serve: delete every device and resume token of this account from --db (log it out "
                   "of the lockout exemption and of token logins everywhere, e.g. after its password leaked) and exit")
        ->type_name("NAME")
        ->configurable(false);
    add_duration<std::int64_t>(app, "--resume-token-minutes", o.resume_token_ttl, negative_timeout,
                               "a successful login hands the client a resume token valid this long, with which a "
                               "reconnect logs in without the password (0 = no resume tokens)");
    app.add_option("--resume-max", o.resume_max,
                   "a resume_req missing more messages than this gets a gap answer (fetch history instead)")
        ->capture_default_str();
    add_duration<std::int64_t>(app, "--retention-max-age-s", o.retention_max_age, negative_timeout,
                               "delete stored messages older than this many seconds (0 = keep regardless of age)");
    app.add_option("--retention-max-per-room", o.retention_max_per_room,
                   "keep only each room's newest this many stored messages (0 = no count limit)")
        ->capture_default_str();
    app.add_option("--retention-batch", o.retention_batch, "rows one retention DELETE removes at most")
        ->capture_default_str();
    add_duration<std::int64_t>(app, "--retention-interval-ms", o.retention_interval, negative_timeout,
                               "how often retention walks the rooms");
    app.add_option("--room-rate", o.room_rate, "room changes (create, join) per second per session")
        ->capture_default_str();
    app.add_option("--room-burst", o.room_burst, "room changes a session may make at once")->capture_default_str();
    app.add_option("--max-rooms-per-account", o.max_rooms_per_account,
                   "rooms an account may belong to (protocol version 2)")
        ->capture_default_str();
    add_duration<std::int64_t>(
        app, "--notice-delay-ms", o.notice_delay, negative_timeout,
        "member_joined/member_left wait this long so a quick join+leave sends neither (0 = at once)");
    app.add_option("--member-list-limit", o.member_list_limit,
                   "a room with more members than this is large: joins, leaves and presence changes send no "
                   "notices and join_room_res lists no members, only the counts")
        ->capture_default_str();
    app.add_flag("--pin,!--no-pin", o.engine.pin_threads,
                 "pin shard i to the i-th allowed CPU (docs/architecture.md, \"Pinning\")")
        ->capture_default_str();
    std::string io = "auto";
    app.add_option("--io", io,
                   "I/O backend: auto (STRIX_IO, else io_uring where the kernel allows it, else epoll), uring or epoll")
        ->check(CLI::IsMember({"auto", "epoll", "uring"}))
        ->capture_default_str();
    add_duration<std::uint32_t>(
        app, "--poll-spin-us", o.engine.poll_spin, negative_timeout,
        "after a loop turn with work, shards keep polling this many microseconds before sleeping (0 = off)");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return {std::nullopt, app.exit(e)};  // --help: printed, status 0
        std::fprintf(stderr, "strix-chat-server: %s\n", parse_error_sentence(app, e).c_str());
        return {std::nullopt, 2};
    }
    o.fast_passwords = password_cost == "fast";
    if (negative_timeout) {
        std::fprintf(stderr, "strix-chat-server: timeouts and durations must not be negative\n");
        return {std::nullopt, 2};
    }
    o.engine.io = io == "uring" ? io_backend::uring : io == "epoll" ? io_backend::epoll : io_backend::automatic;
    o.ack = ack == "early" ? ack_mode::early : ack_mode::stored;
    std::string err = settle_jwt(o.jwt);
    if (err.empty()) err = validate(o);
    if (!err.empty()) {
        std::fprintf(stderr, "strix-chat-server: %s\n", err.c_str());
        return {std::nullopt, 2};
    }
    // libpq reads the mode from the URL like any of its parameters.
    if (!o.pg_sslmode.empty()) {
        o.db += (o.db.find('?') == std::string::npos ? "?sslmode=" : "&sslmode=") + o.pg_sslmode;
        o.pg_sslmode.clear();
    }
    return {o, 0};
}

}  // namespace strix::chat
