#pragma once
// RESP (REdis Serialization Protocol, version 2) values for the chat cluster's Redis client:
// a reply tree that owns its bytes, the reader that builds one from a frame the resp_framer cut
// (hiredis 0.14's redisReader does the parsing), and the encoding of a command.
//
//   command  ["SET", "k", "v"]  ->  *3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n
//   reply    *2\r\n:1\r\n$2\r\nhi\r\n  ->  resp_reply{array, [integer 1, string "hi"]}

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

struct redisReader;

namespace strix::chat {

struct resp_reply {
    enum class kind : std::uint8_t { string, array, integer, nil, status, error };

    kind type = kind::nil;
    std::int64_t integer = 0;          // kind::integer
    std::string str;                   // kind::string, status, error
    std::vector<resp_reply> elements;  // kind::array

    bool is_error() const noexcept { return type == kind::error; }
    bool is_nil() const noexcept { return type == kind::nil; }
    /// The bytes of a string, status or error reply (empty otherwise).
    std::string_view text() const noexcept { return str; }
    /// Renders the reply for logs and test messages, e.g. [1, "hi", nil].
    std::string describe() const;
};

/// Turns complete replies (frames cut by resp_framer) into resp_reply trees with hiredis's
/// reader. One reader per connection; its shard only.
class resp_reader {
public:
    resp_reader();
    ~resp_reader();
    resp_reader(const resp_reader&) = delete;
    resp_reader& operator=(const resp_reader&) = delete;

    /// Parses exactly one top-level reply from `frame`. Returns redis_errc::protocol_error when
    /// hiredis rejects it or when the frame holds less or more than one reply (the framer and
    /// hiredis disagree), with hiredis's message in last_error().
    std::error_code parse(std::span<const std::byte> frame, resp_reply& out);
    const std::string& last_error() const noexcept { return error_; }

private:
    void reset();

    redisReader* reader_ = nullptr;
    std::string error_;
};

/// Appends args as one RESP command (an array of bulk strings) to out.
void append_command(std::string& out, std::span<const std::string_view> args);
/// The same for a braced list: append_command(out, {"GET", key}).
inline void append_command(std::string& out, std::initializer_list<std::string_view> args) {
    append_command(out, std::span<const std::string_view>(args.begin(), args.size()));
}

}  // namespace strix::chat
