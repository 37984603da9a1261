// The built-in framers (see strix/net/framer.hpp).
#include <strix/codec/frame_codec.hpp>
#include <strix/net/framer.hpp>
#include <strix/net/net_errc.hpp>

#include <algorithm>

namespace strix {
namespace {

class length_prefix final : public framer {
public:
    frame_cut cut(std::span<const std::byte> b, std::size_t) const noexcept override {
        const std::size_t n = length_prefix_size(b);
        if (n == 1) return {0, net_errc::frame_too_small};
        return {n, {}};
    }
    const char* name() const noexcept override { return "length-prefix"; }
};

class strix_header final : public framer {
public:
    frame_cut cut(std::span<const std::byte> b, std::size_t max_frame) const noexcept override {
        const codec_limits lim{static_cast<std::uint32_t>(std::min<std::size_t>(max_frame, UINT32_MAX))};
        const decode_result r = decode_frame(b, lim);
        switch (r.error) {
            case frame_errc::ok: return {r.consumed, {}};
            // needed is 12 while the header is short, the header's length once it passed.
            case frame_errc::need_more: return {b.size() < frame_header_size ? 0 : r.needed, {}};
            case frame_errc::length_too_large: return {r.frame.header.length, {}};
            case frame_errc::length_too_small: return {0, net_errc::frame_too_small};
            default: return {0, net_errc::bad_frame};
        }
    }
    const char* name() const noexcept override { return "strix-header"; }
};

class raw final : public framer {
public:
    frame_cut cut(std::span<const std::byte> b, std::size_t max_frame) const noexcept override {
        return {std::min(b.size(), max_frame), {}};
    }
    const char* name() const noexcept override { return "raw"; }
};

const length_prefix length_prefix_instance;
const strix_header strix_header_instance;
const raw raw_instance;

}  // namespace

const framer& length_prefix_framer() noexcept { return length_prefix_instance; }
const framer& strix_header_framer() noexcept { return strix_header_instance; }
const framer& raw_framer() noexcept { return raw_instance; }

}  // namespace strix
