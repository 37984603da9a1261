#pragma once
// The client half of RFC 6455 as the chat tests need it, written plainly over a blocking socket
// (independent of strix::net's WebSocket code, which it checks): the HTTP upgrade with a fixed key
// and its Sec-WebSocket-Accept check, masked frames out, unmasked frames in.

#include <support/loopback.hpp>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace strix::test::ws {

enum opcode : std::uint8_t { continuation = 0x0, text = 0x1, binary = 0x2, close = 0x8, ping = 0x9, pong = 0xA };

// RFC 6455's own example key, and the Accept the server must answer it with (section 1.3).
inline constexpr const char* client_key = "dGhlIHNhbXBsZSBub25jZQ==";
inline constexpr const char* expected_accept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/// What the server answered the upgrade: its status line's code and the whole head.
struct upgrade_reply {
    int status = 0;
    std::string head;
};

/// Sends the upgrade request for `path` (with Origin when not empty) and reads the reply's head.
inline upgrade_reply upgrade(int fd, std::uint16_t port, const std::string& path, const std::string& origin = {}) {
    std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                      "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + client_key +
                      "\r\nSec-WebSocket-Version: 13\r\n";
    if (!origin.empty()) req += "Origin: " + origin + "\r\n";
    req += "\r\n";
    upgrade_reply r;
    if (!send_all(fd, req.data(), req.size())) return r;
    // Byte by byte up to the blank line, so that no frame after the head is read here.
    char c = 0;
    while (r.head.size() < 8192 && recv_exact(fd, &c, 1)) {
        r.head += c;
        if (r.head.size() >= 4 && r.head.compare(r.head.size() - 4, 4, "\r\n\r\n") == 0) break;
    }
    if (r.head.rfind("HTTP/1.1 ", 0) == 0 && r.head.size() > 12) r.status = std::atoi(r.head.c_str() + 9);
    return r;
}

/// Whether an upgrade reply accepted the fixed key correctly.
inline bool accepted(const upgrade_reply& r) {
    return r.status == 101 &&
           r.head.find(std::string("Sec-WebSocket-Accept: ") + expected_accept + "\r\n") != std::string::npos;
}

/// One client frame: FIN set, masked with a fixed non-zero key (any key is valid).
inline std::vector<std::byte> encode(opcode op, const std::byte* data, std::size_t n, bool fin = true) {
    std::vector<std::byte> out;
    out.push_back(std::byte((fin ? 0x80 : 0x00) | op));
    if (n < 126) {
        out.push_back(std::byte(0x80 | n));
    } else if (n <= 0xFFFF) {
        out.push_back(std::byte(0x80 | 126));
        out.push_back(std::byte(n >> 8));
        out.push_back(std::byte(n & 0xFF));
    } else {
        out.push_back(std::byte(0x80 | 127));
        for (int i = 7; i >= 0; --i) out.push_back(std::byte((static_cast<std::uint64_t>(n) >> (8 * i)) & 0xFF));
    }
    const std::byte mask[4] = {std::byte{0x37}, std::byte{0xFA}, std::byte{0x21}, std::byte{0x3D}};
    out.insert(out.end(), mask, mask + 4);
    for (std::size_t i = 0; i < n; ++i) out.push_back(data[i] ^ mask[i % 4]);
    return out;
}

/// One frame from the server (which never masks).
struct message {
    opcode op = continuation;
    bool fin = false;
    bool masked = false;
    std::vector<std::byte> payload;
    /// A close frame's status code (0: none given).
    std::uint16_t close_code() const {
        if (op != close || payload.size() < 2) return 0;
        return static_cast<std::uint16_t>((std::to_integer<unsigned>(payload[0]) << 8) |
                                          std::to_integer<unsigned>(payload[1]));
    }
};

/// Reads one frame; nothing on EOF, error or a payload over `limit`.
inline std::optional<message> read(int fd, std::size_t limit = 1u << 20) {
    std::uint8_t h[2];
    if (!recv_exact(fd, h, 2)) return std::nullopt;
    message m;
    m.fin = (h[0] & 0x80) != 0;
    m.op = static_cast<opcode>(h[0] & 0x0F);
    m.masked = (h[1] & 0x80) != 0;
    std::uint64_t n = h[1] & 0x7F;
    if (n >= 126) {
        std::uint8_t ext[8];
        const std::size_t k = n == 126 ? 2 : 8;
        if (!recv_exact(fd, ext, k)) return std::nullopt;
        n = 0;
        for (std::size_t i = 0; i < k; ++i) n = (n << 8) | ext[i];
    }
    if (n > limit) return std::nullopt;
    std::uint8_t mask[4] = {};
    if (m.masked && !recv_exact(fd, mask, 4)) return std::nullopt;
    m.payload.resize(n);
    if (n != 0 && !recv_exact(fd, m.payload.data(), n)) return std::nullopt;
    if (m.masked)
        for (std::size_t i = 0; i < n; ++i) m.payload[i] ^= std::byte{mask[i % 4]};
    return m;
}

}  // namespace strix::test::ws
