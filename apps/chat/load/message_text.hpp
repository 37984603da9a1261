#pragma once
// message_text: the chat text the load tool sends, a pure function of (sender id, client_seq).
//
// A receiver recomputes what a sender must have sent from the sender's player id and the
// client_seq carried in the chat_msg, so content is verified without any shared state between
// sender and receiver (they may live on different threads). A text is a short unique tag followed
// by a slice of a fixed pseudo-random printable pattern, stored twice back to back so every slice
// is contiguous:
//
//   text(id, seq) = "<seq hex>.<id hex>|" + pattern_[off + tag_len, off + len)     (cut to len)
//   off = h % P, len = mix.pick(h'), with h, h' hashes of (id, seq)
//   pattern_: [ P printable bytes | the same P bytes again ]
//
// The tag makes every text unique (for lengths that hold it), the hashed offset and length make
// neighbouring texts differ throughout, so a server that swaps, truncates or corrupts texts is
// caught by a memcmp per delivery.

#include "payload_mix.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace strix::chat {

/// splitmix64's finalizer: a cheap bijective 64-bit mix. Pure.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

class message_text {
public:
    /// Longest tag: two 16-digit hex numbers, '.' and '|'.
    static constexpr std::size_t max_tag = 34;

    /// Builds the pattern for texts drawn from `mix` (a few kilobytes more than its longest
    /// length). Any thread; the object is then read-only and may be shared between threads.
    explicit message_text(payload_mix mix) : mix_(std::move(mix)) {
        period_ = mix_.max_len() + 4093;
        pattern_.resize(2 * static_cast<std::size_t>(period_));
        std::uint64_t s = 0x5eed5eed5eedULL;
        for (std::size_t i = 0; i < period_; ++i) {
            s = mix64(s + 0x9e3779b97f4a7c15ULL);
            // Printable ASCII 0x21..0x7e: valid UTF-8, no control characters, no spaces to trim.
            pattern_[i] = static_cast<char>(0x21 + s % 94);
        }
        std::memcpy(pattern_.data() + period_, pattern_.data(), period_);
    }

    /// The length of the text sender `sender_id` sends as its client_seq `seq`. Any thread.
    std::size_t length_of(std::uint64_t sender_id, std::uint64_t seq) const noexcept {
        return mix_.pick(mix64(hash(sender_id, seq)));
    }

    /// Writes that text to `out` (room for max_len() bytes) and returns its length. Any thread.
    std::size_t write(std::uint64_t sender_id, std::uint64_t seq, char* out) const noexcept {
        const std::uint64_t h = hash(sender_id, seq);
        const std::size_t len = mix_.pick(mix64(h));
        char tag[max_tag];
        const std::size_t tag_len = make_tag(sender_id, seq, tag);
        const std::size_t head = std::min(len, tag_len);
        std::memcpy(out, tag, head);
        std::memcpy(out + head, pattern_.data() + h % period_ + head, len - head);
        return len;
    }

    /// True when `got` is exactly the text sender `sender_id` sends as `seq`. Any thread.
    bool matches(std::uint64_t sender_id, std::uint64_t seq, std::string_view got) const noexcept {
        const std::uint64_t h = hash(sender_id, seq);
        const std::size_t len = mix_.pick(mix64(h));
        if (got.size() != len) return false;
        char tag[max_tag];
        const std::size_t head = std::min(len, make_tag(sender_id, seq, tag));
        return std::memcmp(got.data(), tag, head) == 0 &&
               std::memcmp(got.data() + head, pattern_.data() + h % period_ + head, len - head) == 0;
    }

    /// Reads the tag at the start of a text: the client_seq and sender id it was made for. False
    /// when `text` does not start with a whole tag (texts shorter than the tag carry a prefix of
    /// it only). A stored copy of a message (history, resume) has client_seq 0 in its chat_msg:
    /// the tag says which message it is, and matches() then checks the rest. Any thread.
    static bool parse_tag(std::string_view text, std::uint64_t& seq, std::uint64_t& sender_id) noexcept {
        std::size_t i = 0;
        const auto hex = [&](std::uint64_t& v, char end) {
            v = 0;
            const std::size_t from = i;
            for (; i < text.size() && text[i] != end; ++i) {
                const char ch = text[i];
                const int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
                if (d < 0 || i - from >= 16) return false;
                v = v << 4 | static_cast<std::uint64_t>(d);
            }
            if (i == from || i == text.size()) return false;
            ++i;  // the end character
            return true;
        };
        return hex(seq, '.') && hex(sender_id, '|');
    }

    /// The longest text. Any thread.
    std::size_t max_len() const noexcept { return mix_.max_len(); }

    /// The mix the lengths are drawn from. Any thread.
    const payload_mix& mix() const noexcept { return mix_; }

private:
    static std::uint64_t hash(std::uint64_t sender_id, std::uint64_t seq) noexcept {
        return mix64(sender_id * 0x9e3779b97f4a7c15ULL ^ mix64(seq));
    }

    static std::size_t put_hex(std::uint64_t v, char* out) noexcept {
        char tmp[16];
        std::size_t n = 0;
        do {
            tmp[n++] = "0123456789abcdef"[v & 15];
            v >>= 4;
        } while (v != 0);
        for (std::size_t i = 0; i < n; ++i) out[i] = tmp[n - 1 - i];
        return n;
    }

    static std::size_t make_tag(std::uint64_t sender_id, std::uint64_t seq, char* out) noexcept {
        std::size_t n = put_hex(seq, out);
        out[n++] = '.';
        n += put_hex(sender_id, out + n);
        out[n++] = '|';
        return n;
    }

    payload_mix mix_;
    std::uint32_t period_ = 0;
    std::vector<char> pattern_;
};

}  // namespace strix::chat
