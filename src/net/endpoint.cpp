#include <strix/net/endpoint.hpp>

#include <charconv>
#include <stdexcept>

namespace strix {
namespace {

[[noreturn]] void bad(std::string_view text, const char* why) {
    throw std::invalid_argument("endpoint '" + std::string(text) + "': " + why);
}

}  // namespace

endpoint endpoint::tcp(std::string host, std::uint16_t port) {
    endpoint e;
    e.kind = transport::tcp;
    e.host = std::move(host);
    e.port = port;
    return e;
}

endpoint endpoint::unix_socket(std::string path) {
    endpoint e;
    e.kind = transport::unix_socket;
    e.host.clear();
    e.path = std::move(path);
    return e;
}

endpoint endpoint::parse(std::string_view text) {
    auto unix_from = [&](std::string_view file) {
        if (file.empty()) bad(text, "empty socket path");
        return unix_socket(std::string(file));
    };
    if (text.starts_with("ipc://")) return unix_from(text.substr(6));
    if (text.starts_with("unix://")) return unix_from(text.substr(7));
    if (text.starts_with("/") || text.starts_with("./") || text.starts_with("@")) return unix_from(text);
    if (!text.starts_with("tcp://")) bad(text, "expected tcp://host:port, ipc://path, unix://path or a path");
    std::string_view rest = text.substr(6);
    std::string_view host, port;
    if (rest.starts_with("[")) {
        auto close = rest.find(']');
        if (close == std::string_view::npos) bad(text, "missing ']' after an IPv6 address");
        host = rest.substr(1, close - 1);
        if (close + 1 >= rest.size() || rest[close + 1] != ':') bad(text, "missing ':port'");
        port = rest.substr(close + 2);
    } else {
        auto colon = rest.rfind(':');
        if (colon == std::string_view::npos) bad(text, "missing ':port'");
        host = rest.substr(0, colon);
        port = rest.substr(colon + 1);
    }
    if (host.empty()) bad(text, "missing host (use 127.0.0.1, or * to listen on every address)");
    unsigned value = 0;
    if (port == "*") {
        value = 0;
    } else {
        auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (ec != std::errc() || end != port.data() + port.size() || value > 65535)
            bad(text, "port must be 0-65535 or *");
    }
    std::string h(host);
    if (h == "localhost") h = "127.0.0.1";
    return tcp(std::move(h), static_cast<std::uint16_t>(value));
}

std::string endpoint::to_string() const {
    if (kind == transport::unix_socket) return "ipc://" + path;
    if (host.find(':') != std::string::npos) return "tcp://[" + host + "]:" + std::to_string(port);
    return "tcp://" + host + ":" + std::to_string(port);
}

}  // namespace strix
