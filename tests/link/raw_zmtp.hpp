#pragma once
// ZMTP 3.x written and read by hand over a plain socket, for tests that play a peer byte by byte
// (a well-behaved one, a ZMTP 3.0 one, or a hostile one). Independent of strix's codec on purpose:
// the bytes here come from the RFCs (rfc.zeromq.org/spec/23 and /37), not from src/link.
#include "support/loopback.hpp"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace strix::test::raw {

inline bytes of(const std::string& s) {
    bytes b(s.size());
    if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
    return b;
}
inline bytes operator+(bytes a, const bytes& b) {
    append(a, b);
    return a;
}

/// A 64-byte greeting: signature (0xFF, 8 padding bytes, 0x7F), version, mechanism, filler.
inline bytes greeting(std::uint8_t major = 3, std::uint8_t minor = 1, const std::string& mechanism = "NULL",
                      std::uint8_t sig9 = 0x7f) {
    bytes g(64, std::byte{0});
    g[0] = std::byte{0xff};
    g[8] = std::byte{0x01};
    g[9] = std::byte{sig9};
    g[10] = std::byte{major};
    g[11] = std::byte{minor};
    std::memcpy(g.data() + 12, mechanism.data(), std::min<std::size_t>(mechanism.size(), 20));
    return g;
}

/// A frame header: short (flags, 1-byte size) up to 255 unless forced long (flags | 0x02, 8-byte
/// big-endian size).
inline bytes header(std::uint8_t flags, std::uint64_t size, bool force_long = false) {
    if (size <= 255 && !force_long) return {std::byte{flags}, std::byte{static_cast<std::uint8_t>(size)}};
    bytes h(9);
    h[0] = std::byte{static_cast<std::uint8_t>(flags | 0x02)};
    for (int i = 0; i < 8; ++i)
        h[static_cast<std::size_t>(1 + i)] = std::byte{static_cast<std::uint8_t>(size >> (56 - 8 * i))};
    return h;
}
inline bytes frame(std::uint8_t flags, const std::string& body, bool force_long = false) {
    const bytes h = header(flags, body.size(), force_long);
    bytes f(h.size() + body.size());  // sized once (gcc 12 warns falsely on resize + memcpy here)
    std::memcpy(f.data(), h.data(), h.size());
    if (!body.empty()) std::memcpy(f.data() + h.size(), body.data(), body.size());
    return f;
}
inline constexpr std::uint8_t more = 0x01, command_flag = 0x04;

/// A command frame: name length, name, data.
inline bytes command(const std::string& name, const std::string& data) {
    std::string body(1, static_cast<char>(name.size()));
    body += name;
    body += data;
    return frame(command_flag, body);
}
/// READY's metadata: name length (1), name, value length (4, big-endian), value.
inline std::string property(const std::string& name, const std::string& value) {
    std::string p(1, static_cast<char>(name.size()));
    p += name;
    const auto n = static_cast<std::uint32_t>(value.size());
    for (int s = 24; s >= 0; s -= 8) p.push_back(static_cast<char>((n >> s) & 0xff));
    return p + value;
}
inline bytes ready(const std::string& type) { return command("READY", property("Socket-Type", type)); }

/// A frame read back: flags and body.
struct frame_in {
    std::uint8_t flags = 0;
    std::string body;
    bool is_command() const { return flags & command_flag; }
    /// A command's name (empty for a message).
    std::string name() const {
        if (!is_command() || body.empty()) return {};
        return body.substr(1, static_cast<std::size_t>(static_cast<unsigned char>(body[0])));
    }
    /// A command's data, after the name.
    std::string data() const { return body.substr(1 + name().size()); }
};

/// Reads one frame (nothing on timeout, EOF or a body over 16 MiB).
inline std::optional<frame_in> read_frame(int fd) {
    unsigned char h[9];
    if (!recv_exact(fd, h, 2)) return std::nullopt;
    frame_in f;
    f.flags = h[0];
    std::uint64_t size = h[1];
    if (f.flags & 0x02) {
        if (!recv_exact(fd, h + 2, 7)) return std::nullopt;
        size = 0;
        for (int i = 1; i < 9; ++i) size = (size << 8) | h[i];
    }
    if (size > (16u << 20)) return std::nullopt;
    f.body.resize(static_cast<std::size_t>(size));
    if (size && !recv_exact(fd, f.body.data(), f.body.size())) return std::nullopt;
    return f;
}

/// Reads the peer's 64-byte greeting.
inline std::optional<bytes> read_greeting(int fd) {
    bytes g(64);
    if (!recv_exact(fd, g.data(), g.size())) return std::nullopt;
    return g;
}

/// A Socket-Type or Identity property out of READY's data ("" if absent).
inline std::string ready_property(const std::string& data, const std::string& want) {
    std::size_t i = 0;
    while (i < data.size()) {
        const std::size_t nlen = static_cast<unsigned char>(data[i]);
        if (i + 1 + nlen + 4 > data.size()) return {};
        const std::string name = data.substr(i + 1, nlen);
        i += 1 + nlen;
        std::size_t vlen = 0;
        for (int k = 0; k < 4; ++k)
            vlen = (vlen << 8) | static_cast<unsigned char>(data[i + static_cast<std::size_t>(k)]);
        i += 4;
        if (vlen > data.size() - i) return {};
        if (name == want) return data.substr(i, vlen);
        i += vlen;
    }
    return {};
}

/// The port of "tcp://127.0.0.1:PORT".
inline std::uint16_t port_of(const std::string& address) {
    return static_cast<std::uint16_t>(std::stoul(address.substr(address.rfind(':') + 1)));
}

/// A raw connection to a strix tcp:// or ipc:// address (5 s timeouts), closed at scope end.
class client {
public:
    explicit client(const std::string& address) {
        fd_ = address.starts_with("ipc://") ? connect_unix(address.substr(6)) : connect_tcp(port_of(address));
    }
    ~client() { close(); }
    client(const client&) = delete;
    client& operator=(const client&) = delete;
    int fd() const { return fd_; }
    bool ok() const { return fd_ >= 0; }
    bool send(const bytes& b) { return send_all(fd_, b); }
    void close() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    /// Reads strix's greeting and READY (sent once ours arrived); the READY's data.
    std::optional<std::string> handshake(const std::string& our_type, std::uint8_t minor = 1) {
        if (!send(greeting(3, minor) + ready(our_type))) return std::nullopt;
        if (!read_greeting(fd_)) return std::nullopt;
        auto f = read_frame(fd_);
        if (!f || f->name() != "READY") return std::nullopt;
        return f->data();
    }

private:
    int fd_ = -1;
};

}  // namespace strix::test::raw
