#pragma once
// hold_wire: what strix-chat-hold writes and the framing it reads, all stateless so that a held
// connection keeps nothing of it: JWT signing (HS256, OpenSSL's HMAC), chat frames appended to a
// caller's buffer, and the client side of a WebSocket (the upgrade request, whose key and expected
// answer are derived from the connection's index, masked binary messages, and the size of the
// server's unmasked ones).
//
//   TCP unit: [ length u32 | type | flags | crc | body ]            (length counts the header)
//   WS unit:  [ 82 | len7 (+16/64-bit ext) ][ one strix frame ]     (server -> client, unmasked)

#include <strix/proto/chat_generated.h>

#include <flatbuffers/flatbuffers.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strix::chat::hold {

/// Signs HS256 tokens for account names with one secret. Immutable after load; any thread.
class jwt_signer {
public:
    /// Reads the secret the way the server's --jwt-key does (the file's bytes, one trailing
    /// newline dropped, at least 32). Throws std::runtime_error saying what is wrong.
    static jwt_signer load(const std::string& path, const std::string& audience, const std::string& issuer,
                           double ttl_s);

    /// A token for `sub`, valid from now for the configured lifetime; with room_id != 0 its
    /// `rooms` claim lists that room alone.
    std::string sign(std::string_view sub, std::uint64_t room_id) const;

private:
    std::string secret_;
    std::string header_b64_;  // {"alg":"HS256","typ":"JWT"}, encoded once
    std::string extra_;       // ,"aud":...,"iss":... (JSON, escaped once)
    std::int64_t ttl_s_ = 3600;
};

/// Appends one frame holding fbb's finished buffer.
void append_frame(std::vector<std::byte>& out, const flatbuffers::FlatBufferBuilder& fbb, proto::msg_type type);

void append_login(std::vector<std::byte>& out, flatbuffers::FlatBufferBuilder& fbb, std::string_view jwt);
void append_join(std::vector<std::byte>& out, flatbuffers::FlatBufferBuilder& fbb, std::uint64_t room);
void append_ping(std::vector<std::byte>& out, flatbuffers::FlatBufferBuilder& fbb, std::uint64_t ts);
void append_chat(std::vector<std::byte>& out, flatbuffers::FlatBufferBuilder& fbb, std::uint64_t room,
                 std::string_view text, std::uint64_t ts, std::uint64_t client_seq);
void append_create_room(std::vector<std::byte>& out, flatbuffers::FlatBufferBuilder& fbb, std::string_view name);
void append_list_rooms(std::vector<std::byte>& out, flatbuffers::FlatBufferBuilder& fbb);

/// Broadcast message k's text: "hold <k> " then filler up to `bytes`. Pure.
std::string broadcast_text(std::uint32_t k, std::uint32_t bytes);

/// The Sec-WebSocket-Key of connection `index` and the Sec-WebSocket-Accept the server must
/// answer it with (RFC 6455 4.2.2). Pure.
std::string ws_key(std::uint32_t index);
std::string ws_accept(std::string_view key);

/// Appends the upgrade request of connection `index`.
void append_upgrade(std::vector<std::byte>& out, std::string_view host, std::uint16_t port, std::string_view path,
                    std::uint32_t index);

/// Wraps out[at..end) into one masked binary message, in place, with masking key `mask`.
void ws_wrap(std::vector<std::byte>& out, std::size_t at, std::uint32_t mask);

/// Reads a server message's header at p (n bytes there). Returns false while the header is
/// incomplete; else sets `header` (2, 4 or 10 bytes) and `total` (header and payload).
bool ws_unit_size(const std::byte* p, std::size_t n, std::size_t& header, std::uint64_t& total);

}  // namespace strix::chat::hold
