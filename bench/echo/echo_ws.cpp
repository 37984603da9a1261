// strix-echo-bench --ws: frame headers, masking and the client's opening handshake.

#include "echo_ws.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <string_view>

namespace strix {
namespace {

std::string base64(const unsigned char* p, std::size_t n) {
    std::string out(4 * ((n + 2) / 3) + 1, '\0');
    const int w = ::EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), p, static_cast<int>(n));
    out.resize(static_cast<std::size_t>(w));
    return out;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

void random_bytes(void* p, std::size_t n) {
    auto* b = static_cast<unsigned char*>(p);
    while (n > 0) {
        const ssize_t got = ::getrandom(b, n, 0);
        if (got < 0) {
            if (errno == EINTR) continue;
            // getrandom cannot fail on Linux >= 3.17 once the pool is ready; keep the key unique anyway.
            for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(i * 131 + 7);
            return;
        }
        b += got;
        n -= static_cast<std::size_t>(got);
    }
}

}  // namespace

std::size_t ws_write_client_header(std::uint8_t* p, std::uint8_t opcode, std::size_t len, std::uint32_t mask) noexcept {
    p[0] = static_cast<std::uint8_t>(0x80 | opcode);
    std::size_t h = 2;
    if (len < 126) {
        p[1] = static_cast<std::uint8_t>(0x80 | len);
    } else if (len <= 0xffff) {
        p[1] = 0x80 | 126;
        p[2] = static_cast<std::uint8_t>(len >> 8);
        p[3] = static_cast<std::uint8_t>(len);
        h = 4;
    } else {
        p[1] = 0x80 | 127;
        const auto wide = static_cast<std::uint64_t>(len);
        for (int i = 0; i < 8; ++i) p[2 + i] = static_cast<std::uint8_t>(wide >> (56 - 8 * i));
        h = 10;
    }
    std::memcpy(p + h, &mask, 4);
    return h + 4;
}

void ws_apply_mask(std::uint8_t* p, std::size_t n, std::uint32_t mask) noexcept { ws_copy_masked(p, p, n, mask); }

void ws_copy_masked(std::uint8_t* dst, const std::uint8_t* src, std::size_t n, std::uint32_t mask) noexcept {
    // Eight bytes at a time: the key repeats every 4 bytes, so a doubled key covers a word. Each
    // word is read before it is written, so dst may be src (ws_apply_mask).
    const std::uint64_t wide = (static_cast<std::uint64_t>(mask) << 32) | mask;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, src + i, 8);
        w ^= wide;
        std::memcpy(dst + i, &w, 8);
    }
    std::uint8_t key[4];
    std::memcpy(key, &mask, 4);
    for (; i < n; ++i) dst[i] = static_cast<std::uint8_t>(src[i] ^ key[i & 3]);
}

int ws_parse_header(const std::uint8_t* p, std::size_t n, ws_frame_header& h) noexcept {
    if (n < 2) return 0;
    h.fin = (p[0] & 0x80) != 0;
    h.rsv = static_cast<std::uint8_t>(p[0] & 0x70);
    h.opcode = static_cast<std::uint8_t>(p[0] & 0x0f);
    h.masked = (p[1] & 0x80) != 0;
    const std::uint8_t len7 = p[1] & 0x7f;
    std::size_t at = 2;
    if (len7 < 126) {
        h.len = len7;
    } else if (len7 == 126) {
        if (n < 4) return 0;
        h.len = (static_cast<std::uint64_t>(p[2]) << 8) | p[3];
        at = 4;
    } else {
        if (n < 10) return 0;
        h.len = 0;
        for (int i = 0; i < 8; ++i) h.len = (h.len << 8) | p[2 + i];
        if (h.len >> 63) return -1;
        at = 10;
    }
    if (h.masked) at += 4;
    if (n < at) return 0;
    h.header_len = at;
    return 1;
}

ws_masker::ws_masker() {
    random_bytes(&s_, sizeof s_);
    if (s_ == 0) s_ = 0x9e3779b97f4a7c15ULL;  // xorshift's one fixed point
}

std::string ws_client_handshake(int fd, const std::string& host, std::uint16_t port, const std::string& path,
                                echo_buffer& rest) {
    unsigned char nonce[16];
    random_bytes(nonce, sizeof nonce);
    const std::string key = base64(nonce, sizeof nonce);
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) +
                                "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
                                "\r\nSec-WebSocket-Version: 13\r\n\r\n";
    for (std::size_t off = 0; off < request.size();) {
        const ssize_t n = ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return std::string("sending the upgrade request failed: ") + std::strerror(errno);
        }
        off += static_cast<std::size_t>(n);
    }
    std::string resp;
    std::size_t end = std::string::npos;
    while (end == std::string::npos) {
        if (resp.size() > 16384) return "the upgrade response is over 16 KiB without an end";
        char buf[4096];
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::string("reading the upgrade response failed: ") + std::strerror(errno);
        if (n == 0) return "the server closed the connection during the upgrade";
        resp.append(buf, static_cast<std::size_t>(n));
        end = resp.find("\r\n\r\n");
    }
    const std::string head = resp.substr(0, end);
    const std::size_t extra = resp.size() - (end + 4);
    if (extra > 0) {
        std::memcpy(rest.prepare(extra), resp.data() + end + 4, extra);
        rest.commit(extra);
    }
    const std::size_t eol = head.find("\r\n");
    const std::string status = head.substr(0, eol);
    if (status.rfind("HTTP/1.1 101", 0) != 0) return "the upgrade was refused: '" + status + "'";

    unsigned char digest[SHA_DIGEST_LENGTH];
    const std::string keyed = key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    ::SHA1(reinterpret_cast<const unsigned char*>(keyed.data()), keyed.size(), digest);
    const std::string accept = base64(digest, sizeof digest);
    bool upgrade = false, connection = false, accepted = false;
    std::size_t at = eol == std::string::npos ? head.size() : eol + 2;
    while (at < head.size()) {
        std::size_t next = head.find("\r\n", at);
        if (next == std::string::npos) next = head.size();
        const std::string_view line(head.data() + at, next - at);
        at = next + 2;
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string name = lower(trim(line.substr(0, colon)));
        const std::string_view value = trim(line.substr(colon + 1));
        if (name == "upgrade") upgrade = lower(value) == "websocket";
        if (name == "connection") connection = lower(value).find("upgrade") != std::string::npos;
        if (name == "sec-websocket-accept") accepted = value == accept;
        if (name == "sec-websocket-extensions") return "the server chose an extension that was not offered";
    }
    if (!upgrade) return "the 101 response has no 'Upgrade: websocket'";
    if (!connection) return "the 101 response has no 'Connection: Upgrade'";
    if (!accepted) return "the 101 response's Sec-WebSocket-Accept is missing or wrong";
    return {};
}

}  // namespace strix
