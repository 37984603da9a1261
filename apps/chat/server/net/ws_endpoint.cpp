#include "ws_endpoint.hpp"

#include "apps/chat/server/service/chat_service.hpp"
#include "apps/chat/server/web/web_assets.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace strix::chat {
namespace {

// The page's files as the listener serves them; index.html names the WebSocket path.
struct web_page {
    std::string index;
    std::string app_js;
};

std::shared_ptr<const web_page> load_page(const std::string& ws_path) {
    auto page = std::make_shared<web_page>();
    for (const web_asset& a : web_assets()) {
        if (a.path == "/index.html") page->index = a.body;
        if (a.path == "/app.js") page->app_js = a.body;
    }
    const std::string meta = "<meta name=\"strix-ws-path\" content=\"/ws\">";
    if (auto at = page->index.find(meta); at != std::string::npos)
        page->index.replace(at, meta.size(), "<meta name=\"strix-ws-path\" content=\"" + ws_path + "\">");
    return page;
}

http_response serve(const web_page& page, const http_request& req) {
    http_response r;
    // The page loads nothing from elsewhere and connects only to where it came from.
    r.headers = {{"Cache-Control", "no-cache"},
                 {"X-Content-Type-Options", "nosniff"},
                 {"Content-Security-Policy",
                  "default-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'"}};
    if (req.path == "/" || req.path == "/index.html") {
        r.status = 200;
        r.content_type = "text/html; charset=utf-8";
        r.body = page.index;
    } else if (req.path == "/app.js") {
        r.status = 200;
        r.content_type = "text/javascript; charset=utf-8";
        r.body = page.app_js;
    } else {
        r.status = 404;
        r.body = "not found: the chat page is at /\n";
    }
    return r;
}

}  // namespace

std::vector<std::string> ws_origins(const chat_options& o, std::uint16_t port, bool tls) {
    std::vector<std::string> out;
    for (const std::string& origin : o.ws.origins) {
        if (origin == "*") return {};  // ws_options: an empty list allows any origin
        out.push_back(origin);
    }
    if (!out.empty()) return out;
    // Built by append: GCC 12 misreads chains of std::string + as overlapping copies (-Wrestrict).
    const std::string& h = o.server.host;
    auto origin = [&](std::string_view host, bool bracket) {
        std::string s(tls ? "https://" : "http://");
        if (bracket) s.append("[");
        s.append(host);
        if (bracket) s.append("]");
        s.append(":").append(std::to_string(port));
        return s;
    };
    out.push_back(origin(h, h.find(':') != std::string::npos));
    if (is_loopback_host(h)) {
        for (std::string_view name : {"localhost", "127.0.0.1", "::1"}) {
            std::string other = origin(name, name == "::1");
            if (other != out.front()) out.push_back(std::move(other));
        }
    }
    out.emplace_back();  // no Origin header: not a browser
    return out;
}

ws_options chat_ws_options(const chat_options& o, std::uint16_t port, bool tls) {
    ws_options w;
    w.path = o.ws.path;
    w.origins = ws_origins(o, port, tls);
    w.max_message = chat_service::max_frame_logged_in;
    // The login timeout covers the upgrade and the login together, as it covers a TCP login.
    w.handshake_timeout = o.server.limits.handshake_timeout;
    w.upgrade_ends_handshake = false;
    auto page = load_page(o.ws.path);
    w.on_http = [page](const http_request& req) { return serve(*page, req); };
    return w;
}

std::uint16_t pick_free_port(const std::string& host) {
    sockaddr_storage ss{};
    socklen_t len = 0;
    auto* a4 = reinterpret_cast<sockaddr_in*>(&ss);
    auto* a6 = reinterpret_cast<sockaddr_in6*>(&ss);
    if (host == "*" || ::inet_pton(AF_INET, host.c_str(), &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        len = sizeof *a4;
    } else if (::inet_pton(AF_INET6, host.c_str(), &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        len = sizeof *a6;
    } else {
        throw std::runtime_error("--host " + host + " is not a numeric address");
    }
    const int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
        const int err = errno;
        if (fd >= 0) ::close(fd);
        throw std::runtime_error(std::string("no free port for --ws-port 0 on ") + host + ": " + std::strerror(err));
    }
    ::close(fd);
    return ntohs(ss.ss_family == AF_INET ? a4->sin_port : a6->sin6_port);
}

}  // namespace strix::chat
