#pragma once
// A socket's ZMTP peers over net sessions (the tcp:// and ipc:// transport, transport/stream.cpp):
// zmtp_peers is the session group's handler and gives each session its zmtp_pipe (zmtp_pipe.cpp),
// which runs ZMTP 3.1 for that peer and hands its messages to the socket's pattern.

#include <strix/link/socket.hpp>
#include <strix/net/session.hpp>
#include <strix/net/session_group.hpp>

#include <cstddef>
#include <span>
#include <system_error>

namespace strix::link::detail {

class socket_core;

/// The session handler of a socket's tcp/ipc session group (one per bind or connect). Its
/// connections take `o`, the socket's options at that bind or connect (o outlives the group).
/// On the socket's shard.
class zmtp_peers final : public session_handler {
public:
    zmtp_peers(socket_core& c, const socket_options& o) noexcept : core_(c), opts_(o) {}

    void on_open(session& s) override;
    void on_frame(session& s, std::span<const std::byte> frame) override;
    void on_protocol_error(session& s, std::error_code ec) override;
    void on_close(session& s, std::error_code ec) override;
    void on_connect_failed(connection& c, std::error_code ec) override;
    void on_drained(session& s) override;

private:
    socket_core& core_;
    const socket_options& opts_;
};

/// The session group's framing and limits for a socket's ZMTP peers.
session_group_config zmtp_group_config(const socket_options& o);

}  // namespace strix::link::detail
