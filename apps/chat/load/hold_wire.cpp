#include "hold_wire.hpp"
#include "ws_client_frame.hpp"

#include <strix/codec/frame_header.hpp>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>
#include <stdexcept>

namespace strix::chat::hold {
namespace {

// RFC 7515's base64url: the URL-safe alphabet, no padding.
std::string base64url(std::string_view s) {
    std::string out = base64(reinterpret_cast<const unsigned char*>(s.data()), s.size());
    while (!out.empty() && out.back() == '=') out.pop_back();
    for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
    return out;
}

void append(std::vector<std::byte>& out, std::string_view s) {
    const auto* b = reinterpret_cast<const std::byte*>(s.data());
    out.insert(out.end(), b, b + s.size());
}

std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

}  // namespace

jwt_signer jwt_signer::load(const std::string& path, const std::string& audience, const std::string& issuer,
                            double ttl_s) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read --jwt-key " + path);
    jwt_signer s;
    s.secret_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!s.secret_.empty() && s.secret_.back() == '\n') s.secret_.pop_back();
    if (!s.secret_.empty() && s.secret_.back() == '\r') s.secret_.pop_back();
    if (s.secret_.size() < 32) throw std::runtime_error("--jwt-key " + path + " holds fewer than 32 bytes");
    if (s.secret_.find("-----BEGIN") != std::string::npos || s.secret_.front() == '{')
        throw std::runtime_error("--jwt-key " + path + " is not an HS256 secret (PEM or JWK): the tool signs HS256");
    s.header_b64_ = base64url(R"({"alg":"HS256","typ":"JWT"})");
    if (!audience.empty()) s.extra_ += ",\"aud\":" + nlohmann::json(audience).dump();
    if (!issuer.empty()) s.extra_ += ",\"iss\":" + nlohmann::json(issuer).dump();
    s.ttl_s_ = static_cast<std::int64_t>(ttl_s);
    return s;
}

std::string jwt_signer::sign(std::string_view sub, std::uint64_t room_id) const {
    const std::int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    // sub is an account name (letters, digits, _ . -): no escaping needed.
    std::string claims = "{\"sub\":\"";
    claims.append(sub).append("\",\"iat\":").append(std::to_string(now));
    claims.append(",\"exp\":").append(std::to_string(now + ttl_s_)).append(extra_);
    if (room_id != 0) claims.append(",\"rooms\":[").append(std::to_string(room_id)).append("]");
    claims.push_back('}');
    std::string token = header_b64_;
    token.push_back('.');
    token += base64url(claims);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
         reinterpret_cast<const unsigned char*>(token.data()), token.size(), mac, &len);
    token.push_back('.');
    token += base64url(std::string_view(reinterpret_cast<const char*>(mac), len));
    return token;
}

void append_frame(std::vector<std::byte>& out, const flatbuffers::FlatBufferBuilder& fbb, proto::msg_type type) {
    const std::span<const std::byte> body(reinterpret_cast<const std::byte*>(fbb.GetBufferPointer()), fbb.GetSize());
    const std::size_t at = out.size();
    out.resize(at + frame_header_size + body.size());
    encode_header(out.data() + at, make_header(static_cast<std::uint16_t>(type), body, false));
    std::memcpy(out.data() + at + frame_header_size, body.data(), body.size());
}

void append_login(std::vector<std::byte>& out, flatbuffers::FlatBufferBuilder& fbb, std::string_view jwt) {
    fbb.Clear();
    const auto token = fbb.CreateString(jwt.data(), jwt.size());
    proto::login_reqBuilder b(fbb);
    b.add_jwt(token);
    b.add_version(2);  // many rooms: a returning account is put back in its rooms at login
    fbb.Finish(b.Finish());
    append_frame(out, fbb, proto::msg_type::login_req);
}

void append_join(std::vector<std::byte>& out, flatbuffers::FlatBufferBuilder& fbb, std::uint64_t room) {
    fbb.Clear();
    fbb.Finish(proto::Createjoin_room_req(fbb, room));
    append_frame(out, fbb, proto::msg_type::join_room_req);
}

void append_ping(std::vector<std::byte>& out, flatbuffers::FlatBufferBuilder& fbb, std::uint64_t ts) {
    fbb.Clear();
    fbb.Finish(proto::Createping_req(fbb, ts));
    append_frame(out, fbb, proto::msg_type::ping_req);
}

void append_chat(std::vector<std::byte>& out, flatbuffers::FlatBufferBuilder& fbb, std::uint64_t room,
                 std::string_view text, std::uint64_t ts, std::uint64_t client_seq) {
    fbb.Clear();
    const auto t = fbb.CreateString(text.data(), text.size());
    fbb.Finish(proto::Createchat_req(fbb, t, ts, client_seq, room));
    append_frame(out, fbb, proto::msg_type::chat_req);
}

void append_create_room(std::vector<std::byte>& out, flatbuffers::FlatBufferBuilder& fbb, std::string_view name) {
    fbb.Clear();
    const auto n = fbb.CreateString(name.data(), name.size());
    fbb.Finish(proto::Createcreate_room_req(fbb, n));
    append_frame(out, fbb, proto::msg_type::create_room_req);
}

void append_list_rooms(std::vector<std::byte>& out, flatbuffers::FlatBufferBuilder& fbb) {
    fbb.Clear();
    fbb.Finish(proto::Createlist_rooms_req(fbb));
    append_frame(out, fbb, proto::msg_type::list_rooms_req);
}

std::string broadcast_text(std::uint32_t k, std::uint32_t bytes) {
    std::string s = "hold " + std::to_string(k) + " ";
    for (std::size_t i = s.size(); i < bytes; ++i) s.push_back(static_cast<char>('a' + (i * 7 + k) % 26));
    s.resize(bytes);
    return s;
}

std::string ws_key(std::uint32_t index) {
    unsigned char nonce[16];
    const std::uint64_t a = splitmix(index), b = splitmix(a);
    std::memcpy(nonce, &a, 8);
    std::memcpy(nonce + 8, &b, 8);
    return base64(nonce, sizeof nonce);
}

std::string ws_accept(std::string_view key) {
    std::string keyed(key);
    keyed.append("258EAFA5-E914-47DA-95CA-C5AB0DC85B11");  // RFC 6455's GUID
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1(reinterpret_cast<const unsigned char*>(keyed.data()), keyed.size(), digest);
    return base64(digest, sizeof digest);
}

void append_upgrade(std::vector<std::byte>& out, std::string_view host, std::uint16_t port, std::string_view path,
                    std::uint32_t index) {
    append(out, "GET ");
    append(out, path);
    append(out, " HTTP/1.1\r\nHost: ");
    append(out, host);
    append(out, ":");
    append(out, std::to_string(port));  // not ":" + ...: GCC 12 misreads such chains as overlapping copies
    append(out, "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ");
    append(out, ws_key(index));
    append(out, "\r\n\r\n");
}

void ws_wrap(std::vector<std::byte>& out, std::size_t at, std::uint32_t mask) {
    const std::size_t n = out.size() - at;
    std::byte h[14];
    std::size_t hs = ws_client_head(h, n);
    std::memcpy(h + hs, &mask, 4);
    const std::byte* key = h + hs;
    hs += 4;
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), h, h + hs);
    std::byte* p = out.data() + at + hs;
    for (std::size_t i = 0; i < n; ++i) p[i] ^= key[i & 3];
}

bool ws_unit_size(const std::byte* p, std::size_t n, std::size_t& header, std::uint64_t& total) {
    if (n < 2) return false;
    const unsigned len7 = std::to_integer<unsigned>(p[1]) & 0x7Fu;
    header = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0);
    if (n < header) return false;
    std::uint64_t len = len7;
    if (len7 >= 126) {
        len = 0;
        for (std::size_t k = 2; k < header; ++k) len = len << 8 | std::to_integer<unsigned>(p[k]);
    }
    total = header + len;
    return true;
}

}  // namespace strix::chat::hold
