#include "apps/chat/cluster/resp_framer.hpp"

#include <strix/net/net_errc.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

namespace strix::chat {
namespace {

// The smallest element on the wire ("+\r\n"): what each element still announced but not yet seen
// adds to the lower bound of the reply's size.
constexpr std::size_t min_element = 3;
// A header line ("$123\r\n", "*5\r\n", ":-42\r\n") is short; a longer one is garbage, not a line
// still arriving.
constexpr std::size_t max_number_line = 24;

struct line {
    std::size_t end = 0;  // index of '\r'
    bool found = false;
};

line find_crlf(const char* p, std::size_t from, std::size_t n) noexcept {
    while (from < n) {
        const void* cr = std::memchr(p + from, '\r', n - from);
        if (cr == nullptr) return {};
        const auto at = static_cast<std::size_t>(static_cast<const char*>(cr) - p);
        if (at + 1 >= n) return {};  // '\n' not here yet
        if (p[at + 1] == '\n') return {at, true};
        from = at + 1;
    }
    return {};
}

// An integer reply's text as hiredis's string2ll takes it: "0", or an optional '-' then a digit
// 1-9 and more digits, within int64 (no "+5", "-0", "007", empty or overflowing values, which
// hiredis rejects after the framer would have passed them).
bool valid_integer(const char* p, std::size_t n) noexcept {
    if (n == 1 && p[0] == '0') return true;
    const bool neg = n > 0 && p[0] == '-';
    const char* d = p + (neg ? 1 : 0);
    const std::size_t digits = n - (neg ? 1 : 0);
    if (digits == 0 || digits > 19 || d[0] < '1' || d[0] > '9') return false;
    for (std::size_t i = 0; i < digits; ++i) {
        if (d[i] < '0' || d[i] > '9') return false;
    }
    if (digits < 19) return true;
    const char* limit = neg ? "9223372036854775808" : "9223372036854775807";
    return std::memcmp(d, limit, 19) <= 0;
}

// A bulk length or array count: an integer as above (hiredis checks them with string2ll too),
// saturated: a value beyond int64 cannot be a length anyone means.
bool parse_length(const char* p, std::size_t n, std::int64_t& out) noexcept {
    if (!valid_integer(p, n)) return false;
    const bool neg = p[0] == '-';
    std::uint64_t v = 0;
    for (std::size_t i = neg ? 1 : 0; i < n; ++i) v = v * 10 + static_cast<std::uint64_t>(p[i] - '0');
    const auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    out = neg ? (v > max ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(v))
              : static_cast<std::int64_t>(std::min(v, max));
    return true;
}

class resp_framer_impl final : public framer {
public:
    frame_cut cut(std::span<const std::byte> bytes, std::size_t max_frame) const noexcept override {
        const char* p = reinterpret_cast<const char*>(bytes.data());
        const std::size_t n = bytes.size();
        // pending[d]: elements still expected at depth d (depth 0 is the reply itself).
        std::int64_t pending[resp_max_depth + 1];
        int depth = 0;
        pending[0] = 1;
        std::size_t pos = 0;
        // The reply is not complete: its size is at least what was scanned plus `need` more
        // bytes for the current element plus the smallest possible rest of every open array.
        auto incomplete = [&](std::size_t need) noexcept {
            std::size_t bound = pos + need;
            for (int d = 0; d <= depth; ++d) {
                // The element in progress at each depth is counted already (by `need`, or by the
                // nested array's own header and bounds); the others at that depth follow.
                const auto rest = static_cast<std::size_t>(pending[d] - 1);
                if (rest > (std::numeric_limits<std::size_t>::max() - bound) / min_element) return too_large();
                bound += rest * min_element;
            }
            return frame_cut{bound > n ? bound : n + 1, {}};
        };
        for (;;) {
            if (pos >= n) return incomplete(min_element);
            const char type = p[pos];
            const line l = find_crlf(p, pos + 1, n);
            const bool numeric = type == '$' || type == '*' || type == ':';
            if (!l.found) {
                if (numeric && n - pos > max_number_line) return bad();
                if (type != '+' && type != '-' && !numeric) return bad();
                // Simple strings and errors may be long: wait, bounded by max_frame.
                return incomplete(n - pos + 1);
            }
            const std::size_t len = l.end - (pos + 1);
            if (numeric && len > max_number_line) return bad();
            std::size_t next = l.end + 2;
            switch (type) {
                case '+':
                case '-': break;
                case ':':
                    if (!valid_integer(p + pos + 1, len)) return bad();
                    break;
                case '$': {
                    std::int64_t blen = 0;
                    if (!parse_length(p + pos + 1, len, blen) || blen < -1) return bad();
                    if (blen >= 0) {
                        const auto body = static_cast<std::size_t>(blen);
                        if (body > max_frame) return too_large();
                        if (next + body + 2 > n) {
                            pos = next;
                            return incomplete(body + 2);
                        }
                        if (p[next + body] != '\r' || p[next + body + 1] != '\n') return bad();
                        next += body + 2;
                    }
                    break;
                }
                case '*': {
                    std::int64_t count = 0;
                    if (!parse_length(p + pos + 1, len, count) || count < -1) return bad();
                    if (count > 0) {
                        if (static_cast<std::uint64_t>(count) > max_frame / min_element) return too_large();
                        if (depth == resp_max_depth) return bad();
                        pos = next;
                        pending[++depth] = count;
                        continue;  // the array's first element
                    }
                    break;
                }
                default: return bad();
            }
            pos = next;
            // One element is complete: close every array it completes.
            while (--pending[depth] == 0) {
                if (depth == 0) return frame_cut{pos, {}};
                --depth;
            }
        }
    }

    const char* name() const noexcept override { return "resp"; }

private:
    static frame_cut bad() noexcept { return frame_cut{0, net_errc::bad_frame}; }
    static frame_cut too_large() noexcept { return frame_cut{std::numeric_limits<std::size_t>::max(), {}}; }
};

}  // namespace

const framer& resp_framer() noexcept {
    static const resp_framer_impl f;
    return f;
}

}  // namespace strix::chat
