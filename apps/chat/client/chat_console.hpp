#pragma once
// chat_console: the interactive terminal client, the Chat server portfolio's console client with
// commands instead of a numbered menu. One thread, poll() on stdin and the socket; with --tls the
// socket is non-blocking and OpenSSL runs on it (apps/chat/common/client_tls.hpp), the handshake
// done and the certificate verified before the login (password, device token) is sent.
//
// Input is taken one line at a time and each request waits for its answer before the next line
// is looked at (a chat line waits for its own chat_msg, which is its acknowledgement). So a script
// piped into stdin runs in order, exactly as typed by hand: "/create r" then "hello" never races.
// Server pushes (chat, join and leave notices) are printed whenever they arrive.
//
//   [room#seq] name: text       a chat message
//   [room#seq] * ben was kicked by ann   a moderator's notice (console_conversations.cpp)
//   * name joined room R        join / leave notices
//   error: <request>: <code>: <reason>
//
// Direct rooms (/dm NAME TEXT) are named "@peer"; moderation commands (/kick NAME ...) act in the
// current room on an account the client has seen there.

#include "apps/chat/common/client_tls.hpp"

#include <strix/codec/frame_codec.hpp>
#include <strix/core/format.hpp>

#include <flatbuffers/flatbuffers.h>
#include <strix/proto/chat_generated.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace strix::chat {

struct console_options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 7000;
    std::string name;      ///< empty: the first input line (prompted on a terminal)
    std::string password;  ///< empty: the next input line (prompted, without echo, on a terminal)
    std::chrono::milliseconds reply_timeout{10000};
    bool device_token = true;  ///< present the stored device token and store the new one (token_file.hpp)
    std::string state_dir;     ///< where device tokens are kept; empty: the XDG state directory
    bool tls = false;          ///< TLS to the server, its certificate verified
    std::string ca_file;       ///< trust anchors for --tls; empty: the system's trust store
    std::string server_name;   ///< the name (or address) to verify and send as SNI; empty: host
    std::string jwt;           ///< a JWT to log in with (--jwt-file); then no name or password is asked
};

class chat_console {
public:
    /// A console that will talk to o.host:o.port. Main thread.
    explicit chat_console(console_options o);
    ~chat_console();
    chat_console(const chat_console&) = delete;
    chat_console& operator=(const chat_console&) = delete;

    /// Connects, logs in and runs until /quit, the end of input, or a lost connection.
    /// Returns the exit status: 0 after /quit or end of input, 1 when connecting, logging in or
    /// the connection failed. Main thread.
    int run();

private:
    enum class waiting { nothing, login, rooms, create, join, leave, chat, pong, history, direct, block, moderate };

    bool connect_server();
    bool start_tls();
    bool read_tls();
    bool wait_socket(short events, std::chrono::steady_clock::time_point deadline);
    void read_stdin();
    bool read_socket();
    void next_lines();
    void command(const std::string& line);
    void on_frame(std::span<const std::byte> frame);
    void send(proto::msg_type type);
    void login();
    void prompt(const char* what);
    void echo(bool on);
    void help();
    void switch_to(std::uint64_t id);
    void mark_read(std::uint64_t id);
    void room_left(std::uint64_t id);
    void done_waiting();
    // Direct messages, blocks and moderation (console_conversations.cpp).
    bool conversation_command(const std::string& cmd, const std::string& arg);
    void moderate(proto::mod_action action, const std::string& name, std::uint64_t seq, std::uint32_t seconds);
    std::string message_line(const proto::chat_msg& m) const;
    std::string notice_text(const proto::chat_msg& m) const;
    void notice_seen(const proto::chat_msg& m);
    /// One line to stdout, flushed. Main thread.
    template <class... A>
    void out(strix::format_string_for<A...> fmt, const A&... args) {
        out_line(strix::format(fmt, args...));
    }
    void out_line(std::string_view line);

    console_options opt_;
    int fd_ = -1;
    std::unique_ptr<client_tls_context> tls_ctx_;  // loaded before anything is typed (--ca errors first)
    std::unique_ptr<client_tls_conn> tls_;         // the connection's TLS, once connected
    bool tty_ = false;
    bool stdin_eof_ = false;
    bool quit_ = false;
    int status_ = 0;
    std::string in_;                 // stdin bytes not yet split into lines
    std::deque<std::string> lines_;  // complete lines not yet acted on
    frame_decoder decoder_;
    flatbuffers::FlatBufferBuilder fbb_;
    waiting waiting_ = waiting::nothing;
    std::chrono::steady_clock::time_point waiting_since_;
    std::uint64_t player_id_ = 0;
    // A room this session is in (protocol version 2: many at once).
    struct room_view {
        std::string name;  // a direct room: "@" and the peer's name
        bool direct = false;
        // Every account seen in the room (members, joins, senders, notices' targets), by name:
        // what the moderation commands look names up in.
        std::map<std::string, std::uint64_t, std::less<>> known;
        std::uint64_t last_seq = 0;   // the newest message seen (join_room_res, then chat_msg)
        std::uint64_t last_read = 0;  // the account's read marker (login_res, read_res, read_marker)
        std::uint64_t unread() const noexcept { return last_seq > last_read ? last_seq - last_read : 0; }
    };
    std::map<std::uint64_t, room_view> rooms_;
    std::uint64_t room_id_ = 0;         // the current room: plain lines are said there (0: none)
    std::uint64_t history_before_ = 0;  // /history pages back from here (0: the newest)
    std::string room_name_;
    std::uint64_t client_seq_ = 0;
    std::string direct_to_;          // the name a /dm went to, until its chat_msg or error
    std::uint64_t moderated_room_ = 0;  // a moderation request's room, until its notice or error
    bool logged_in_ = false;
    std::string token_path_;  // this server's and name's device token file (empty: none kept)
};

}  // namespace strix::chat
