#pragma once
// load_ws: strix-chat-load --ws, the client half of WebSocket (RFC 6455) inside the load worker's
// own epoll loop (the tool drives its sockets itself, see load_worker.hpp). Per connection: the
// upgrade request and its answer, then every outgoing frame wrapped in a masked binary message
// and every incoming message unwrapped back into the frame stream the worker decodes, so the
// verification (delivery_checker) is the TCP one.
//
//   out: [ ... | 82 | 80|len (+ext) | key(4) | frame ^ key ]      wrap_tail: in place, after append
//   in:  [ 82 len frame ][ 82 len frame ] ...  -> unwrap ->  [ frame ][ frame ] ...  (in place)

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strix::chat {

class load_ws {
public:
    /// seed varies the Sec-WebSocket-Key and the masking keys between connections.
    explicit load_ws(std::uint32_t seed);

    /// Appends the upgrade request for ws://host:port/path (no Origin: a program, not a browser).
    void request(std::vector<std::byte>& out, std::string_view host, std::uint16_t port, std::string_view path);

    struct head_result {
        std::size_t used = 0;  // bytes of the input that belong to the response head
        bool done = false;     // the head is complete and accepted: frames follow
    };
    /// Reads the server's answer to the upgrade; a refusal or a wrong Sec-WebSocket-Accept sets
    /// error().
    head_result read_head(std::span<const std::byte> in);

    /// Wraps the frame appended to out at `at` (through out's end) into one masked binary message.
    void wrap_tail(std::vector<std::byte>& out, std::size_t at);

    /// Strips the WebSocket framing from the n bytes at p in place; returns how many stream bytes
    /// (the messages' payloads, in order) are now at p. A close frame, a masked or text frame, or
    /// reserved bits set error().
    std::size_t unwrap(std::byte* p, std::size_t n);

    /// Why the connection is unusable; empty while it is fine.
    const std::string& error() const noexcept { return error_; }

private:
    std::uint32_t next_random() noexcept;
    void frame_done();

    std::uint32_t rng_;
    std::string accept_;  // the Sec-WebSocket-Accept the server must answer with
    std::string head_;    // the response head so far
    std::string error_;
    // The incoming frame being read: its header bytes, then what is left of its payload.
    std::uint8_t hdr_[14] = {};
    std::size_t hdr_have_ = 0;
    bool in_payload_ = false;
    std::uint8_t opcode_ = 0;
    std::uint64_t left_ = 0;
    std::vector<std::byte> control_;  // a control frame's payload (at most 125 bytes)
};

}  // namespace strix::chat
