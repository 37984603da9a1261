#include <strix/codec/frame_errc.hpp>

#include <string>

namespace strix {
namespace {

class frame_error_category final : public std::error_category {
public:
    const char* name() const noexcept override { return "strix.frame"; }

    std::string message(int value) const override {
        switch (static_cast<frame_errc>(value)) {
            case frame_errc::ok: return "The frame is complete and valid.";
            case frame_errc::need_more: return "The input ends before the frame does; more bytes are needed.";
            case frame_errc::length_too_small:
                return "The frame's length field is below 12, the size of the header it counts.";
            case frame_errc::length_too_large:
                return "The frame's length field exceeds the configured maximum frame size.";
            case frame_errc::unknown_flags: return "The frame header sets a flag bit this version does not define.";
            case frame_errc::crc_mismatch: return "The CRC32C of the frame body does not match the header's crc field.";
            case frame_errc::crc_without_flag:
                return "The frame header's crc field is nonzero but the crc flag is clear.";
            case frame_errc::buffer_too_small: return "The output buffer is too small to hold the encoded frame.";
        }
        return "Unknown strix.frame error " + std::to_string(value) + ".";
    }
};

}  // namespace

const std::error_category& frame_category() noexcept {
    static const frame_error_category category;
    return category;
}

const char* to_string(frame_errc e) noexcept {
    switch (e) {
        case frame_errc::ok: return "ok";
        case frame_errc::need_more: return "need_more";
        case frame_errc::length_too_small: return "length_too_small";
        case frame_errc::length_too_large: return "length_too_large";
        case frame_errc::unknown_flags: return "unknown_flags";
        case frame_errc::crc_mismatch: return "crc_mismatch";
        case frame_errc::crc_without_flag: return "crc_without_flag";
        case frame_errc::buffer_too_small: return "buffer_too_small";
    }
    return "unknown";
}

}  // namespace strix
