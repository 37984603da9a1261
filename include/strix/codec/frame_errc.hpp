#pragma once
// frame_errc: the outcomes of decoding a frame, usable as a std::error_code:
//
//     std::error_code ec = strix::frame_errc::crc_mismatch;   // category "strix.frame"
//
// The order and meaning of each check is specified in docs/wire_format.md.

#include <system_error>
#include <type_traits>

namespace strix {

enum class frame_errc {
    ok = 0,            ///< a whole, valid frame was decoded
    need_more,         ///< the input ends before the frame does; not a failure
    length_too_small,  ///< header length field < 12 (it counts the header itself)
    length_too_large,  ///< header length field > codec_limits::max_frame
    unknown_flags,     ///< a flag bit other than frame_flag_crc is set
    crc_mismatch,      ///< CRC32C of the body differs from the header's crc field
    crc_without_flag,  ///< crc field is nonzero although frame_flag_crc is clear
    buffer_too_small,  ///< an output buffer cannot hold the encoded frame
};

/// The category of frame_errc codes; its name() is "strix.frame". Any thread.
const std::error_category& frame_category() noexcept;

/// Wraps a frame_errc in a std::error_code of frame_category(); ok maps to "no error". Any thread.
inline std::error_code make_error_code(frame_errc e) noexcept { return {static_cast<int>(e), frame_category()}; }

/// Short stable name of the enumerator ("crc_mismatch"), for logs and test output. Any thread.
const char* to_string(frame_errc e) noexcept;

}  // namespace strix

template <>
struct std::is_error_code_enum<strix::frame_errc> : std::true_type {};
