#pragma once
// Private: an incremental UTF-8 validator (RFC 3629), fed a message's fragments as they arrive
// so a bad byte fails at once, also when a code point is split across fragments.
//
// State between calls: how many continuation bytes the current code point still needs, and the
// range its next byte must fall in (narrower than 80..BF right after E0, ED, F0 and F4, which
// is how overlong forms, surrogates and code points above U+10FFFF are refused).

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace strix::detail {

class utf8_validator {
public:
    /// Feeds n more bytes; false at the first byte that cannot be UTF-8.
    bool feed(const std::byte* p, std::size_t n) noexcept {
        std::size_t i = 0;
        while (i < n) {
            if (need_ == 0) {
                // ASCII runs, 8 bytes at a time.
                while (i + 8 <= n) {
                    std::uint64_t w;
                    std::memcpy(&w, p + i, 8);
                    if (w & 0x8080808080808080ull) break;
                    i += 8;
                }
                if (i >= n) break;
                const auto c = static_cast<std::uint8_t>(p[i++]);
                if (c < 0x80) continue;
                if (!lead(c)) return false;
            } else {
                const auto c = static_cast<std::uint8_t>(p[i++]);
                if (c < lo_ || c > hi_) return false;
                --need_;
                lo_ = 0x80;
                hi_ = 0xBF;
            }
        }
        return true;
    }
    /// No code point is left unfinished.
    bool complete() const noexcept { return need_ == 0; }
    void reset() noexcept { *this = utf8_validator{}; }

private:
    bool lead(std::uint8_t c) noexcept {
        lo_ = 0x80;
        hi_ = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            need_ = 1;
        } else if (c == 0xE0) {
            need_ = 2;
            lo_ = 0xA0;  // no overlong 3-byte forms
        } else if (c == 0xED) {
            need_ = 2;
            hi_ = 0x9F;  // no UTF-16 surrogates
        } else if (c >= 0xE1 && c <= 0xEF) {
            need_ = 2;
        } else if (c == 0xF0) {
            need_ = 3;
            lo_ = 0x90;  // no overlong 4-byte forms
        } else if (c >= 0xF1 && c <= 0xF3) {
            need_ = 3;
        } else if (c == 0xF4) {
            need_ = 3;
            hi_ = 0x8F;  // nothing above U+10FFFF
        } else {
            return false;  // 80..C1 (continuation or overlong 2-byte) and F5..FF
        }
        return true;
    }

    std::uint8_t need_ = 0;
    std::uint8_t lo_ = 0x80;
    std::uint8_t hi_ = 0xBF;
};

/// Whether [p, p+n) is whole, valid UTF-8.
inline bool utf8_valid(const std::byte* p, std::size_t n) noexcept {
    utf8_validator v;
    return v.feed(p, n) && v.complete();
}

}  // namespace strix::detail
