// The transport table: one row per address scheme (transport.hpp says what a row provides).
#include "link/transport/transport.hpp"

#include <stdexcept>
#include <string>

namespace strix::link::detail {

// Each transport's file defines its make function.
std::unique_ptr<transport_state> make_stream_transport(socket_core& c);  // stream.cpp: tcp://, ipc://
std::unique_ptr<transport_state> make_inproc_transport(socket_core& c);  // inproc.cpp

namespace {

constexpr transport table[] = {
    {"tcp", make_stream_transport},
    {"ipc", make_stream_transport},
    {"inproc", make_inproc_transport},
};

}  // namespace

std::span<const transport> transports() noexcept { return table; }

const transport& find_transport(std::string_view address) {
    const auto end = address.find("://");
    if (end != std::string_view::npos) {
        const std::string_view scheme = address.substr(0, end);
        for (const auto& t : table)
            if (t.scheme == scheme) return t;
    }
    std::string known;
    for (const auto& t : table) known += (known.empty() ? "" : ", ") + std::string(t.scheme) + "://";
    throw std::invalid_argument("link address '" + std::string(address) + "': no transport for it (" + known + ")");
}

}  // namespace strix::link::detail
