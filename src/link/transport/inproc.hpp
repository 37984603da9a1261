#pragma once
// What the rest of strix::link asks of the inproc transport (inproc.cpp) besides its table row:
// the blocking API's REQ/REP fast path (blocking/direct_link.hpp) is offered on inproc names.

#include <optional>
#include <string_view>

namespace strix::link::detail {

/// The name in an inproc:// address, or nothing when address is another transport's. Any thread.
std::optional<std::string_view> inproc_name(std::string_view address) noexcept;

}  // namespace strix::link::detail
