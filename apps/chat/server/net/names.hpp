#pragma once
// Validation of the names clients choose (docs/protocol.md, "Limits").

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strix::chat {

/// Player names: 1-32 bytes of [A-Za-z0-9_.-]. Any thread.
inline bool valid_player_name(std::string_view s) noexcept {
    if (s.empty() || s.size() > 32) return false;
    for (unsigned char c : s) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                  c == '-';
        if (!ok) return false;
    }
    return true;
}

/// Any account's name, as requests that name another account take it: a player name, or what a
/// JWT's `sub` may be, 1-64 bytes of [A-Za-z0-9_.-@:|] (wider, so an application's user ids such
/// as UUIDs or "auth0|5f7c..." fit). Any thread.
inline bool valid_account_name(std::string_view s) noexcept {
    if (s.empty() || s.size() > 64) return false;
    for (unsigned char c : s) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                  c == '-' || c == '@' || c == ':' || c == '|';
        if (!ok) return false;
    }
    return true;
}

/// Room names: 1-64 bytes of well-formed UTF-8 (shortest forms, no surrogates) without control
/// characters (C0, DEL, C1). Any thread.
inline bool valid_room_name(std::string_view s) noexcept {
    if (s.empty() || s.size() > 64) return false;
    auto b = [&](std::size_t i) { return static_cast<std::uint8_t>(s[i]); };
    for (std::size_t i = 0; i < s.size();) {
        std::uint8_t c = b(i);
        std::uint32_t cp = 0;
        std::size_t len = 0;
        if (c < 0x80) {
            cp = c;
            len = 1;
        } else if ((c & 0xE0) == 0xC0) {
            cp = c & 0x1Fu;
            len = 2;
        } else if ((c & 0xF0) == 0xE0) {
            cp = c & 0x0Fu;
            len = 3;
        } else if ((c & 0xF8) == 0xF0) {
            cp = c & 0x07u;
            len = 4;
        } else {
            return false;
        }
        if (i + len > s.size()) return false;
        for (std::size_t k = 1; k < len; ++k) {
            if ((b(i + k) & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (b(i + k) & 0x3Fu);
        }
        static constexpr std::uint32_t min_for_len[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_for_len[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) return false;
        i += len;
    }
    return true;
}

}  // namespace strix::chat
