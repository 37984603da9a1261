#pragma once
// A small blocking chat client for the black-box tests: it writes request frames and reads the
// server's frames one at a time, with timeouts, so a test can assert exactly which frames each
// client receives and in which order. connect_ws() makes it a WebSocket client (ws_test_wire.hpp):
// the same frames, one per binary WebSocket message.

#include "apps/chat/common/chat_frame.hpp"
#include "ws_test_wire.hpp"

#include <support/loopback.hpp>

#include <gtest/gtest.h>

#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strix::test {
using namespace strix::chat;  // the chat application's storage and protocol types

namespace proto = strix::chat::proto;

/// One frame as received: the whole frame, header included.
struct frame {
    proto::msg_type type = proto::msg_type::none;
    std::vector<std::byte> bytes;

    /// The body verified as T, or nullptr. Read the fields at once: the pointer may refer to a
    /// per-thread scratch copy that the next call overwrites.
    template <class T>
    const T* as() const {
        return strix::chat::body_as<T>(std::span<const std::byte>(bytes.data(), bytes.size()));
    }
};

inline std::string type_name(proto::msg_type t) { return proto::EnumNamemsg_type(t); }

/// What a test keeps of a chat_msg.
struct chat_line {
    std::uint64_t room_id = 0, seq = 0, sender_id = 0, client_ts = 0, client_seq = 0, server_ts_us = 0;
    std::string sender, text;
    friend bool operator==(const chat_line&, const chat_line&) = default;
};

inline chat_line to_line(const proto::chat_msg& m) {
    chat_line l;
    l.room_id = m.room_id();
    l.seq = m.seq();
    l.sender_id = m.sender() ? m.sender()->id() : 0;
    l.sender = m.sender() && m.sender()->name() ? m.sender()->name()->str() : "";
    l.text = m.text() ? m.text()->str() : "";
    l.client_ts = m.client_ts();
    l.client_seq = m.client_seq();
    l.server_ts_us = m.server_ts_us();
    return l;
}

class chat_client {
public:
    chat_client() = default;
    explicit chat_client(std::uint16_t port, int rcvbuf = 0) { connect(port, rcvbuf); }
    ~chat_client() { close(); }
    chat_client(const chat_client&) = delete;
    chat_client& operator=(const chat_client&) = delete;
    chat_client(chat_client&& o) noexcept : fd_(std::exchange(o.fd_, -1)), ws_(o.ws_) {}

    /// Connects to 127.0.0.1:port; rcvbuf > 0 shrinks the receive buffer first (slow readers).
    bool connect(std::uint16_t port, int rcvbuf = 0) {
        close();
        if (rcvbuf > 0) {
            fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(port);
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0) {
                close();
                return false;
            }
            set_timeouts(fd_, std::chrono::seconds(10));
            return true;
        }
        fd_ = connect_tcp(port, std::chrono::seconds(10));
        return fd_ >= 0;
    }
    /// Connects to 127.0.0.1:port from the loopback address `source` (127.0.0.x: all of 127/8 is
    /// local on Linux), so a test can play several client addresses.
    bool connect_from(std::uint16_t port, const char* source) {
        close();
        last_error_.clear();
        refused_at_connect_ = false;
        const int fd = test::connect_from(source, port, std::chrono::seconds(10));
        if (fd < 0) {
            refused_at_connect_ = fd == -ECONNRESET;
            last_error_ = std::string("connect from ") + source + ": " + std::strerror(-fd);
            return false;
        }
        fd_ = fd;
        return true;
    }
    /// Connects to 127.0.0.1:port and upgrades to WebSocket at `path` (with an Origin header
    /// when `origin` is not empty); true once the server accepted with the right key.
    bool connect_ws(std::uint16_t port, const std::string& path = "/ws", const std::string& origin = {}) {
        if (!connect(port)) return false;
        upgrade_ = ws::upgrade(fd_, port, path, origin);
        ws_ = ws::accepted(upgrade_);
        return ws_;
    }
    /// The server's answer to the last connect_ws() (status and head).
    const ws::upgrade_reply& upgrade_reply() const { return upgrade_; }
    /// The code of the WebSocket close frame the server sent (0: none seen yet).
    std::uint16_t close_code() const { return close_code_; }
    /// One WebSocket frame with any opcode and payload (protocol tests).
    bool send_ws(ws::opcode op, std::span<const std::byte> payload, bool fin = true) {
        return send_all(fd_, ws::encode(op, payload.data(), payload.size(), fin));
    }

    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
        ws_ = false;
        close_code_ = 0;
    }
    int fd() const { return fd_; }
    /// Why the last connect_from() failed.
    const std::string& last_error() const { return last_error_; }
    /// The last connect_from() failed because the server reset the connection before connect()
    /// returned (accepted and reset at once).
    bool refused_at_connect() const { return refused_at_connect_; }

    // --- sending -----------------------------------------------------------------------------

    bool send_raw(const std::vector<std::byte>& b) { return send_all(fd_, b); }
    bool send_raw(std::span<const std::byte> b) { return send_all(fd_, b.data(), b.size()); }

    /// A frame with this type and a raw body (for malformed-input tests).
    static std::vector<std::byte> raw_frame(std::uint16_t type, std::span<const std::byte> body) {
        std::vector<std::byte> out(frame_header_size + body.size());
        encode_header(out.data(), make_header(type, body, false));
        if (!body.empty()) std::memcpy(out.data() + frame_header_size, body.data(), body.size());
        return out;
    }

    bool send(flatbuffers::FlatBufferBuilder& fbb, proto::msg_type type) {
        auto buf = strix::chat::finish_frame(fbb, type);
        if (ws_) return send_ws(ws::binary, std::span<const std::byte>(buf->data(), buf->size()));
        return send_all(fd_, buf->data(), buf->size());
    }
    bool send_login(const std::string& name, const std::string& password) {
        flatbuffers::FlatBufferBuilder fbb;
        auto n = fbb.CreateString(name);
        auto p = fbb.CreateString(password);
        fbb.Finish(proto::Createlogin_req(fbb, n, p));
        return send(fbb, proto::msg_type::login_req);
    }
    /// A login_req that presents a device token (empty: the field is left out, as an old client does).
    bool send_login(const std::string& name, const std::string& password, std::span<const std::byte> token) {
        flatbuffers::FlatBufferBuilder fbb;
        auto n = fbb.CreateString(name);
        auto p = fbb.CreateString(password);
        flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>> t;
        if (!token.empty()) t = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(token.data()), token.size());
        fbb.Finish(proto::Createlogin_req(fbb, n, p, t));
        return send(fbb, proto::msg_type::login_req);
    }
    /// A login_req with login_req.version (2: conversations, many rooms per session).
    bool send_login_version(const std::string& name, const std::string& password, std::uint32_t version) {
        flatbuffers::FlatBufferBuilder fbb;
        auto n = fbb.CreateString(name);
        auto p = fbb.CreateString(password);
        fbb.Finish(proto::Createlogin_req(fbb, n, p, 0, 0, version));
        return send(fbb, proto::msg_type::login_req);
    }
    /// Logs in with protocol version 2; returns login_res.rooms as (id, last_read_seq).
    std::vector<std::pair<std::uint64_t, std::uint64_t>> login_v2(const std::string& name,
                                                                  const std::string& password = "pw") {
        send_login_version(name, password, 2);
        auto f = expect(proto::msg_type::login_res);
        std::vector<std::pair<std::uint64_t, std::uint64_t>> rooms;
        auto* r = f.as<proto::login_res>();
        if (!r || !r->player()) return rooms;
        EXPECT_EQ(r->player()->name()->str(), name);
        me = r->player()->id();
        EXPECT_TRUE(r->rooms() != nullptr) << "a version 2 login_res lists the rooms (maybe none)";
        if (r->rooms())
            for (auto* ref : *r->rooms()) rooms.emplace_back(ref->id(), ref->last_read_seq());
        return rooms;
    }
    /// The account id of the last login_v2 (0 before one).
    std::uint64_t me = 0;

    bool send_moderate(std::uint64_t room, proto::mod_action action, std::uint64_t target, std::uint64_t seq = 0,
                       std::uint32_t seconds = 0) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createmoderate_req(fbb, room, action, target, seq, seconds));
        return send(fbb, proto::msg_type::moderate_req);
    }
    bool send_direct(const std::string& to, const std::string& text, std::uint64_t client_seq = 0) {
        flatbuffers::FlatBufferBuilder fbb;
        auto t = fbb.CreateString(to);
        auto x = fbb.CreateString(text);
        fbb.Finish(proto::Createdirect_req(fbb, t, x, 0, client_seq));
        return send(fbb, proto::msg_type::direct_req);
    }
    bool send_block(const std::string& name, bool blocked) {
        flatbuffers::FlatBufferBuilder fbb;
        auto n = fbb.CreateString(name);
        fbb.Finish(proto::Createblock_req(fbb, n, blocked));
        return send(fbb, proto::msg_type::block_req);
    }
    /// The next frame must be a notice (a chat_msg of kind notice) in `room` with this action;
    /// returns its seq, target id and target role.
    struct notice_line {
        std::uint64_t seq = 0, target = 0, target_seq = 0, until_us = 0, sender_id = 0;
        proto::member_role role = proto::member_role::member;
    };
    notice_line expect_notice(std::uint64_t room, proto::mod_action action) {
        auto f = expect(proto::msg_type::chat_msg);
        notice_line n;
        auto* m = f.as<proto::chat_msg>();
        if (!m) return n;
        EXPECT_EQ(m->room_id(), room);
        EXPECT_EQ(m->kind(), proto::msg_kind::notice);
        EXPECT_TRUE(m->notice() != nullptr) << "a notice carries notice_info";
        if (!m->notice()) return n;
        EXPECT_EQ(m->notice()->action(), action) << proto::EnumNamemod_action(m->notice()->action());
        n.seq = m->seq();
        n.sender_id = m->sender() ? m->sender()->id() : 0;
        n.target = m->notice()->target() ? m->notice()->target()->id() : 0;
        n.target_seq = m->notice()->seq();
        n.until_us = m->notice()->until_us();
        n.role = m->notice()->role();
        return n;
    }

    bool send_create(const std::string& name) {
        flatbuffers::FlatBufferBuilder fbb;
        auto n = fbb.CreateString(name);
        fbb.Finish(proto::Createcreate_room_req(fbb, n));
        return send(fbb, proto::msg_type::create_room_req);
    }
    bool send_join(std::uint64_t room_id) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createjoin_room_req(fbb, room_id));
        return send(fbb, proto::msg_type::join_room_req);
    }
    bool send_leave() {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createleave_room_req(fbb));
        return send(fbb, proto::msg_type::leave_room_req);
    }
    /// A chat_req naming its room (protocol version 2).
    bool send_chat_in(std::uint64_t room_id, const std::string& text, std::uint64_t client_seq = 0) {
        flatbuffers::FlatBufferBuilder fbb(text.size() + 64);
        auto t = fbb.CreateString(text);
        fbb.Finish(proto::Createchat_req(fbb, t, 0, client_seq, room_id));
        return send(fbb, proto::msg_type::chat_req);
    }
    /// A leave_room_req naming its room (protocol version 2).
    bool send_leave_room(std::uint64_t room_id) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createleave_room_req(fbb, room_id));
        return send(fbb, proto::msg_type::leave_room_req);
    }
    bool send_chat(const std::string& text, std::uint64_t client_seq = 0, std::uint64_t client_ts = 0) {
        flatbuffers::FlatBufferBuilder fbb(text.size() + 64);
        auto t = fbb.CreateString(text);
        fbb.Finish(proto::Createchat_req(fbb, t, client_ts, client_seq));
        return send(fbb, proto::msg_type::chat_req);
    }
    bool send_list() {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createlist_rooms_req(fbb));
        return send(fbb, proto::msg_type::list_rooms_req);
    }
    bool send_ping(std::uint64_t ts) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(proto::Createping_req(fbb, ts));
        return send(fbb, proto::msg_type::ping_req);
    }

    // --- receiving ---------------------------------------------------------------------------

    /// The next frame, or nothing on timeout, EOF or error.
    std::optional<frame> recv(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
        if (ws_) return recv_ws();
        std::byte head[frame_header_size];
        if (!recv_exact(fd_, head, sizeof head)) return std::nullopt;
        auto h = parse_header(head);
        if (h.length < frame_header_size || h.length > (1u << 20)) return std::nullopt;
        frame f;
        f.type = static_cast<proto::msg_type>(h.type);
        f.bytes.resize(h.length);
        std::memcpy(f.bytes.data(), head, sizeof head);
        if (h.length > frame_header_size &&
            !recv_exact(fd_, f.bytes.data() + frame_header_size, h.length - frame_header_size))
            return std::nullopt;
        return f;
    }

    /// The next frame, which must have type t (a gtest failure otherwise; the frame is returned
    /// anyway so the caller can print it).
    frame expect(proto::msg_type t, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
        auto f = recv(timeout);
        if (!f) {
            ADD_FAILURE() << "expected " << type_name(t) << ", got nothing";
            return {};
        }
        if (f->type != t) {
            std::string extra;
            if (f->type == proto::msg_type::error_res)
                if (auto* e = f->as<proto::error_res>())
                    extra = std::string(" (") + proto::EnumNameerror_code(e->code()) + ": " +
                            (e->reason() ? e->reason()->str() : "") + ")";
            ADD_FAILURE() << "expected " << type_name(t) << ", got " << type_name(f->type) << extra;
        }
        return std::move(*f);
    }

    /// Expects an error_res for `request` with `code`.
    void expect_error(proto::msg_type request, proto::error_code code) {
        auto f = expect(proto::msg_type::error_res);
        auto* e = f.as<proto::error_res>();
        ASSERT_NE(e, nullptr);
        EXPECT_EQ(e->request(), request) << "error for " << type_name(e->request());
        EXPECT_EQ(e->code(), code) << proto::EnumNameerror_code(e->code()) << ": "
                                   << (e->reason() ? e->reason()->str() : "");
        EXPECT_TRUE(e->reason() && e->reason()->size() > 0) << "an error carries a reason";
    }

    /// Asserts that nothing arrives within `quiet` (a round trip through ping proves the server
    /// processed everything sent before; see sync()).
    void expect_nothing(std::chrono::milliseconds quiet = std::chrono::milliseconds(100)) {
        auto f = recv(quiet);
        if (f) ADD_FAILURE() << "expected nothing, got " << type_name(f->type);
    }

    /// Round trip: a ping whose pong proves every earlier frame of this connection was handled;
    /// frames that arrive before the pong are returned.
    std::vector<frame> sync(std::uint64_t ts = 0xC0FFEE) {
        std::vector<frame> before;
        if (!send_ping(ts)) {
            ADD_FAILURE() << "sync: send failed";
            return before;
        }
        for (;;) {
            auto f = recv();
            if (!f) {
                ADD_FAILURE() << "sync: no pong";
                return before;
            }
            if (f->type == proto::msg_type::pong_res) {
                auto* p = f->as<proto::pong_res>();
                if (p && p->ts() == ts) return before;
            }
            before.push_back(std::move(*f));
        }
    }

    /// Logs in and returns the player id (0 and a failure if the server refused).
    std::uint64_t login(const std::string& name, const std::string& password = "pw", bool* created = nullptr) {
        send_login(name, password);
        auto f = expect(proto::msg_type::login_res);
        auto* r = f.as<proto::login_res>();
        if (!r || !r->player()) return 0;
        if (created) *created = r->created();
        EXPECT_EQ(r->player()->name()->str(), name);
        return r->player()->id();
    }

    /// Logs in presenting `token` (may be empty) and returns the device token of the login_res
    /// (empty, and a failure, if the server refused or handed out none).
    std::vector<std::byte> login_for_token(const std::string& name, const std::string& password,
                                           std::span<const std::byte> token = {}) {
        send_login(name, password, token);
        auto f = expect(proto::msg_type::login_res);
        auto* r = f.as<proto::login_res>();
        std::vector<std::byte> out;
        if (!r || !r->player()) return out;
        EXPECT_EQ(r->player()->name()->str(), name);
        if (r->device_token()) {
            const auto* b = reinterpret_cast<const std::byte*>(r->device_token()->data());
            out.assign(b, b + r->device_token()->size());
        }
        EXPECT_EQ(out.size(), 32u) << "login_res carries no device token";
        return out;
    }

    /// Creates a room and returns its id.
    std::uint64_t create(const std::string& name) {
        send_create(name);
        auto f = expect(proto::msg_type::create_room_res);
        auto* r = f.as<proto::create_room_res>();
        if (!r || !r->room()) return 0;
        EXPECT_EQ(r->room()->name()->str(), name);
        EXPECT_EQ(r->room()->members(), 1u);
        return r->room()->id();
    }

    /// Joins and returns the member names listed in join_room_res (joiner included).
    std::vector<std::string> join(std::uint64_t room_id) {
        send_join(room_id);
        auto f = expect(proto::msg_type::join_room_res);
        std::vector<std::string> names;
        auto* r = f.as<proto::join_room_res>();
        if (!r || !r->room() || !r->members()) return names;
        EXPECT_EQ(r->room()->id(), room_id);
        EXPECT_EQ(r->room()->members(), r->members()->size());
        for (auto* m : *r->members()) names.push_back(m->name()->str());
        return names;
    }

    /// Lists rooms: (id, name, members).
    std::vector<std::tuple<std::uint64_t, std::string, std::uint32_t>> list() {
        send_list();
        auto f = expect(proto::msg_type::list_rooms_res);
        std::vector<std::tuple<std::uint64_t, std::string, std::uint32_t>> out;
        auto* r = f.as<proto::list_rooms_res>();
        if (!r || !r->rooms()) return out;
        for (auto* x : *r->rooms()) out.emplace_back(x->id(), x->name()->str(), x->members());
        return out;
    }

    /// The next frame must be a chat_msg; returns it.
    chat_line expect_chat() {
        auto f = expect(proto::msg_type::chat_msg);
        auto* m = f.as<proto::chat_msg>();
        if (!m) return {};
        return to_line(*m);
    }

    /// The next frame must be member_joined/member_left (type t) naming `name`.
    void expect_member_event(proto::msg_type t, std::uint64_t room_id, const std::string& name) {
        auto f = expect(t);
        std::uint64_t rid = 0;
        std::string who;
        if (t == proto::msg_type::member_joined) {
            if (auto* m = f.as<proto::member_joined>(); m && m->player())
                rid = m->room_id(), who = m->player()->name()->str();
        } else {
            if (auto* m = f.as<proto::member_left>(); m && m->player())
                rid = m->room_id(), who = m->player()->name()->str();
        }
        EXPECT_EQ(rid, room_id);
        EXPECT_EQ(who, name);
    }

    /// The next frame must be member_presence about `name` in the room, online or not.
    void expect_presence(std::uint64_t room_id, const std::string& name, bool online) {
        auto f = expect(proto::msg_type::member_presence);
        auto* m = f.as<proto::member_presence>();
        ASSERT_TRUE(m && m->player() && m->player()->name());
        EXPECT_EQ(m->room_id(), room_id);
        EXPECT_EQ(m->player()->name()->str(), name);
        EXPECT_EQ(m->online(), online) << name;
    }

    /// A join_room_res's members as "name" (online) or "name-" (offline), in its order.
    static std::vector<std::string> member_states(const frame& f) {
        std::vector<std::string> out;
        auto* r = f.as<proto::join_room_res>();
        if (!r || !r->members()) return out;
        for (auto* m : *r->members()) out.push_back(m->name()->str() + (m->online() ? "" : "-"));
        return out;
    }

    /// Lists rooms: (id, members, online).
    std::vector<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>> list_online() {
        send_list();
        auto f = expect(proto::msg_type::list_rooms_res);
        std::vector<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>> out;
        auto* r = f.as<proto::list_rooms_res>();
        if (!r || !r->rooms()) return out;
        for (auto* x : *r->rooms()) out.emplace_back(x->id(), x->members(), x->online());
        return out;
    }

private:
    // One binary message must hold exactly one frame (docs/protocol.md, "WebSocket").
    std::optional<frame> recv_ws() {
        for (;;) {
            auto m = ws::read(fd_);
            if (!m) return std::nullopt;
            EXPECT_FALSE(m->masked) << "a server's frames are never masked";
            if (m->op == ws::close) {
                close_code_ = m->close_code();
                return std::nullopt;
            }
            if (m->op == ws::ping || m->op == ws::pong) continue;
            EXPECT_EQ(m->op, ws::binary) << "the chat server sends binary messages only";
            EXPECT_TRUE(m->fin) << "one frame per message, unfragmented";
            if (m->payload.size() < frame_header_size) {
                ADD_FAILURE() << "a WebSocket message shorter than a frame header";
                return std::nullopt;
            }
            auto h = parse_header(m->payload.data());
            EXPECT_EQ(h.length, m->payload.size()) << "a WebSocket message carries exactly one frame";
            frame f;
            f.type = static_cast<proto::msg_type>(h.type);
            f.bytes = std::move(m->payload);
            return f;
        }
    }

    int fd_ = -1;
    bool ws_ = false;
    std::uint16_t close_code_ = 0;
    ws::upgrade_reply upgrade_;
    std::string last_error_;
    bool refused_at_connect_ = false;
};

}  // namespace strix::test
