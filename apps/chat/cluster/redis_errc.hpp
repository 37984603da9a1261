#pragma once
// Why a Redis command or subscription failed. Values of the "strix.chat.redis" error category;
// a command can also fail with the reason its connection ended (a net_errc such as peer_closed
// or frame_too_large, or a system error such as connection refused).

#include <system_error>

namespace strix::chat {

enum class redis_errc {
    server_error = 1,  // Redis answered with an error reply (its text is in the reply)
    timed_out,         // no reply within command_timeout: the connection is reset
    not_connected,     // Redis was unreachable for the whole command_timeout
    queue_full,        // more commands waiting than max_pending
    protocol_error,    // a reply hiredis could not parse, or a reply nobody asked for
    closed,            // the client was closed before the reply came
    unexpected_reply,  // a reply of the wrong shape for the command (e.g. a function's result)
};

const std::error_category& redis_category() noexcept;
inline std::error_code make_error_code(redis_errc e) noexcept { return {static_cast<int>(e), redis_category()}; }

}  // namespace strix::chat

template <>
struct std::is_error_code_enum<strix::chat::redis_errc> : std::true_type {};
