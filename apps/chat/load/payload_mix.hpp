#pragma once
// payload_mix: the distribution of chat text lengths the load tool sends, written like
//   64:80,256:18,1024-2048:2
// i.e. comma-separated bands `LEN:WEIGHT` or `LO-HI:WEIGHT` (lengths in bytes of chat text, ranges
// inclusive, weights in percent). Weights are relative, so they need not add up to 100; a band
// with weight 0 is allowed but never drawn. The draw is a pure function of a 64-bit random value,
// so a receiver can recompute the length a sender drew (see message_text).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strix::chat {

struct payload_band {
    std::uint32_t lo = 0;      ///< shortest length in the band, bytes
    std::uint32_t hi = 0;      ///< longest length in the band, bytes (>= lo)
    std::uint32_t weight = 0;  ///< relative weight (percent in the usual spelling)
};

class payload_mix {
public:
    /// Text lengths the protocol accepts (docs: chat text 1..60,000 bytes).
    static constexpr std::uint32_t min_len = 1;
    static constexpr std::uint32_t max_text = 60000;

    /// Parses a spec like "64:80,256:18,1024-2048:2". Returns nullopt and a one-sentence reason in
    /// *why when it is malformed, a length is outside 1..60000, lo > hi, or all weights are 0.
    /// Pure; any thread.
    static std::optional<payload_mix> parse(std::string_view spec, std::string* why);

    /// The length drawn by the 64-bit value r (uniform r gives lengths in the mix's proportions:
    /// the high 32 bits pick the band, the low 32 bits the length inside it). Pure; any thread.
    std::uint32_t pick(std::uint64_t r) const noexcept {
        const auto hi32 = static_cast<std::uint32_t>(r >> 32);
        const auto w = static_cast<std::uint32_t>((static_cast<std::uint64_t>(hi32) * total_weight_) >> 32);
        std::uint32_t acc = 0;
        for (const payload_band& b : bands_) {
            acc += b.weight;
            if (w < acc) {
                const std::uint32_t span = b.hi - b.lo + 1;
                return b.lo + static_cast<std::uint32_t>(r & 0xffffffffu) % span;
            }
        }
        return bands_.back().hi;  // unreachable while total_weight_ > 0
    }

    /// The longest length any band can draw. Pure; any thread.
    std::uint32_t max_len() const noexcept { return max_len_; }

    /// The expected mean length of a draw, in bytes. Pure; any thread.
    double mean_len() const noexcept;

    /// The bands in the order given. Pure; any thread.
    const std::vector<payload_band>& bands() const noexcept { return bands_; }

    /// The canonical spelling, e.g. "64:80,256:18,1024-2048:2". Pure; any thread.
    std::string to_string() const;

private:
    std::vector<payload_band> bands_;
    std::uint32_t total_weight_ = 0;
    std::uint32_t max_len_ = 0;
};

namespace detail {

// Parses a whole decimal string into [lo, hi]; false on anything else.
inline bool parse_u32(std::string_view s, std::uint32_t lo, std::uint32_t hi, std::uint32_t& out) {
    if (s.empty() || s.size() > 9) return false;
    std::uint32_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (v < lo || v > hi) return false;
    out = v;
    return true;
}

}  // namespace detail

inline std::optional<payload_mix> payload_mix::parse(std::string_view spec, std::string* why) {
    payload_mix mix;
    auto fail = [&](std::string reason) -> std::optional<payload_mix> {
        if (why != nullptr) *why = std::move(reason);
        return std::nullopt;
    };
    if (spec.empty()) return fail("the payload mix is empty");
    std::size_t pos = 0;
    while (pos <= spec.size()) {
        const std::size_t comma = spec.find(',', pos);
        const std::string_view item =
            spec.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
        const std::size_t colon = item.find(':');
        if (colon == std::string_view::npos) {
            return fail("band '" + std::string(item) + "' needs the form LEN:WEIGHT or LO-HI:WEIGHT");
        }
        const std::string_view lens = item.substr(0, colon);
        const std::string_view weight = item.substr(colon + 1);
        payload_band b;
        const std::size_t dash = lens.find('-');
        const bool ok_lens = dash == std::string_view::npos
                                 ? detail::parse_u32(lens, min_len, max_text, b.lo) && (b.hi = b.lo, true)
                                 : detail::parse_u32(lens.substr(0, dash), min_len, max_text, b.lo) &&
                                       detail::parse_u32(lens.substr(dash + 1), min_len, max_text, b.hi);
        if (!ok_lens) {
            return fail("band '" + std::string(item) + "': lengths must be integers in 1..60000");
        }
        if (b.lo > b.hi) return fail("band '" + std::string(item) + "': range is reversed");
        if (!detail::parse_u32(weight, 0, 1000000, b.weight)) {
            return fail("band '" + std::string(item) + "': weight must be an integer in 0..1000000");
        }
        mix.bands_.push_back(b);
        mix.total_weight_ += b.weight;
        if (b.weight > 0 && b.hi > mix.max_len_) mix.max_len_ = b.hi;
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    if (mix.total_weight_ == 0) return fail("every band of the payload mix has weight 0");
    return mix;
}

inline double payload_mix::mean_len() const noexcept {
    double sum = 0;
    for (const payload_band& b : bands_) {
        sum += (static_cast<double>(b.lo) + static_cast<double>(b.hi)) / 2.0 * b.weight;
    }
    return sum / total_weight_;
}

inline std::string payload_mix::to_string() const {
    std::string s;
    for (const payload_band& b : bands_) {
        if (!s.empty()) s += ',';
        s += std::to_string(b.lo);
        if (b.hi != b.lo) s += '-' + std::to_string(b.hi);
        s += ':' + std::to_string(b.weight);
    }
    return s;
}

}  // namespace strix::chat
