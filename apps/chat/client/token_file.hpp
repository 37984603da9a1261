#pragma once
// token_file: where strix-chat-client keeps the device token a server handed it for one name
// (docs/protocol.md, "Device tokens"), so that its next login of that name is not locked out by
// someone else's wrong guesses.
//
//   $XDG_STATE_HOME/strix-chat/device-tokens/<host>_<port>_<name>     (or ~/.local/state/...)
//
// One file per server and name, mode 0600 in a 0700 directory, holding the token as 64 hex
// digits and a newline; replaced atomically (write a temporary file, then rename) after every
// login that hands out a new token.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace strix::chat {

class token_file {
public:
    using token = std::array<std::byte, 32>;

    /// The file for `name` on host:port under `state_dir` (empty: $XDG_STATE_HOME/strix-chat, else
    /// $HOME/.local/state/strix-chat; empty path when neither variable is set). Characters other
    /// than A-Z a-z 0-9 . - in the host become '_'. Any thread.
    static std::string path_for(const std::string& state_dir, const std::string& host, std::uint16_t port,
                                const std::string& name);

    /// The token stored at `path`, or nothing (no file, or not 64 hex digits). Any thread.
    static std::optional<token> load(const std::string& path);

    /// Stores `t` at `path`, creating its directories (0700); the file is 0600. Returns an empty
    /// string, or one sentence saying what failed. Any thread.
    static std::string save(const std::string& path, const token& t);
};

}  // namespace strix::chat
