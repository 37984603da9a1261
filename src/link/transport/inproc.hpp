#pragma once
// What the rest of strix::link asks of the inproc transport (inproc.cpp) besides its table row:
// the blocking API's REQ/REP fast path (blocking/direct_link.hpp) is offered on inproc names, and
// ZAP (security/zap_client.hpp) looks for a handler bound at inproc://zeromq.zap.01.

#include <optional>
#include <string>
#include <string_view>

namespace strix {
class engine;
}

namespace strix::link::detail {

/// The name in an inproc:// address, or nothing when address is another transport's. Any thread.
std::optional<std::string_view> inproc_name(std::string_view address) noexcept;
/// The key `name` is registered under: inproc names are scoped per engine, as libzmq scopes them
/// per context. Any thread.
std::string inproc_key(const engine& e, std::string_view name);
/// Whether a socket on engine e has `name` bound now. Any thread.
bool inproc_bound(const engine& e, std::string_view name);

}  // namespace strix::link::detail
