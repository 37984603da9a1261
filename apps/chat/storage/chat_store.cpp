#include "apps/chat/storage/chat_store.hpp"

#include "apps/chat/storage/backends.hpp"
#include "apps/chat/storage/migrations.hpp"

#include <stdexcept>

namespace strix::chat {

chat_store::~chat_store() = default;

std::uint32_t latest_schema_version() noexcept { return storage_detail::all_migrations().back().version; }

std::string redact_url(std::string_view url) {
    std::string out(url);
    // userinfo: scheme://user:password@host -> scheme://user:***@host
    if (auto scheme = out.find("://"); scheme != std::string::npos) {
        const auto start = scheme + 3;
        const auto at = out.find('@', start);
        const auto slash = out.find('/', start);
        if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
            const auto colon = out.find(':', start);
            if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
        }
    }
    // query parameter: ...password=secret&... -> ...password=***&...
    for (std::size_t pos = out.find("password="); pos != std::string::npos; pos = out.find("password=", pos + 1)) {
        const auto value = pos + 9;
        const auto end = out.find('&', value);
        out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
    }
    return out;
}

std::unique_ptr<chat_store> open_chat_store(const std::string& url, const password_policy& policy) {
    const std::string_view u = url;
    if (u.starts_with("sqlite:")) {
        std::string path(u.substr(7));
        // Accept the URL-looking spellings too: sqlite:///abs/path and sqlite://rel/path.
        if (path.starts_with("//")) path.erase(0, 2);
        if (path.empty()) {
            throw std::runtime_error("database URL '" + url +
                                     "' names no file; use sqlite:PATH, e.g. sqlite:var/chat.db");
        }
        if (path == ":memory:" || path.starts_with("file:")) {
            // Every worker opens its own connection; in-memory databases would not be shared.
            throw std::runtime_error("database URL '" + url +
                                     "' is not a file path; use sqlite:PATH to a file (every "
                                     "worker opens its own connection to it)");
        }
        return storage_detail::open_sqlite_store(path, policy);
    }
    if (u.starts_with("postgresql://") || u.starts_with("postgres://")) {
        return storage_detail::open_postgres_store(url, policy);
    }
    throw std::runtime_error("unsupported database URL '" + redact_url(url) +
                             "'; use sqlite:PATH or postgresql://USER@HOST:PORT/DATABASE");
}

}  // namespace strix::chat
