#include <strix/link/zmtp.hpp>

#include <algorithm>
#include <cstring>

namespace strix::link {
namespace {

class link_category_impl final : public std::error_category {
public:
    const char* name() const noexcept override { return "strix.link"; }
    std::string message(int v) const override {
        switch (static_cast<link_errc>(v)) {
            case link_errc::bad_greeting: return "not a ZMTP peer (bad greeting signature)";
            case link_errc::unsupported_version: return "ZMTP version below 3.0";
            case link_errc::unsupported_mechanism: return "the peer's security mechanism is not this socket's";
            case link_errc::bad_frame: return "malformed ZMTP frame or command";
            case link_errc::bad_handshake: return "unexpected command during the ZMTP handshake";
            case link_errc::socket_type_mismatch: return "the peer's socket type cannot talk to this one";
            case link_errc::peer_error: return "the peer sent ERROR";
            case link_errc::message_too_large: return "message larger than the socket's max message size";
            case link_errc::handshake_timeout: return "ZMTP handshake did not complete in time";
            case link_errc::heartbeat_timeout: return "no traffic from the peer within the heartbeat timeout";
            case link_errc::would_block: return "high-water mark reached; retry when writable";
            case link_errc::no_peer: return "no peer to send to";
            case link_errc::bad_state: return "operation out of turn for this socket type";
            case link_errc::not_supported: return "operation not supported by this socket type";
            case link_errc::address_in_use: return "inproc name already bound";
            case link_errc::closed: return "socket closed";
            case link_errc::auth_failed: return "the peer failed authentication (ZAP)";
            case link_errc::bad_crypto: return "a CURVE box did not open (wrong key) or a nonce was reused";
            case link_errc::zap_unavailable: return "PLAIN needs a ZAP handler and none is bound";
            case link_errc::zap_bad_reply: return "the ZAP handler's reply is malformed";
        }
        return "unknown strix.link error";
    }
};

}  // namespace

const std::error_category& link_category() noexcept {
    static const link_category_impl c;
    return c;
}

namespace zmtp {
namespace {

std::uint64_t load_be64(const std::byte* p) noexcept {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<std::uint64_t>(p[i]);
    return v;
}

class greeting_cutter final : public framer {
public:
    frame_cut cut(std::span<const std::byte> b, std::size_t) const noexcept override {
        if (b[0] != std::byte{0xFF}) return {0, link_errc::bad_greeting};
        // Bit 0 of byte 9 set marks a versioned (ZMTP 2+) peer.
        if (b.size() >= 10 && (static_cast<unsigned>(b[9]) & 1u) == 0) return {0, link_errc::bad_greeting};
        if (b.size() >= 11 && static_cast<unsigned>(b[10]) < 3) return {0, link_errc::unsupported_version};
        return {greeting_size, {}};
    }
    const char* name() const noexcept override { return "zmtp-greeting"; }
};

class frame_cutter final : public framer {
public:
    frame_cut cut(std::span<const std::byte> b, std::size_t) const noexcept override {
        const auto flags = static_cast<std::uint8_t>(b[0]);
        if (flags & 0xF8) return {0, link_errc::bad_frame};
        if (!(flags & flag_long)) {
            if (b.size() < 2) return {};
            return {2 + static_cast<std::size_t>(b[1]), {}};
        }
        if (b.size() < 9) return {};
        const std::uint64_t n = load_be64(b.data() + 1);
        // A size the address space cannot hold is still just "too large" for the session.
        if (n > SIZE_MAX - 9) return {SIZE_MAX, {}};
        return {9 + static_cast<std::size_t>(n), {}};
    }
    const char* name() const noexcept override { return "zmtp-frame"; }
};

const greeting_cutter greeting_instance;
const frame_cutter frame_instance;

void put_be32(std::vector<std::byte>& v, std::uint32_t x) {
    for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<std::byte>((x >> s) & 0xff));
}

void put_str(std::vector<std::byte>& v, std::string_view s) {
    for (char c : s) v.push_back(static_cast<std::byte>(c));
}

}  // namespace

void write_greeting(std::span<std::byte, greeting_size> out) noexcept {
    std::memset(out.data(), 0, greeting_size);
    out[0] = std::byte{0xFF};
    out[8] = std::byte{0x01};  // padding read as a length by ZMTP 1.0 peers, as libzmq sends it
    out[9] = std::byte{0x7F};
    out[10] = std::byte{3};
    out[11] = std::byte{1};
    std::memcpy(out.data() + 12, "NULL", 4);
}

void write_greeting(std::span<std::byte, greeting_size> out, std::string_view mechanism, bool as_server) noexcept {
    write_greeting(out);
    std::memset(out.data() + 12, 0, 20);
    std::memcpy(out.data() + 12, mechanism.data(), std::min<std::size_t>(mechanism.size(), 20));
    out[32] = as_server ? std::byte{1} : std::byte{0};
}

std::error_code parse_greeting(std::span<const std::byte, greeting_size> in, greeting& out) noexcept {
    if (in[0] != std::byte{0xFF} || (static_cast<unsigned>(in[9]) & 1u) == 0) return link_errc::bad_greeting;
    out.major = static_cast<std::uint8_t>(in[10]);
    out.minor = static_cast<std::uint8_t>(in[11]);
    if (out.major < 3) return link_errc::unsupported_version;
    const char* m = reinterpret_cast<const char*>(in.data() + 12);
    out.mechanism.assign(m, strnlen(m, 20));
    out.as_server = in[32] != std::byte{0};
    return {};
}

const framer& greeting_framer() noexcept { return greeting_instance; }
const framer& frame_framer() noexcept { return frame_instance; }

frame split(bytes_view whole) noexcept {
    frame f;
    f.flags = static_cast<std::uint8_t>(whole[0]);
    const std::size_t hdr = (f.flags & flag_long) ? 9 : 2;
    f.body = whole.subspan(hdr);
    return f;
}

std::size_t write_header(std::byte* out, std::uint8_t flags, std::uint64_t size) noexcept {
    if (size <= 255) {
        out[0] = static_cast<std::byte>(flags);
        out[1] = static_cast<std::byte>(size);
        return 2;
    }
    out[0] = static_cast<std::byte>(flags | flag_long);
    for (int i = 0; i < 8; ++i) out[1 + i] = static_cast<std::byte>((size >> (56 - 8 * i)) & 0xff);
    return 9;
}

bool parse_command(bytes_view body, command& out) noexcept {
    if (body.empty()) return false;
    const std::size_t n = static_cast<std::size_t>(body[0]);
    if (n == 0 || 1 + n > body.size()) return false;
    out.name = std::string_view(reinterpret_cast<const char*>(body.data() + 1), n);
    out.data = body.subspan(1 + n);
    return true;
}

std::vector<std::byte> command_frame(std::string_view name, bytes_view data) {
    std::vector<std::byte> v(max_header);
    const std::uint64_t body = 1 + name.size() + data.size();
    const std::size_t h = write_header(v.data(), flag_command, body);
    v.resize(h);
    v.push_back(static_cast<std::byte>(name.size()));
    put_str(v, name);
    v.insert(v.end(), data.begin(), data.end());
    return v;
}

std::vector<std::byte> ready_frame(std::string_view socket_type, const bytes_view* identity) {
    std::vector<std::byte> props;
    auto prop = [&](std::string_view name, bytes_view value) {
        props.push_back(static_cast<std::byte>(name.size()));
        put_str(props, name);
        put_be32(props, static_cast<std::uint32_t>(value.size()));
        props.insert(props.end(), value.begin(), value.end());
    };
    prop("Socket-Type", std::as_bytes(std::span(socket_type.data(), socket_type.size())));
    if (identity) prop("Identity", *identity);
    return command_frame("READY", props);
}

std::vector<std::byte> error_frame(std::string_view reason) {
    reason = reason.substr(0, 255);
    std::vector<std::byte> data;
    data.push_back(static_cast<std::byte>(reason.size()));
    put_str(data, reason);
    return command_frame("ERROR", data);
}

std::vector<std::byte> ping_frame(std::uint16_t ttl, bytes_view context) {
    std::vector<std::byte> data{static_cast<std::byte>(ttl >> 8), static_cast<std::byte>(ttl & 0xff)};
    context = context.subspan(0, std::min<std::size_t>(context.size(), 16));
    data.insert(data.end(), context.begin(), context.end());
    return command_frame("PING", data);
}

std::vector<std::byte> pong_frame(bytes_view context) {
    return command_frame("PONG", context.subspan(0, std::min<std::size_t>(context.size(), 16)));
}

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

}  // namespace zmtp
}  // namespace strix::link
