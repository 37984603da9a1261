#pragma once
// The SQLite back end's building blocks (sqlite_chat_store.cpp): a prepared statement that resets
// itself, and the steps of opening a connection that do not depend on the chat's statements
// (WAL mode, the schema's migrations).

#include "apps/chat/storage/chat_store.hpp"

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace strix::chat::storage_detail {

// Owns a prepared statement; reset() on scope exit so a statement that threw midway neither
// keeps its bindings nor holds a read transaction open (which would stall WAL checkpoints).
class statement {
public:
    statement() = default;
    statement(sqlite3* db, const char* sql) : db_(db) {
        if (::sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
            throw storage_error(std::string("sqlite: cannot prepare '") + sql + "': " + ::sqlite3_errmsg(db));
        }
    }
    statement(statement&& o) noexcept : db_(o.db_), stmt_(std::exchange(o.stmt_, nullptr)) {}
    statement& operator=(statement&& o) noexcept {
        std::swap(db_, o.db_);
        std::swap(stmt_, o.stmt_);
        return *this;
    }
    ~statement() { ::sqlite3_finalize(stmt_); }

    sqlite3_stmt* get() const noexcept { return stmt_; }

    void bind(int i, std::int64_t v) { check(::sqlite3_bind_int64(stmt_, i, v)); }
    void bind(int i, std::uint64_t v) { bind(i, static_cast<std::int64_t>(v)); }
    void bind_text(int i, std::string_view s) {
        // SQLITE_STATIC: the caller's string outlives the step; reset() drops the binding.
        check(::sqlite3_bind_text64(stmt_, i, s.data(), s.size(), SQLITE_STATIC, SQLITE_UTF8));
    }
    void bind_blob(int i, std::string_view s) {
        // A null pointer would bind NULL, not an empty blob; std::string::data() never is null,
        // but a string_view may be.
        const char* p = s.data() != nullptr ? s.data() : "";
        check(::sqlite3_bind_blob64(stmt_, i, p, s.size(), SQLITE_STATIC));
    }

    /// true: a row is ready; false: done.
    bool step() {
        const int rc = ::sqlite3_step(stmt_);
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        throw storage_error(std::string("sqlite: ") + ::sqlite3_errmsg(db_) + " (in '" + ::sqlite3_sql(stmt_) + "')");
    }

    std::int64_t column_i64(int c) const noexcept { return ::sqlite3_column_int64(stmt_, c); }
    std::string column_string(int c) const {
        // Ask for the pointer first, then the size (the order SQLite documents).
        const void* p = ::sqlite3_column_blob(stmt_, c);
        const auto n = static_cast<std::size_t>(::sqlite3_column_bytes(stmt_, c));
        return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), n);
    }

    void reset() noexcept {
        ::sqlite3_reset(stmt_);
        ::sqlite3_clear_bindings(stmt_);
    }

private:
    void check(int rc) {
        if (rc != SQLITE_OK) throw storage_error(std::string("sqlite: bind failed: ") + ::sqlite3_errmsg(db_));
    }

    sqlite3* db_ = nullptr;
    sqlite3_stmt* stmt_ = nullptr;
};

struct reset_guard {
    statement& s;
    ~reset_guard() { s.reset(); }
};

/// The single integer a statement's first row holds; throws storage_error when it has no row.
std::int64_t sqlite_scalar(statement& s);

/// Runs SQL without results; throws storage_error with SQLite's message and the SQL.
void sqlite_exec(sqlite3* db, const char* sql);

/// Puts the connection's database in WAL journal mode, retrying a busy switch for up to the busy
/// timeout; throws storage_error when it cannot.
void sqlite_enable_wal(sqlite3* db);

/// Brings the schema to this build's version in one write transaction; throws runtime_error naming
/// the file (and the failed step) when the database is newer than this build or a step fails.
void sqlite_migrate(sqlite3* db, const std::string& path);

}  // namespace strix::chat::storage_detail
