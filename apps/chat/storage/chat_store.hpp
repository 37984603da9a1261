#pragma once
// chat_store: accounts and chat logs in a real database, behind one BLOCKING interface with two
// back ends (SQLite, the default, and PostgreSQL for production).
//
//   shard thread ──try_submit──> db_pool worker ──> chat_store (one connection per worker)
//   shard thread ──try_enqueue─> chat_log_writer thread ──> chat_store::append_chat_logs
//
// Every call may wait on disk, the network or a lock held by another connection, so a chat_store
// is used ONLY from database worker threads (db_pool, chat_log_writer), never from a shard thread.
// One object is one connection and is not thread-safe: each worker opens its own.
//
// Schema (the same on both back ends, applied by ordered migrations when a store is opened):
//   schema_version(version PK, applied_at_us)
//   accounts(id PK auto, name UNIQUE, password_hash, created_at_us)
//   chat_logs(room_id, seq, sender_id, sender_name, server_ts_us, text, PRIMARY KEY(room_id, seq))
// 64-bit unsigned ids are stored bit-for-bit in signed 64-bit columns; chat text is stored as
// bytes (BLOB / BYTEA), so text that is not valid UTF-8 can never wedge the log writer.
//
// Errors: expected outcomes are values (login_outcome). A failing database (connection lost, disk
// full, I/O error) throws storage_error; the store stays usable and reconnects on the next call.

#include "apps/chat/storage/password.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace strix::chat {

struct account {
    std::uint64_t id = 0;
    std::string name;
};

enum class login_outcome : std::uint8_t {
    ok,               // existing account, password verified
    created,          // unknown name and auto_register: the account was created just now
    wrong_password,   // existing account, password did not verify
    unknown_account,  // unknown name and !auto_register
};

struct login_result {
    login_outcome outcome = login_outcome::unknown_account;
    account acct;  // valid for ok and created; id 0 otherwise
};

struct chat_log_entry {
    std::uint64_t room_id = 0;
    std::uint64_t seq = 0;
    std::uint64_t sender_id = 0;
    std::string sender_name;
    std::int64_t server_ts_us = 0;  // wall clock, microseconds since the Unix epoch
    std::string text;               // raw bytes, stored as-is

    friend bool operator==(const chat_log_entry&, const chat_log_entry&) = default;
};

/// A database operation failed (not a wrong password or an unknown name: those are outcomes).
class storage_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The schema version a store has after opening (the number of migration steps).
std::uint32_t latest_schema_version() noexcept;

class chat_store {
public:
    virtual ~chat_store();

    /// Looks `name` up and verifies `password` against its argon2id hash. An unknown name is
    /// created (hash made with the store's password_policy) when auto_register, else it is
    /// unknown_account. Two connections registering the same name at once yield ONE account:
    /// the loser of the insert race verifies against the winner's hash instead. Worker thread;
    /// throws storage_error.
    virtual login_result login(std::string_view name, std::string_view password, bool auto_register) = 0;

    /// Inserts the whole batch in ONE transaction (all rows or none). A (room_id, seq) that is
    /// already stored is skipped, so retrying a batch whose commit outcome was unknown is safe;
    /// returns the number of rows actually inserted (less than entries.size() means duplicates:
    /// the caller should report them). Worker thread; throws storage_error (nothing inserted).
    virtual std::size_t append_chat_logs(std::span<const chat_log_entry> entries) = 0;

    /// The newest `limit` entries of `room_id`, in ascending seq order (newest last).
    /// Worker thread; throws storage_error.
    virtual std::vector<chat_log_entry> room_history(std::uint64_t room_id, std::size_t limit) = 0;

    /// Number of stored chat log rows (a full count: for tests, reports and start-up, not per
    /// request). Worker thread; throws storage_error.
    virtual std::uint64_t count_chat_logs() = 0;

    /// The largest room_id that has a stored chat log, 0 when none (ids are compared as signed
    /// 64-bit, so room ids must stay below 2^63). Room ids restart with the
    /// server, so it must start its room counters above this one or new messages would collide
    /// with old (room_id, seq) keys. Worker thread; throws storage_error.
    virtual std::uint64_t max_room_id() = 0;

    /// The account called `name`, if any. Worker thread; throws storage_error.
    virtual std::optional<account> find_account(std::string_view name) = 0;

    /// The schema version recorded in the database. Worker thread; throws storage_error.
    virtual std::uint32_t schema_version() = 0;
};

/// Opens one connection and brings the schema up to date (idempotent; concurrent openers
/// serialize on a database lock). `url` is "sqlite:PATH" (the file is created if missing; its
/// directory must exist) or "postgresql://..." / "postgres://..." (a libpq URI; the database
/// must exist; connect_timeout defaults to 10 s unless the URL sets it). Throws std::runtime_error with one sentence naming the cause and the fix (bad
/// URL, missing directory, cannot connect, failed migration). Any non-shard thread; the store
/// may then be handed to the one thread that will use it.
std::unique_ptr<chat_store> open_chat_store(const std::string& url, const password_policy& policy);

/// `url` with any password replaced by "***", for log lines and error messages. Any thread.
std::string redact_url(std::string_view url);

}  // namespace strix::chat
