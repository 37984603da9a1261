#pragma once
// web_assets: the web chat page (apps/chat/web/, built by scripts/build-web.sh), compiled into the
// server by apps/chat/web/embed.cmake, so `make run` serves it with no files beside the binary.

#include <span>
#include <string_view>

namespace strix::chat {

struct web_asset {
    std::string_view path;          // "/index.html", "/app.js"
    std::string_view content_type;  // with its charset
    std::string_view body;
};

/// Every file of the page. Any thread.
std::span<const web_asset> web_assets() noexcept;

}  // namespace strix::chat
