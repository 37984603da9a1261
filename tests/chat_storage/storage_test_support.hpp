#pragma once
// Shared by the storage tests: the two back ends as a gtest parameter, fresh databases per test,
// raw reads that bypass chat_store (to check what is really stored), and one PostgreSQL server
// per test binary, started on first use and stopped by a gtest Environment.

#include "apps/chat/storage/chat_store.hpp"

#include "support/pg_server.hpp"

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>

namespace strix::test {
using namespace strix::chat;  // the chat application's storage and protocol types

enum class backend { sqlite, postgres };

/// gtest prints the parameter with this (instead of its bytes) in failure messages.
inline void PrintTo(backend b, std::ostream* os) { *os << (b == backend::sqlite ? "sqlite" : "postgres"); }

inline std::string backend_name(const ::testing::TestParamInfo<backend>& info) {
    return info.param == backend::sqlite ? "sqlite" : "postgres";
}

/// A private directory under /tmp, removed with everything in it.
class temp_dir {
public:
    temp_dir() {
        char tmpl[] = "/tmp/strix-storage-XXXXXX";
        if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

/// Stops the shared PostgreSQL server after the last test of the binary.
class pg_environment : public ::testing::Environment {
public:
    void TearDown() override { stop_shared_pg_server(); }
};

inline const ::testing::Environment* const pg_environment_registered =
    ::testing::AddGlobalTestEnvironment(new pg_environment);

/// A fresh, empty database of the given back end: a new SQLite file in `dir`, or a new database
/// on the shared PostgreSQL server (started on first use; throws if it cannot start).
inline std::string fresh_database_url(backend b, const temp_dir& dir) {
    if (b == backend::sqlite) return "sqlite:" + dir.path() + "/chat.db";
    return shared_pg_server().create_database();
}

/// Base of the store suites: a fresh database of the parameter's back end per test (a missing
/// PostgreSQL fails the test: it is a declared dependency).
class store_test : public ::testing::TestWithParam<backend> {
protected:
    void SetUp() override {
        try {
            url_ = fresh_database_url(GetParam(), dir_);
        } catch (const std::exception& e) {
            FAIL() << e.what();
        }
    }
    /// A new connection to the test's database.
    std::unique_ptr<chat_store> open() { return open_chat_store(url_, password_policy::fast_for_tests()); }

    temp_dir dir_;
    std::string url_;
};

/// Runs a one-value query directly on the database (no chat_store); empty optional if no row.
inline std::optional<std::string> raw_query_value(backend b, const std::string& url, const std::string& sql) {
    if (b == backend::sqlite) {
        sqlite3* db = nullptr;
        if (::sqlite3_open_v2(url.substr(7).c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
            ::sqlite3_close(db);
            throw std::runtime_error("raw sqlite open failed");
        }
        std::unique_ptr<sqlite3, decltype(&::sqlite3_close)> guard(db, &::sqlite3_close);
        sqlite3_stmt* st = nullptr;
        if (::sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) {
            throw std::runtime_error(std::string("raw sqlite prepare failed: ") + ::sqlite3_errmsg(db));
        }
        std::unique_ptr<sqlite3_stmt, decltype(&::sqlite3_finalize)> sguard(st, &::sqlite3_finalize);
        if (::sqlite3_step(st) != SQLITE_ROW) return std::nullopt;
        const auto* text = ::sqlite3_column_text(st, 0);
        return text ? std::string(reinterpret_cast<const char*>(text)) : std::string();
    }
    std::unique_ptr<PGconn, decltype(&::PQfinish)> c(::PQconnectdb(url.c_str()), &::PQfinish);
    if (::PQstatus(c.get()) != CONNECTION_OK) throw std::runtime_error("raw pg connect failed");
    std::unique_ptr<PGresult, decltype(&::PQclear)> r(::PQexec(c.get(), sql.c_str()), &::PQclear);
    if (::PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
        throw std::runtime_error(std::string("raw pg query failed: ") + ::PQresultErrorMessage(r.get()));
    }
    if (::PQntuples(r.get()) == 0) return std::nullopt;
    return std::string(::PQgetvalue(r.get(), 0, 0));
}

/// Runs `sql` (one or more statements, results discarded) directly on the database (no
/// chat_store), e.g. to build a database at an older schema; throws std::runtime_error.
inline void raw_exec(backend b, const std::string& url, const std::string& sql) {
    if (b == backend::postgres) {
        pg_server::exec_sql(url, sql);
        return;
    }
    sqlite3* db = nullptr;
    if (::sqlite3_open_v2(url.substr(7).c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
        SQLITE_OK) {
        ::sqlite3_close(db);
        throw std::runtime_error("raw sqlite open failed");
    }
    std::unique_ptr<sqlite3, decltype(&::sqlite3_close)> guard(db, &::sqlite3_close);
    char* err = nullptr;
    if (::sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
        std::string msg = err != nullptr ? err : ::sqlite3_errmsg(db);
        ::sqlite3_free(err);
        throw std::runtime_error("raw sqlite exec failed: " + msg);
    }
}

inline chat_log_entry make_entry(std::uint64_t room, std::uint64_t seq) {
    chat_log_entry e;
    e.room_id = room;
    e.seq = seq;
    e.sender_id = room * 7 + seq % 5;
    e.sender_name = "user" + std::to_string(seq % 5);
    e.server_ts_us = 1'700'000'000'000'000 + static_cast<std::int64_t>(room * 1'000'000 + seq);
    e.text = "room " + std::to_string(room) + " message " + std::to_string(seq);
    return e;
}

}  // namespace strix::test
