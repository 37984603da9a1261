#pragma once
// Where a node's Redis is and how patient its clients are (redis_client, redis_subscriber).

#include <strix/net/endpoint.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strix::chat {

struct redis_options {
    endpoint target;                                      // tcp://host:port or a unix socket
    std::chrono::milliseconds connect_timeout{1000};      // one attempt
    // A command without its reply this long resets the connection (RESP has no way to cancel
    // one pipelined command); a command that could not even be sent fails after this long.
    std::chrono::milliseconds command_timeout{2000};
    std::chrono::milliseconds reconnect_initial{50};      // first retry delay; doubles ...
    std::chrono::milliseconds reconnect_max{1000};        // ... up to this
    // The subscriber PINGs this often when idle, so a dead connection is noticed within
    // ping_interval + command_timeout even when no message is due.
    std::chrono::milliseconds ping_interval{1000};
    std::uint32_t max_reply = 1u << 20;                   // bytes; a larger reply drops the connection
    std::size_t max_pending = 1u << 16;                   // commands sent or waiting, per client
};

/// Parses "redis://host:port" (host a numeric address or "localhost"; the port defaults to
/// 6379) or "unix:///path". Throws std::invalid_argument naming what is wrong. Any thread.
endpoint parse_redis_url(std::string_view url);

}  // namespace strix::chat
