#include "apps/chat/storage/chat_store.hpp"

#include "apps/chat/storage/backends.hpp"
#include "apps/chat/storage/migrations.hpp"

#include <algorithm>
#include <stdexcept>

namespace strix::chat {

chat_store::~chat_store() = default;

std::vector<login_result> chat_store::login_external_batch(std::span<const std::string> names) {
    std::vector<login_result> out;
    out.reserve(names.size());
    for (const std::string& name : names) out.push_back(login_external(name));
    return out;
}

std::optional<stored_room> chat_store::load_room(std::uint64_t id) {
    for (auto& r : load_rooms())
        if (r.id == id) return std::move(r);
    return std::nullopt;
}

std::uint32_t latest_schema_version() noexcept { return storage_detail::all_migrations().back().version; }

std::size_t chat_store::trim_room_logs(std::uint64_t room_id, std::uint64_t keep_last, std::int64_t older_than_us,
                                       std::size_t max_rows) {
    if (max_rows == 0 || (keep_last == 0 && older_than_us == 0)) return 0;
    const log_range range = room_log_range(room_id);
    if (range.newest == 0) return 0;
    // The cut: everything up to it goes. Beyond the newest keep_last, or older than the cutoff
    // (a prefix, so a clock that stepped back can only keep a message longer, never make a hole).
    std::uint64_t cut = 0;
    if (keep_last != 0 && range.newest > keep_last) cut = range.newest - keep_last;
    if (older_than_us != 0) cut = std::max(cut, old_prefix_end(room_id, older_than_us, max_rows));
    // Small batches: each DELETE holds the database's write lock only briefly, so the chat log
    // writer's next commit never waits long behind retention.
    cut = std::min<std::uint64_t>(cut, range.oldest + max_rows - 1);
    if (cut < range.oldest) return 0;
    return delete_logs_through(room_id, cut);
}

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
