#pragma once
// Private: ws_protocol's state. One ws_conn per session of the protocol's group, from on_open to
// on_close (the session's own state slot stays the application's: session::emplace_state).

#include <strix/net/net_stats.hpp>
#include <strix/net/ws_protocol.hpp>

#include "net/ws/ws_utf8.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace strix {
namespace detail {

struct ws_conn {
    bool open = false;        // upgraded: frames from here on
    bool in_message = false;  // a fragmented message is being reassembled
    bool failure_told = false;  // client: on_connect_failed already heard about this attempt
    ws_opcode message_op = ws_opcode::binary;
    std::uint32_t fragments = 0;
    std::vector<std::byte> message;  // the fragments so far, never above max_message
    utf8_validator utf8;             // across the fragments of a text message
    std::uint64_t ping_window_start = 0;
    std::uint32_t pings = 0;
    std::string key;          // client: the Sec-WebSocket-Key sent
    std::string subprotocol;  // agreed in the upgrade
};

// Where a client connection asked to go (ws_protocol::connect), until its upgrade is sent.
struct ws_target {
    std::string host;  // the Host header
    std::string path;
};

}  // namespace detail

struct ws_protocol::impl {
    explicit impl(ws_protocol& p) : self(p) {}

    static constexpr std::size_t keep_capacity = 64 * 1024;

    void on_request(session& s, detail::ws_conn& c, std::span<const std::byte> head);
    void on_response(session& s, detail::ws_conn& c, std::span<const std::byte> head);
    void send_upgrade(session& s, detail::ws_conn& c);
    void refuse(session& s, int status, bool version_hint);
    void upgraded(session& s, detail::ws_conn& c, const framer& frames);

    void on_ws_frame(session& s, detail::ws_conn& c, std::span<const std::byte> frame);
    void on_close_frame(session& s, detail::ws_conn& c, const std::byte* p, std::size_t len);
    bool ping_allowed(session& s, detail::ws_conn& c) noexcept;
    void fail(session& s, detail::ws_conn& c, std::uint16_t code);
    static void send_close(session& s, std::uint16_t code, std::string_view reason);
    static void count_close(net_counters& n, std::uint16_t code) noexcept;

    ws_protocol& self;
    std::unordered_map<const session*, detail::ws_conn> conns;
    const session* last_session = nullptr;  // on_frame's last lookup in conns
    detail::ws_conn* last_conn = nullptr;
    // Keyed by connection; entries of closed connections are swept by the next connect().
    std::unordered_map<const connection*, std::pair<connection_ptr, detail::ws_target>> targets;
    detail::ws_target connecting;  // the target of the connect() in progress
};

}  // namespace strix
