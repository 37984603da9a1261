#include "chat_console.hpp"

#include "console_text.hpp"
#include "token_file.hpp"

#include "apps/chat/common/chat_frame.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace strix::chat {
namespace {

using namespace console;

constexpr int keepalive_ms = 60000;  // ping after this long with nothing to do (server idle timeout: 300 s)

// Whether the server is this machine by address or name: elsewhere, plain TCP carries the password
// in clear over a network.
bool loopback(const std::string& host) {
    if (host == "localhost" || host == "::1") return true;
    in_addr a{};
    return ::inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

// Drops a trailing '\r' (input typed on Windows or through some terminals) and surrounding blanks.
std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
    std::size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    return s.substr(i);
}

}  // namespace

chat_console::chat_console(console_options o)
    : opt_(std::move(o)), tty_(::isatty(STDIN_FILENO) == 1), decoder_(codec_limits{16u << 20}), fbb_(1024) {}

chat_console::~chat_console() {
    tls_.reset();  // its close_notify goes out on the socket before the socket closes
    if (fd_ >= 0) ::close(fd_);
    if (tty_) echo(true);
}

void chat_console::out_line(std::string_view line) {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    // Line by line even into a pipe, so whoever reads the output sees it as it happens.
    std::fflush(stdout);
}

void chat_console::prompt(const char* what) {
    if (!tty_) return;
    std::printf("%s", what);
    std::fflush(stdout);
}

void chat_console::echo(bool on) {
    termios t{};
    if (::tcgetattr(STDIN_FILENO, &t) != 0) return;
    if (on) {
        t.c_lflag |= ECHO;
    } else {
        t.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    }
    ::tcsetattr(STDIN_FILENO, TCSANOW, &t);
}

bool chat_console::connect_server() {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(opt_.port);
    const int rc = ::getaddrinfo(opt_.host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0) {
        out("cannot resolve {}: {}", opt_.host, ::gai_strerror(rc));
        return false;
    }
    int err = 0;
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
        fd_ = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd_ < 0) {
            err = errno;
            continue;
        }
        if (::connect(fd_, a->ai_addr, a->ai_addrlen) == 0) break;
        err = errno;
        ::close(fd_);
        fd_ = -1;
    }
    ::freeaddrinfo(res);
    if (fd_ < 0) {
        out("cannot connect to {}:{}: {} (is strix-chat-server running?)", opt_.host, opt_.port, std::strerror(err));
        return false;
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (tls_ctx_) return start_tls();
    out("connected to {}:{}", opt_.host, opt_.port);
    return true;
}

// The handshake and the certificate check, before a byte of the login goes out. The socket turns
// non-blocking for good: OpenSSL may read part of a record and must not block the console there.
bool chat_console::start_tls() {
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
    const std::string& name = opt_.server_name.empty() ? opt_.host : opt_.server_name;
    try {
        tls_ = std::make_unique<client_tls_conn>(*tls_ctx_, fd_, name);
    } catch (const std::runtime_error& e) {
        out("error: {}", e.what());
        return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + opt_.reply_timeout;
    for (;;) {
        const tls_status s = tls_->handshake();
        if (s == tls_status::done) break;
        if (s == tls_status::failed || s == tls_status::closed) {
            out("error: {}", tls_->error());
            return false;
        }
        if (!wait_socket(s == tls_status::want_write ? POLLOUT : POLLIN, deadline)) {
            out("error: no TLS handshake with {}:{} within {} ms (does it serve TLS on this port?)", opt_.host,
                opt_.port, opt_.reply_timeout.count());
            return false;
        }
    }
    out("connected to {}:{} over {}", opt_.host, opt_.port, tls_->describe());
    return true;
}

// Waits until the socket is ready for `events`, until `deadline` at most.
bool chat_console::wait_socket(short events, std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        const auto left = deadline - std::chrono::steady_clock::now();
        // Rounded up: poll() with 0 would not wait for the last fraction of a millisecond.
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
        if (ms <= 0) return false;
        pollfd p{fd_, events, 0};
        const int r = ::poll(&p, 1, static_cast<int>(ms));
        if (r > 0) return true;
        if (r < 0 && errno != EINTR) return false;
    }
}

int chat_console::run() {
    if (opt_.tls) {
        try {
            tls_ctx_ = std::make_unique<client_tls_context>(client_tls_config{.ca_file = opt_.ca_file});
        } catch (const std::runtime_error& e) {
            out("error: {}", e.what());
            return 1;
        }
    } else if (!loopback(opt_.host)) {
        out("warning: without --tls the password and the device token reach {} in clear", opt_.host);
    }
    // With credentials still to type, connect once they are given: the server closes a connection
    // that has not logged in within its login timeout (10 s by default).
    if (!opt_.name.empty() && !opt_.password.empty()) {
        if (!connect_server()) return 1;
    }
    if (opt_.name.empty())
        prompt("name: ");
    else if (opt_.password.empty())
        prompt("password: ");
    if (tty_ && !opt_.name.empty() && opt_.password.empty()) echo(false);
    next_lines();
    while (!quit_) {
        pollfd fds[2] = {{fd_, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
        const nfds_t n = stdin_eof_ ? 1 : 2;
        // While a reply is awaited, wake up now and then to enforce the reply timeout; while
        // logged in and quiet, once a minute to ping (the server closes silent sessions after its
        // idle timeout, 5 minutes by default). poll() skips fds[0] before connecting (fd -1).
        const int timeout_ms = waiting_ != waiting::nothing ? 100 : logged_in_ ? keepalive_ms : -1;
        const int r = ::poll(fds, n, timeout_ms);
        if (r == 0 && logged_in_ && waiting_ == waiting::nothing) {
            fbb_.Clear();
            fbb_.Finish(proto::Createping_req(fbb_, 0));  // ts 0: a keepalive, its pong is not shown
            send(proto::msg_type::ping_req);
        }
        if (r < 0) {
            if (errno == EINTR) continue;
            out("poll: {}", std::strerror(errno));
            return 1;
        }
        if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !read_socket()) return status_;
        if (n == 2 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) read_stdin();
        if (waiting_ != waiting::nothing && std::chrono::steady_clock::now() - waiting_since_ > opt_.reply_timeout) {
            out("error: no reply from the server within {} ms", opt_.reply_timeout.count());
            if (waiting_ == waiting::login) return 1;
            done_waiting();
        }
        next_lines();
        if (stdin_eof_ && lines_.empty() && waiting_ == waiting::nothing) break;
    }
    return status_;
}

void chat_console::read_stdin() {
    char buf[4096];
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof(buf));
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) return;
        stdin_eof_ = true;
        return;
    }
    if (n == 0) {
        stdin_eof_ = true;
        if (!in_.empty()) lines_.push_back(std::move(in_));  // a last line without newline
        in_.clear();
        return;
    }
    in_.append(buf, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = in_.find('\n')) != std::string::npos) {
        lines_.push_back(in_.substr(0, nl));
        in_.erase(0, nl + 1);
    }
}

bool chat_console::read_socket() {
    if (tls_) return read_tls();
    std::byte buf[65536];
    const ssize_t n = ::read(fd_, buf, sizeof(buf));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0) {
        // A TLS port closes on a login that arrives as plain bytes.
        const char* hint = logged_in_ ? "" : " (if it serves TLS, strix-chat-server --tls-cert, connect with --tls)";
        out("connection closed by the server{}{}{}", n < 0 ? ": " : "", n < 0 ? std::strerror(errno) : "", hint);
        status_ = 1;
        return false;
    }
    const frame_errc e =
        decoder_.feed(std::span<const std::byte>(buf, static_cast<std::size_t>(n)), [this](const frame_view& f) {
            on_frame(std::span<const std::byte>(f.body.data() - frame_header_size, f.body.size() + frame_header_size));
        });
    if (e != frame_errc::ok && e != frame_errc::need_more) {
        out("undecodable data from the server ({}); disconnecting", make_error_code(e));
        status_ = 1;
        return false;
    }
    return true;
}

// Everything the socket has, record by record, until OpenSSL needs more bytes from the network.
bool chat_console::read_tls() {
    std::byte buf[65536];
    for (;;) {
        const tls_result r = tls_->read(buf, sizeof(buf));
        if (r.status == tls_status::want_read) return true;
        if (r.status == tls_status::want_write) {
            // A read that must send first (a TLS 1.3 key update): rare and short.
            if (!wait_socket(POLLOUT, std::chrono::steady_clock::now() + opt_.reply_timeout)) return true;
            continue;
        }
        if (r.status != tls_status::done) {
            out("connection closed by the server{}{}", r.status == tls_status::failed ? ": " : "",
                r.status == tls_status::failed ? tls_->error() : std::string());
            status_ = 1;
            return false;
        }
        const frame_errc e = decoder_.feed(std::span<const std::byte>(buf, r.n), [this](const frame_view& f) {
            on_frame(std::span<const std::byte>(f.body.data() - frame_header_size, f.body.size() + frame_header_size));
        });
        if (e != frame_errc::ok && e != frame_errc::need_more) {
            out("undecodable data from the server ({}); disconnecting", make_error_code(e));
            status_ = 1;
            return false;
        }
    }
}

void chat_console::next_lines() {
    // A token needs no name or password: logged in before any line is read.
    if (!logged_in_ && !opt_.jwt.empty() && waiting_ == waiting::nothing && !quit_) login();
    while (!quit_ && waiting_ == waiting::nothing && !lines_.empty()) {
        std::string line = lines_.front();
        lines_.pop_front();
        if (!logged_in_) {
            line = trim(std::move(line));
            if (opt_.name.empty()) {
                if (line.empty()) {
                    prompt("name: ");
                    continue;
                }
                opt_.name = line;
                if (opt_.password.empty()) {
                    prompt("password: ");
                    if (tty_) echo(false);
                }
                if (opt_.password.empty()) continue;
            } else {
                opt_.password = line;
                if (tty_) {
                    echo(true);
                    std::printf("\n");
                }
            }
            login();
            continue;
        }
        command(line);
    }
    if (!logged_in_ && waiting_ == waiting::nothing && !opt_.name.empty() && !opt_.password.empty()) login();
    if (!logged_in_ && waiting_ == waiting::nothing && stdin_eof_ && lines_.empty()) {
        out("error: input ended before the {} was given", opt_.name.empty() ? "name" : "password");
        status_ = 1;
        quit_ = true;
    }
}

void chat_console::login() {
    if (fd_ < 0) {
        if (!connect_server()) {
            status_ = 1;
            quit_ = true;
            return;
        }
    }
    fbb_.Clear();
    if (!opt_.jwt.empty()) {
        const auto jwt = fbb_.CreateString(opt_.jwt);
        fbb_.Finish(proto::Createlogin_req(fbb_, 0, 0, 0, 0, 2, jwt));
        send(proto::msg_type::login_req);
        waiting_ = waiting::login;
        waiting_since_ = std::chrono::steady_clock::now();
        return;
    }
    // A device token from an earlier login of this name on this server exempts this login from
    // the lockout that other people's wrong guesses at the name can cause.
    flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>> token;
    if (opt_.device_token) {
        token_path_ = token_file::path_for(opt_.state_dir, opt_.host, opt_.port, opt_.name);
        if (auto t = token_file::load(token_path_))
            token = fbb_.CreateVector(reinterpret_cast<const std::uint8_t*>(t->data()), t->size());
    }
    const auto name = fbb_.CreateString(opt_.name);
    const auto password = fbb_.CreateString(opt_.password);
    // Protocol version 2: in many rooms at once (docs/protocol.md, "Conversations").
    fbb_.Finish(proto::Createlogin_req(fbb_, name, password, token, 0, 2));
    send(proto::msg_type::login_req);
    waiting_ = waiting::login;
    waiting_since_ = std::chrono::steady_clock::now();
}

void chat_console::help() {
    out("commands:\n"
        "  /rooms        list the server's rooms\n"
        "  /mine         list the rooms you are in, with their unread counts\n"
        "  /create NAME  create a room and enter it\n"
        "  /join ID      enter room ID (you stay in your other rooms)\n"
        "  /switch ID    make room ID the current room (and mark it read)\n"
        "  /exit         leave the current room\n"
        "  /read         mark the current room read\n"
        "  /typing       tell the current room you are typing\n"
        "  /history      show 20 earlier messages of the room (again: the 20 before those)\n"
        "  /dm NAME TEXT send TEXT to the account NAME in your direct room with it (made current)\n"
        "  /block NAME   no direct messages from NAME (/unblock NAME lifts it)\n"
        "  moderation in the current room (owner and admins; NAME: an account seen there):\n"
        "  /kick NAME    end NAME's membership (it may join again)\n"
        "  /ban NAME [SECONDS]  kick, and no join for SECONDS (none: until /unban NAME)\n"
        "  /mute NAME SECONDS   NAME's lines are refused for SECONDS (/unmute NAME lifts it)\n"
        "  /erase SEQ    remove message SEQ ([room#SEQ]) for everyone\n"
        "  /promote NAME, /demote NAME, /transfer NAME  (owner) make NAME an admin, a member, the owner\n"
        "  /ping         measure the round trip to the server\n"
        "  /help         this list\n"
        "  /quit         disconnect and quit\n"
        "  anything else is said in the current room");
}

// Plain lines go to room `id` from now on; what it showed is read.
void chat_console::switch_to(std::uint64_t id) {
    auto it = rooms_.find(id);
    if (it == rooms_.end()) return;
    room_id_ = id;
    room_name_ = it->second.name;
    history_before_ = 0;
    mark_read(id);
}

// read_req up to the newest message seen in room `id` (nothing when nothing is unread).
void chat_console::mark_read(std::uint64_t id) {
    auto it = rooms_.find(id);
    if (it == rooms_.end() || it->second.unread() == 0) return;
    it->second.last_read = it->second.last_seq;
    fbb_.Clear();
    fbb_.Finish(proto::Createread_req(fbb_, id, it->second.last_seq));
    send(proto::msg_type::read_req);
}

// Room `id` is left: another room the session is in becomes the current one.
void chat_console::room_left(std::uint64_t id) {
    rooms_.erase(id);
    if (room_id_ != id) return;
    room_id_ = 0;
    room_name_.clear();
    if (!rooms_.empty()) {
        switch_to(rooms_.begin()->first);
        out("now in room {} '{}'", room_id_, room_name_);
    }
}

void chat_console::command(const std::string& raw) {
    const std::string line = trim(raw);
    if (line.empty()) return;
    auto start = [this](waiting w) {
        waiting_ = w;
        waiting_since_ = std::chrono::steady_clock::now();
    };
    if (line[0] != '/') {
        if (room_id_ == 0) {
            out("not in a room: /create NAME or /join ID first (/help lists the commands)");
            return;
        }
        if (line.size() > 60000) {
            out("error: a message is at most 60000 bytes");
            return;
        }
        fbb_.Clear();
        fbb_.Finish(proto::Createchat_req(fbb_, fbb_.CreateString(line), steady_us() * 1000, ++client_seq_, room_id_));
        send(proto::msg_type::chat_req);
        start(waiting::chat);
        return;
    }
    const std::size_t sp = line.find(' ');
    const std::string cmd = line.substr(0, sp);
    const std::string arg = sp == std::string::npos ? std::string() : trim(line.substr(sp + 1));
    if (cmd == "/quit") {
        out("bye");
        quit_ = true;
    } else if (cmd == "/help") {
        help();
    } else if (cmd == "/rooms") {
        fbb_.Clear();
        fbb_.Finish(proto::Createlist_rooms_req(fbb_));
        send(proto::msg_type::list_rooms_req);
        start(waiting::rooms);
    } else if (cmd == "/create") {
        if (arg.empty()) {
            out("usage: /create NAME");
            return;
        }
        fbb_.Clear();
        fbb_.Finish(proto::Createcreate_room_req(fbb_, fbb_.CreateString(arg)));
        send(proto::msg_type::create_room_req);
        start(waiting::create);
    } else if (cmd == "/join") {
        char* end = nullptr;
        const unsigned long long id = std::strtoull(arg.c_str(), &end, 10);
        if (arg.empty() || end == nullptr || *end != '\0') {
            out("usage: /join ID (a room number from /rooms)");
            return;
        }
        fbb_.Clear();
        fbb_.Finish(proto::Createjoin_room_req(fbb_, id));
        send(proto::msg_type::join_room_req);
        start(waiting::join);
    } else if (cmd == "/exit") {
        if (room_id_ == 0) {
            out("not in a room: /create NAME or /join ID first");
            return;
        }
        fbb_.Clear();
        fbb_.Finish(proto::Createleave_room_req(fbb_, room_id_));
        send(proto::msg_type::leave_room_req);
        start(waiting::leave);
    } else if (cmd == "/mine") {
        if (rooms_.empty()) out("in no room: /create NAME or /join ID");
        for (const auto& [id, r] : rooms_)
            out("  {}  {}  {} unread{}", id, r.name, r.unread(), id == room_id_ ? "  (current)" : "");
    } else if (cmd == "/switch") {
        char* end = nullptr;
        const unsigned long long id = std::strtoull(arg.c_str(), &end, 10);
        if (arg.empty() || end == nullptr || *end != '\0' || !rooms_.contains(id)) {
            out("usage: /switch ID (a room from /mine)");
            return;
        }
        switch_to(id);
        out("now in room {} '{}'", room_id_, room_name_);
    } else if (cmd == "/read" || cmd == "/typing") {
        if (room_id_ == 0) {
            out("not in a room: /create NAME or /join ID first");
            return;
        }
        if (cmd == "/read") {
            mark_read(room_id_);
            return;
        }
        fbb_.Clear();
        fbb_.Finish(proto::Createtyping_req(fbb_, room_id_));
        send(proto::msg_type::typing_req);
    } else if (cmd == "/history") {
        if (room_id_ == 0) {
            out("not in a room: /create NAME or /join ID first");
            return;
        }
        fbb_.Clear();
        fbb_.Finish(proto::Createhistory_req(fbb_, room_id_, history_before_, 0, 20));
        send(proto::msg_type::history_req);
        start(waiting::history);
    } else if (cmd == "/ping") {
        fbb_.Clear();
        fbb_.Finish(proto::Createping_req(fbb_, steady_us()));
        send(proto::msg_type::ping_req);
        start(waiting::pong);
    } else if (!conversation_command(cmd, arg)) {
        out("unknown command {} (/help lists the commands)", cmd);
    }
}

void chat_console::send(proto::msg_type type) {
    const shared_buffer_ptr frame = finish_frame(fbb_, type);
    const std::byte* p = frame->data();
    std::size_t left = frame->size();
    while (tls_ && left > 0) {
        const tls_result r = tls_->write(p, left);
        if (r.status == tls_status::done) {
            p += r.n;
            left -= r.n;
            continue;
        }
        // The socket is full (or OpenSSL must read first): wait as a blocking send would.
        const bool ready = (r.status == tls_status::want_write || r.status == tls_status::want_read) &&
                           wait_socket(r.status == tls_status::want_write ? POLLOUT : POLLIN,
                                       std::chrono::steady_clock::now() + opt_.reply_timeout);
        if (!ready) return;  // the read side reports the close and ends the session
    }
    while (left > 0) {
        const ssize_t n = ::send(fd_, p, left, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            // The read side reports the close and ends the session.
            return;
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

void chat_console::done_waiting() { waiting_ = waiting::nothing; }

}  // namespace strix::chat
