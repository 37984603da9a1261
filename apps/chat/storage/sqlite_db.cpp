#include "apps/chat/storage/sqlite_db.hpp"

#include "apps/chat/storage/backends.hpp"
#include "apps/chat/storage/migrations.hpp"
#include "apps/chat/storage/sqlite_checkpointer.hpp"

#include <chrono>
#include <stdexcept>
#include <thread>

namespace strix::chat::storage_detail {

std::int64_t sqlite_scalar(statement& s) {
    reset_guard g{s};
    if (!s.step()) throw storage_error("sqlite: scalar query returned no row");
    return s.column_i64(0);
}

void sqlite_exec(sqlite3* db, const char* sql) {
    char* err = nullptr;
    if (::sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = std::string("sqlite: ") + (err ? err : ::sqlite3_errmsg(db)) + " (in '" + sql + "')";
        ::sqlite3_free(err);
        throw storage_error(msg);
    }
}

// Switching to WAL needs an exclusive lock for a moment and does not always go through the
// busy handler, so two first openers may see SQLITE_BUSY: retry for up to the busy timeout.
void sqlite_enable_wal(sqlite3* db) {
    for (int waited_ms = 0;; waited_ms += 10) {
        std::string mode;
        char* err = nullptr;
        const int rc = ::sqlite3_exec(
            db, "PRAGMA journal_mode=WAL",
            [](void* out, int, char** values, char**) {
                if (values[0] != nullptr) *static_cast<std::string*>(out) = values[0];
                return 0;
            },
            &mode, &err);
        std::string msg = err != nullptr ? err : ::sqlite3_errstr(rc);
        ::sqlite3_free(err);
        if (rc == SQLITE_OK) {
            if (mode != "wal") throw storage_error("sqlite: the database refused WAL journal mode");
            return;
        }
        const int code = rc & 0xff;
        if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) || waited_ms >= sqlite_busy_timeout_ms) {
            throw storage_error("sqlite: " + msg);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

void sqlite_migrate(sqlite3* db, const std::string& path) {
    // The write lock serializes concurrent openers: the second one sees the first's version.
    std::uint32_t current = 0;
    const migration* failed = nullptr;
    try {
        sqlite_exec(db, "BEGIN IMMEDIATE");
        sqlite_exec(db, sqlite_schema_version_table);
        {
            statement v(db, "SELECT COALESCE(MAX(version), 0) FROM schema_version");
            current = static_cast<std::uint32_t>(sqlite_scalar(v));
        }
        if (current > latest_schema_version()) {
            throw std::runtime_error("SQLite database '" + path + "' has schema version " + std::to_string(current) +
                                     ", newer than this build's " + std::to_string(latest_schema_version()) +
                                     "; run a newer strix or use another database");
        }
        for (const auto& m : all_migrations()) {
            if (m.version <= current) continue;
            failed = &m;
            sqlite_exec(db, m.sqlite_sql);
            statement rec(db, "INSERT INTO schema_version (version, applied_at_us) VALUES (?1, ?2)");
            reset_guard g{rec};
            rec.bind(1, static_cast<std::int64_t>(m.version));
            rec.bind(2, wall_clock_us());
            rec.step();
        }
        failed = nullptr;
        sqlite_exec(db, "COMMIT");
    } catch (const storage_error& e) {
        ::sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        throw std::runtime_error(
            "cannot migrate SQLite database '" + path + "'" +
            (failed ? " (step " + std::to_string(failed->version) + ", " + failed->description + ")" : std::string()) +
            ": " + e.what() + "; check that the file is writable and not corrupt");
    } catch (...) {
        ::sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
        throw;
    }
}

}  // namespace strix::chat::storage_detail
