#pragma once
// What the two sources of the blocking-API tools (strix_blocking.cpp, zmq_blocking.cpp) share: the
// role CMake compiles each binary as (TOOL_ROLE: local-thr, remote-thr, local-lat, remote-lat,
// inproc-thr, inproc-lat), the usage text built from it and the arguments each role takes.

#include "../perf_common.hpp"

#include <string>
#include <string_view>

namespace strix::link_perf {

inline constexpr std::string_view blocking_role = TOOL_ROLE;
inline constexpr bool blocking_inproc = blocking_role.starts_with("inproc");

/// "usage: <tool> [<endpoint>] <message-size> <message-count|roundtrip-count>", then `about`
/// (the paragraph that names the library and the paired tool) and the contract.
inline std::string blocking_usage(const std::string& tool, const std::string& about) {
    return "usage: " + tool + (blocking_inproc ? " " : " <endpoint> ") + "<message-size> " +
           (blocking_role.ends_with("lat") ? "<roundtrip-count>" : "<message-count>") + "\n\n" + about +
           std::string(contract_help);
}

/// The endpoint (the inproc roles take none and use `inproc_endpoint`), message size and count.
struct blocking_args {
    std::string endpoint;
    std::size_t size = 0;
    std::uint64_t count = 0;
};

/// Parses the role's arguments; usage_error on anything else. Main thread only.
inline blocking_args parse_blocking(const tool& t, int argc, char** argv, std::string_view inproc_endpoint) {
    const parsed_args a = t.parse(argc, argv, blocking_inproc ? 2 : 3, false);
    const std::size_t first = blocking_inproc ? 0 : 1;
    return {blocking_inproc ? std::string(inproc_endpoint) : a.positional[0], t.message_size(a.positional[first]),
            t.message_count(a.positional[first + 1], "count")};
}

}  // namespace strix::link_perf
