// strix-chat-client: an interactive terminal client for strix-chat-server (the Chat server
// portfolio's console client). Prompts for the name and password when they are not given; then
// /rooms, /create NAME, /join ID, /exit, /dm NAME TEXT, /kick NAME, ..., /help, /quit, and plain
// lines are chat in the current room (docs/chat-client.md). Works the same with stdin from a pipe,
// so it can be scripted (see chat_client_test.sh).

#include "chat_console.hpp"

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
    strix::chat::console_options o;
    CLI::App app{"strix-chat-client: chat with strix-chat-server from a terminal (or a pipe)", "strix-chat-client"};
    app.add_option("--host", o.host, "server address")->capture_default_str();
    app.add_option("--port", o.port, "server port")->capture_default_str();
    auto* tls = app.add_flag("--tls", o.tls,
                             "TLS to the server (strix-chat-server --tls-cert), its certificate verified against "
                             "--ca and the host name before the password is sent");
    app.add_option("--ca", o.ca_file, "CA certificate(s) to verify the server with (PEM; default: the system's)")
        ->type_name("FILE")
        ->needs(tls);
    app.add_option("--server-name", o.server_name,
                   "the name (or address) the server's certificate must carry, sent as SNI (default: --host)")
        ->type_name("NAME")
        ->needs(tls);
    app.add_option("--name", o.name, "account name (asked for when missing)");
    app.add_option("--password", o.password, "password (asked for when missing)");
    app.add_flag("!--no-device-token", o.device_token,
                 "neither present a stored device token nor store the one the server hands out (by default "
                 "it is kept per server and name, mode 0600, and exempts the next login from lockouts "
                 "caused by others' wrong guesses)");
    app.add_option("--state-dir", o.state_dir,
                   "where device tokens are kept (default: $XDG_STATE_HOME/strix-chat, else "
                   "~/.local/state/strix-chat)");
    std::string jwt_file;
    app.add_option("--jwt-file", jwt_file,
                   "log in with the JSON Web Token in FILE (a server with --jwt-key; the account is the token's sub) "
                   "instead of a name and password")
        ->type_name("FILE")
        ->check(CLI::ExistingFile);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    if (!jwt_file.empty()) {
        std::ifstream in(jwt_file);
        std::getline(in, o.jwt);
        while (!o.jwt.empty() && (o.jwt.back() == '\r' || o.jwt.back() == ' ')) o.jwt.pop_back();
        if (o.jwt.empty()) {
            std::fprintf(stderr, "strix-chat-client: --jwt-file %s holds no token\n", jwt_file.c_str());
            return 2;
        }
    }
    std::signal(SIGPIPE, SIG_IGN);
    strix::chat::chat_console console(std::move(o));
    return console.run();
}
