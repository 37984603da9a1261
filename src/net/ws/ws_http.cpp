// The HTTP/1.1 side of the WebSocket upgrade (see ws_http.hpp).
#include "net/ws/ws_http.hpp"

#include "net/ws/ws_random.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <chrono>
#include <cstdint>
#include <cstring>

namespace strix::detail {
namespace {

constexpr std::string_view guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string_view trim(std::string_view s) noexcept {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

std::string base64(const unsigned char* p, std::size_t n) {
    std::string out(4 * ((n + 2) / 3) + 1, '\0');
    const int w = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), p, static_cast<int>(n));
    out.resize(static_cast<std::size_t>(w));
    return out;
}

// Splits "a b c" at the first two spaces (the request line, or the status line whose reason
// may hold spaces).
bool split_first_line(std::string_view line, http_head& out) {
    const auto s1 = line.find(' ');
    if (s1 == std::string_view::npos || s1 == 0) return false;
    const auto s2 = line.find(' ', s1 + 1);
    out.a = line.substr(0, s1);
    if (s2 == std::string_view::npos) {
        out.b = line.substr(s1 + 1);
        out.c = {};
    } else {
        out.b = line.substr(s1 + 1, s2 - s1 - 1);
        out.c = line.substr(s2 + 1);
    }
    return !out.b.empty();
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

std::string_view http_head::header(std::string_view name) const noexcept {
    for (auto& [k, v] : headers)
        if (iequals(k, name)) return v;
    return {};
}

bool parse_http_head(std::string_view text, http_head& out) {
    out.headers.clear();
    bool first = true;
    while (!text.empty()) {
        const auto eol = text.find("\r\n");
        if (eol == std::string_view::npos) return false;
        std::string_view line = text.substr(0, eol);
        text.remove_prefix(eol + 2);
        if (line.empty()) return !first && text.empty();
        for (char ch : line) {
            const auto c = static_cast<unsigned char>(ch);
            if ((c < 0x20 && c != '\t') || c == 0x7F) return false;
        }
        if (first) {
            if (!split_first_line(line, out)) return false;
            first = false;
            continue;
        }
        if (line.front() == ' ' || line.front() == '\t') return false;  // obsolete folding
        const auto colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0) return false;
        out.headers.emplace_back(line.substr(0, colon), trim(line.substr(colon + 1)));
    }
    return false;
}

bool header_has_token(std::string_view value, std::string_view token) noexcept {
    while (!value.empty()) {
        const auto comma = value.find(',');
        if (iequals(trim(value.substr(0, comma)), token)) return true;
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
    return false;
}

std::string ws_accept_key(std::string_view key) {
    std::string in;
    in.reserve(key.size() + guid.size());
    in.append(key).append(guid);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(in.data(), in.size(), md, &len, EVP_sha1(), nullptr) != 1) return {};
    return base64(md, len);
}

std::string ws_new_key() {
    unsigned char raw[16];
    ws_random_bytes(std::as_writable_bytes(std::span(raw)));
    return base64(raw, sizeof raw);
}

bool ws_key_valid(std::string_view key) noexcept {
    if (key.size() != 24 || key.substr(22) != "==") return false;
    for (std::size_t i = 0; i < 22; ++i) {
        const char c = key[i];
        const bool ok =
            (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
        if (!ok) return false;
    }
    // The 22nd character carries 4 bits of the last byte and 2 of padding, which must be zero.
    const char last = key[21];
    const std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    return (alphabet.find(last) & 0x0F) == 0;
}

std::string_view http_reason(int status) noexcept {
    switch (status) {
        case 101: return "Switching Protocols";
        case 200: return "OK";
        case 204: return "No Content";
        case 301: return "Moved Permanently";
        case 304: return "Not Modified";
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 426: return "Upgrade Required";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 503: return "Service Unavailable";
        default: return "Status";
    }
}

std::string http_reply(const http_response& r, bool head_only) {
    std::string out;
    out.reserve(128 + r.body.size());
    out.append("HTTP/1.1 ").append(std::to_string(r.status)).append(" ").append(http_reason(r.status)).append("\r\n");
    if (!r.content_type.empty()) out.append("Content-Type: ").append(r.content_type).append("\r\n");
    out.append("Content-Length: ").append(std::to_string(r.body.size())).append("\r\n");
    for (auto& [k, v] : r.headers) out.append(k).append(": ").append(v).append("\r\n");
    out.append("Connection: close\r\n\r\n");
    if (!head_only) out.append(r.body);
    return out;
}

void ws_random_bytes(std::span<std::byte> out) noexcept {
    if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(out.size())) != 1) {
        // OpenSSL's generator failed (no entropy source): fall back to the address space and
        // the clock; a masking key needs to be unpredictable to scripts, not secret.
        std::uint64_t x = reinterpret_cast<std::uintptr_t>(&out) ^
                          static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
        for (auto& b : out) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b = static_cast<std::byte>(x);
        }
    }
}

void ws_mask_key(std::byte (&key)[4]) noexcept {
    // xorshift64*, seeded per thread from RAND_bytes.
    thread_local std::uint64_t state = [] {
        std::uint64_t s = 0;
        ws_random_bytes(std::as_writable_bytes(std::span(&s, 1)));
        return s | 1;
    }();
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    const std::uint64_t r = state * 0x2545F4914F6CDD1Dull;
    for (int i = 0; i < 4; ++i) key[i] = static_cast<std::byte>(r >> (32 + 8 * i));
}

}  // namespace strix::detail
