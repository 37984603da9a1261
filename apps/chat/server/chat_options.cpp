#include "chat_options.hpp"

#include <CLI/CLI.hpp>

#if defined(STRIX_CHAT_HAVE_TOML)
#include <toml++/toml.h>
#endif

#include <cmath>
#include <cstdio>
#include <map>

namespace strix::chat {
namespace {

#if defined(STRIX_CHAT_HAVE_TOML)
// Applies the file's keys to options the command line left unset. The keys are the long option
// names without the dashes (port, db, metrics-port, ...); an unknown key is an error, so a typo
// cannot silently fall back to a default.
std::string apply_toml(const std::string& path, CLI::App& app) {
    toml::table tbl;
    try {
        tbl = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
        const auto& where = e.source().begin;
        return "config file " + path + " line " + std::to_string(where.line) + ": " + std::string(e.description());
    }
    for (auto&& [key, node] : tbl) {
        std::string name(key.str());
        CLI::Option* opt = nullptr;
        try {
            opt = app.get_option("--" + name);
        } catch (const CLI::OptionNotFound&) {
            return "config file " + path + ": unknown key '" + name + "' (see --help for the option names)";
        }
        if (name == "config") return "config file " + path + ": a config file cannot name another config file";
        if (opt->count() > 0) continue;  // the command line wins
        std::string value;
        if (node.is_string())
            value = *node.value<std::string>();
        else if (node.is_boolean())
            value = *node.value<bool>() ? "true" : "false";
        else if (node.is_integer())
            value = std::to_string(*node.value<std::int64_t>());
        else if (node.is_floating_point())
            value = std::to_string(*node.value<double>());
        else
            return "config file " + path + ": key '" + name + "' must be a string, number or boolean";
        try {
            if (node.is_boolean()) {
                // Only flags take booleans: true sets the flag, false sets its --no- twin if it
                // has one (auto-register) and otherwise leaves the default.
                if (value == "true") {
                    opt->add_result("true");
                    opt->run_callback();
                } else if (name == "auto-register") {
                    auto* neg = app.get_option("--no-auto-register");
                    neg->add_result("true");
                    neg->run_callback();
                }
            } else {
                opt->add_result(value);
                opt->run_callback();
            }
        } catch (const CLI::Error& e) {
            return "config file " + path + ": key '" + name + "': " + e.what();
        }
    }
    return {};
}
#endif

}  // namespace

std::string validate(const chat_options& o) {
    if (o.db.rfind("sqlite:", 0) != 0 && o.db.rfind("postgresql://", 0) != 0 && o.db.rfind("postgres://", 0) != 0)
        return "--db must be sqlite:<path> or a postgresql:// URL, got '" + o.db + "'";
    if (o.db == "sqlite:") return "--db sqlite: needs a file path, e.g. sqlite:var/strix.db";
    if (o.shards > 256) return "--shards must be at most 256 (room ids carry the owner shard in 8 bits)";
    if (!(o.chat_rate > 0) || !std::isfinite(o.chat_rate)) return "--chat-rate must be a positive number of messages per second";
    if (!(o.chat_burst >= 1) || !std::isfinite(o.chat_burst)) return "--chat-burst must be at least 1";
    if (o.db_workers == 0 || o.db_workers > 64) return "--db-workers must be between 1 and 64";
    if (o.db_queue == 0) return "--db-queue must be at least 1";
    if (o.poll_spin_us > 1'000'000) return "--poll-spin-us must be at most 1000000 (one second)";
    if (o.port != 0 && o.metrics_port == o.port) return "--metrics-port must differ from --port";
    if (o.unix_path.size() >= 108) return "--unix path must be shorter than 108 bytes (sockaddr_un's limit)";
    return {};
}

parse_result parse_options(int argc, char** argv) {
    chat_options o;
    CLI::App app{"strix-chat-server: rooms and chat over strix frames (docs/protocol.md)"};
    std::string password_cost = "interactive";
    std::string config_file;
    std::int64_t stall_ms = o.stall_timeout.count(), idle_ms = o.idle_timeout.count();
    bool no_pin = false;
    // A repeated option takes its last value, so a wrapper script can override what it passed.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    app.add_option("--config", config_file, "TOML file with the same keys as the long options (command line wins)");
    app.add_option("--host", o.host, "address to listen on")->capture_default_str();
    app.add_option("--port", o.port, "TCP port for clients (0 = any free port)")->capture_default_str();
    app.add_option("--unix", o.unix_path, "also accept clients on this Unix socket path (same protocol)");
    app.add_option("--db", o.db, "database: sqlite:<path> (parent directory created) or postgresql://...")
        ->capture_default_str();
    app.add_option("--metrics-port", o.metrics_port, "Prometheus /metrics on 127.0.0.1 (0 = off)")->capture_default_str();
    app.add_option("--shards", o.shards, "shards (threads); 0 = one per online CPU")->capture_default_str();
    bool reg_flag = false, noreg_flag = false;
    auto* reg = app.add_flag("--auto-register", reg_flag, "the first login of an unknown name creates the account (default)");
    auto* noreg = app.add_flag("--no-auto-register", noreg_flag, "reject logins of unknown names");
    reg->excludes(noreg);
    app.add_option("--chat-rate", o.chat_rate, "chat messages per second per session")->capture_default_str();
    app.add_option("--chat-burst", o.chat_burst, "chat messages a session may send at once")->capture_default_str();
    app.add_option("--password-cost", password_cost, "argon2id cost: interactive (default) or fast (tests, load runs)")
        ->check(CLI::IsMember({"interactive", "fast"}))
        ->capture_default_str();
    app.add_option("--db-workers", o.db_workers, "database threads")->capture_default_str();
    app.add_option("--db-queue", o.db_queue, "chat log records queued for the database before chat is refused")
        ->capture_default_str();
    app.add_option("--max-queued", o.max_queued, "queued output (bytes) that disconnects a slow consumer")
        ->capture_default_str();
    app.add_option("--stall-timeout-ms", stall_ms, "output not drained this long disconnects a slow consumer (0 = never)")
        ->capture_default_str();
    app.add_option("--idle-timeout-ms", idle_ms, "close connections silent this long (0 = never)")->capture_default_str();
    app.add_flag("--no-pin", no_pin, "do not pin shard threads to CPUs");
    app.add_option("--poll-spin-us", o.poll_spin_us,
                   "after a loop turn with work, shards keep polling this many microseconds before sleeping (0 = off)")
        ->capture_default_str();

    try {
        app.parse(argc, argv);
        if (!config_file.empty()) {
#if defined(STRIX_CHAT_HAVE_TOML)
            if (auto err = apply_toml(config_file, app); !err.empty()) {
                std::fprintf(stderr, "strix-chat-server: %s\n", err.c_str());
                return {std::nullopt, 2};
            }
#else
            std::fprintf(stderr, "strix-chat-server: --config needs TOML support; rebuild with libtomlplusplus-dev installed\n");
            return {std::nullopt, 2};
#endif
        }
    } catch (const CLI::ParseError& e) {
        return {std::nullopt, app.exit(e)};
    }
    if (noreg_flag) o.auto_register = false;
    o.fast_passwords = password_cost == "fast";
    if (stall_ms < 0 || idle_ms < 0) {
        std::fprintf(stderr, "strix-chat-server: timeouts must not be negative\n");
        return {std::nullopt, 2};
    }
    o.stall_timeout = std::chrono::milliseconds(stall_ms);
    o.idle_timeout = std::chrono::milliseconds(idle_ms);
    o.pin_threads = !no_pin;
    if (auto err = validate(o); !err.empty()) {
        std::fprintf(stderr, "strix-chat-server: %s\n", err.c_str());
        return {std::nullopt, 2};
    }
    return {o, 0};
}

}  // namespace strix::chat
