#pragma once
// Private factories of the two back ends; open_chat_store() picks one from the URL.

#include "apps/chat/storage/chat_store.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace strix::chat::storage_detail {

/// Opens (creating if needed) the SQLite file at `path` and migrates it.
std::unique_ptr<chat_store> open_sqlite_store(const std::string& path, const password_policy& policy);

/// Connects to the PostgreSQL database named by the libpq URI `url` and migrates it.
std::unique_ptr<chat_store> open_postgres_store(const std::string& url, const password_policy& policy);

/// The room a login puts the account back in (login_result::room_id): the newest join of
/// `rooms`, which both back ends read oldest join first, ties by room id (so the last one is the
/// newest, ties: the highest id); 0 for none. Any thread.
inline std::uint64_t newest_room(std::span<const account_room> rooms) noexcept {
    return rooms.empty() ? 0 : rooms.back().room_id;
}

/// Wall clock in microseconds since the Unix epoch (created_at_us, applied_at_us).
inline std::int64_t wall_clock_us() noexcept {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace strix::chat::storage_detail
