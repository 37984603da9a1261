#include "load_ws.hpp"
#include "ws_client_frame.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cstring>

namespace strix::chat {
namespace {

void append(std::vector<std::byte>& out, std::string_view s) {
    const auto* b = reinterpret_cast<const std::byte*>(s.data());
    out.insert(out.end(), b, b + s.size());
}

// Case-insensitive search for "name: value" in a response head (RFC 7230 header names).
bool has_header(std::string_view head, std::string_view name, std::string_view value) {
    for (std::size_t at = head.find("\r\n"); at != std::string_view::npos; at = head.find("\r\n", at + 2)) {
        const std::string_view line = head.substr(at + 2, head.find("\r\n", at + 2) - at - 2);
        if (line.size() <= name.size() || line[name.size()] != ':') continue;
        if (!std::equal(name.begin(), name.end(), line.begin(),
                        [](char a, char b) { return (a | 0x20) == (b | 0x20); }))
            continue;
        std::string_view v = line.substr(name.size() + 1);
        while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
        while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
        if (v == value) return true;
    }
    return false;
}

}  // namespace

load_ws::load_ws(std::uint32_t seed) : rng_(seed * 2654435761u + 0x9E3779B9u) {
    if (rng_ == 0) rng_ = 1;
}

std::uint32_t load_ws::next_random() noexcept {
    // xorshift32: masking keys need no secrecy against our own server.
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 17;
    rng_ ^= rng_ << 5;
    return rng_;
}

void load_ws::request(std::vector<std::byte>& out, std::string_view host, std::uint16_t port, std::string_view path) {
    unsigned char nonce[16];
    for (int i = 0; i < 16; i += 4) {
        const std::uint32_t r = next_random();
        std::memcpy(nonce + i, &r, 4);
    }
    const std::string key = base64(nonce, sizeof nonce);
    std::string keyed = key;
    keyed.append("258EAFA5-E914-47DA-95CA-C5AB0DC85B11");  // RFC 6455's GUID
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(keyed.data()), keyed.size(), digest);
    accept_ = base64(digest, sizeof digest);
    append(out, "GET ");
    append(out, path);
    append(out, " HTTP/1.1\r\nHost: ");
    append(out, host);
    append(out, ":");
    append(out, std::to_string(port));
    append(out, "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ");
    append(out, key);
    append(out, "\r\n\r\n");
}

load_ws::head_result load_ws::read_head(std::span<const std::byte> in) {
    const std::size_t before = head_.size();
    head_.append(reinterpret_cast<const char*>(in.data()), std::min<std::size_t>(in.size(), 16384));
    const std::size_t end = head_.find("\r\n\r\n");
    if (end == std::string::npos) {
        if (head_.size() > 8192) error_ = "the WebSocket upgrade's answer has no end";
        return {in.size(), false};
    }
    head_.resize(end + 4);
    const std::size_t used = head_.size() - before;
    if (head_.rfind("HTTP/1.1 101", 0) != 0) {
        // Appended, not chained with +: GCC 12 misreads such chains as overlapping copies.
        error_ = "the WebSocket upgrade was refused: ";
        error_.append(head_, 0, head_.find("\r\n"))
            .append(" (is --port the server's --ws-port, and --ws-path its path?)");
    } else if (!has_header(head_, "Sec-WebSocket-Accept", accept_)) {
        error_ = "the WebSocket upgrade's Sec-WebSocket-Accept does not match the key sent";
    }
    return {used, error_.empty()};
}

void load_ws::wrap_tail(std::vector<std::byte>& out, std::size_t at) {
    const std::size_t n = out.size() - at;
    std::byte h[14];
    std::size_t hs = ws_client_head(h, n);
    const std::uint32_t key = next_random();
    std::memcpy(h + hs, &key, 4);
    const std::byte* mask = h + hs;
    hs += 4;
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), h, h + hs);
    std::byte* p = out.data() + at + hs;
    for (std::size_t i = 0; i < n; ++i) p[i] ^= mask[i & 3];
}

void load_ws::frame_done() {
    in_payload_ = false;
    if (opcode_ == 0x8) {
        const unsigned code = control_.size() >= 2
                                  ? std::to_integer<unsigned>(control_[0]) << 8 | std::to_integer<unsigned>(control_[1])
                                  : 1005;
        error_ = "the server closed the WebSocket with code ";
        error_.append(std::to_string(code));
    }
    control_.clear();  // pings (the server sends none) and pongs need nothing
}

std::size_t load_ws::unwrap(std::byte* p, std::size_t n) {
    std::size_t out = 0, i = 0;
    while (i < n && error_.empty()) {
        if (!in_payload_) {
            hdr_[hdr_have_++] = std::to_integer<std::uint8_t>(p[i++]);
            if (hdr_have_ < 2) continue;
            const unsigned len7 = hdr_[1] & 0x7Fu;
            const std::size_t need = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0);
            if (hdr_have_ < need) continue;
            hdr_have_ = 0;
            opcode_ = hdr_[0] & 0x0F;
            if ((hdr_[0] & 0x70) != 0 || (hdr_[1] & 0x80) != 0 || opcode_ == 0x1) {
                error_ = "the server sent a WebSocket frame the chat protocol does not use (masked, text or RSV bits)";
                break;
            }
            left_ = len7;
            if (len7 >= 126) {
                left_ = 0;
                for (std::size_t k = 2; k < need; ++k) left_ = left_ << 8 | hdr_[k];
            }
            in_payload_ = true;
            if (left_ == 0) frame_done();
            continue;
        }
        const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(left_, n - i));
        if ((opcode_ & 0x8) == 0) {
            std::memmove(p + out, p + i, take);  // out <= i: the stream only moves forward
            out += take;
        } else if (control_.size() + take <= 125) {
            control_.insert(control_.end(), p + i, p + i + take);
        }
        i += take;
        left_ -= take;
        if (left_ == 0) frame_done();
    }
    return out;
}

}  // namespace strix::chat
