// PostgreSQL back end over libpq: one connection per worker thread, every query parameterized
// (named prepared statements, or PQexecParams for the variable-width batch insert), parameters
// and results in binary format (no quoting, no text escaping of bytea), a batch of chat logs
// inserted as multi-row INSERTs inside one transaction. A lost connection is re-established
// (and the statements re-prepared) at the start of the next call.

#include "apps/chat/storage/backends.hpp"
#include "apps/chat/storage/direct_rooms.hpp"
#include "apps/chat/storage/migrations.hpp"
#include "apps/chat/storage/pg_params.hpp"
#include "apps/chat/storage/pg_statements.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>

namespace strix::chat::storage_detail {

namespace {

// Serializes concurrent migrations of one database (any 64-bit key unique to strix).
constexpr const char* migration_lock_sql = "SELECT pg_advisory_xact_lock(7427143700114220001)";

// Rows per INSERT statement: 7 parameters each, well under the protocol's 65535 parameters.
constexpr std::size_t rows_per_insert = 1000;

using result_ptr = std::unique_ptr<PGresult, decltype(&::PQclear)>;

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

// Defaults first, then the URL expanded in place (expand_dbname), so anything the URL sets wins.
// Without a connect_timeout an unreachable host would block a worker for the kernel's TCP
// timeout (minutes).
PGconn* connect(const std::string& url) {
    const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
    const char* values[] = {"10", "strix", url.c_str(), nullptr};
    return ::PQconnectdbParams(keys, values, 1);
}

class pg_chat_store final : public chat_store, private direct_steps {
public:
    pg_chat_store(const std::string& url, const password_policy& policy)
        : url_(url), policy_(policy), conn_(connect(url)) {
        if (conn_ == nullptr) throw std::bad_alloc();
        if (::PQstatus(conn_) != CONNECTION_OK) {
            const std::string why = trim(::PQerrorMessage(conn_));
            ::PQfinish(conn_);
            throw std::runtime_error("cannot connect to PostgreSQL at '" + redact_url(url) + "': " + why +
                                     "; check that the server is running, the database exists "
                                     "and the URL is right");
        }
        try {
            configure();
            migrate();
            prepare_all();
        } catch (...) {
            ::PQfinish(conn_);
            throw;
        }
    }

    ~pg_chat_store() override { ::PQfinish(conn_); }

    login_result login(std::string_view name, std::string_view password, bool auto_register) override {
        return retrying([&] { return do_login(name, &password, auto_register); });
    }

    login_result login_external(std::string_view name) override {
        return retrying([&] { return do_login(name, nullptr, true); });
    }

    // One transaction for the batch: one commit (and its WAL flush) instead of one per login.
    std::vector<login_result> login_external_batch(std::span<const std::string> names) override {
        return retrying([&] {
            std::vector<login_result> out;
            out.reserve(names.size());
            exec("BEGIN");
            try {
                for (const std::string& name : names) out.push_back(do_login(name, nullptr, true));
                exec("COMMIT");
            } catch (...) {
                rollback_quietly();
                throw;
            }
            return out;
        });
    }

    std::size_t write_batch(std::span<const room_change> changes, std::span<const chat_log_entry> entries) override {
        if (entries.empty() && changes.empty()) return 0;
        return retrying([&] { return do_append(changes, entries); });
    }

    std::vector<stored_room> load_rooms() override {
        return retrying([&] {
            std::vector<stored_room> out;
            params none(0);
            auto r = exec_prepared("strix_load_rooms", none, PGRES_TUPLES_OK);
            for (int i = 0, n = ::PQntuples(r.get()); i < n; ++i) out.push_back(room_row(r, i));
            attach(exec_prepared("strix_load_members", none, PGRES_TUPLES_OK), out, member_row);
            params now(1);
            now.add(wall_clock_us());
            attach(exec_prepared("strix_load_sanctions", now, PGRES_TUPLES_OK), out, sanction_row);
            attach(exec_prepared("strix_load_blocks", none, PGRES_TUPLES_OK), out, block_row);
            return out;
        });
    }

    std::optional<stored_room> load_room(std::uint64_t id) override {
        return retrying([&]() -> std::optional<stored_room> {
            params p(1);
            p.add(id);
            auto r = exec_prepared("strix_load_room", p, PGRES_TUPLES_OK);
            if (::PQntuples(r.get()) == 0) return std::nullopt;
            std::vector<stored_room> one{room_row(r, 0)};
            attach(exec_prepared("strix_load_room_members", p, PGRES_TUPLES_OK), one, member_row);
            params q(2);
            q.add(id);
            q.add(wall_clock_us());
            attach(exec_prepared("strix_load_room_sanctions", q, PGRES_TUPLES_OK), one, sanction_row);
            attach(exec_prepared("strix_load_room_blocks", p, PGRES_TUPLES_OK), one, block_row);
            return std::move(one.front());
        });
    }

    direct_result open_direct(std::uint64_t from, std::string_view to_name, std::uint64_t new_room_id,
                              std::int64_t now_us, std::size_t max_rooms) override {
        return retrying([&] {
            exec("BEGIN");
            try {
                direct_result r = open_direct_with(*this, from, to_name, new_room_id, now_us, max_rooms);
                exec(r.outcome == direct_result::status::ok ? "COMMIT" : "ROLLBACK");
                return r;
            } catch (...) {
                rollback_quietly();
                throw;
            }
        });
    }

    block_result set_block(std::uint64_t account_id, std::string_view name, bool blocked,
                           std::int64_t now_us) override {
        return retrying([&] {
            exec("BEGIN");
            try {
                block_result r = set_block_with(*this, account_id, name, blocked, now_us);
                exec("COMMIT");
                return r;
            } catch (...) {
                rollback_quietly();
                throw;
            }
        });
    }

    std::vector<chat_log_entry> room_history(std::uint64_t room_id, std::size_t limit) override {
        if (limit == 0) return {};
        return retrying([&] { return do_history(room_id, limit); });
    }

    std::uint64_t count_chat_logs() override { return static_cast<std::uint64_t>(scalar("strix_count_logs")); }

    std::uint64_t max_room_id() override { return static_cast<std::uint64_t>(scalar("strix_max_room")); }

    bool delete_room_if_empty(std::uint64_t room_id, std::int64_t now_us) override {
        return retrying([&] {
            exec("BEGIN");
            try {
                params p(1);
                p.add(room_id);
                // The row lock first: the count below is a new statement, so it sees every
                // membership committed before the lock was granted (READ COMMITTED).
                auto locked = exec_prepared("strix_lock_room", p, PGRES_TUPLES_OK);
                bool deleted = false;
                if (::PQntuples(locked.get()) == 1) {
                    auto n = exec_prepared("strix_count_members", p, PGRES_TUPLES_OK);
                    if (from_be64(::PQgetvalue(n.get(), 0, 0)) == 0) {
                        params d(2);
                        d.add(room_id);
                        d.add(now_us);
                        exec_prepared("strix_delete_room", d, PGRES_COMMAND_OK);
                        deleted = true;
                    }
                }
                exec("COMMIT");
                return deleted;
            } catch (...) {
                rollback_quietly();
                throw;
            }
        });
    }

    std::optional<account> find_account(std::string_view name) override {
        return retrying([&]() -> std::optional<account> {
            if (auto found = select_account(name)) return account{found->id, std::string(name)};
            return std::nullopt;
        });
    }

    std::uint32_t schema_version() override { return static_cast<std::uint32_t>(scalar("strix_schema_version")); }

    std::optional<device_token_record> find_device_token(const device_token_hash& hash, token_kind kind) override {
        return retrying([&]() -> std::optional<device_token_record> {
            params p(1);
            p.add_bytes(as_chars(hash));
            auto r = exec_prepared(token_stmt("strix_find_", kind).c_str(), p, PGRES_TUPLES_OK);
            if (::PQntuples(r.get()) == 0) return std::nullopt;
            device_token_record rec{static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), 0, 0))), value(r, 0, 1),
                                    from_be64(::PQgetvalue(r.get(), 0, 2)), from_be64(::PQgetvalue(r.get(), 0, 3))};
            rec.rooms = rooms_of(rec.account_id);
            rec.room_id = newest_room(rec.rooms);
            return rec;
        });
    }

    void store_device_token(const device_token_change& c) override {
        retrying([&] {
            exec("BEGIN");
            try {
                if (c.replaces) {
                    params d(1);
                    d.add_bytes(as_chars(*c.replaces));
                    exec_prepared(token_stmt("strix_delete_", c.kind).c_str(), d, PGRES_COMMAND_OK);
                }
                params i(4);
                i.add_bytes(as_chars(c.hash));
                i.add(c.account_id);
                i.add(c.now_us);
                i.add(c.expires_at_us);
                exec_prepared(token_stmt("strix_insert_", c.kind).c_str(), i, PGRES_COMMAND_OK);
                params t(3);
                t.add(c.account_id);
                t.add(c.now_us);
                t.add(static_cast<std::int64_t>(std::min<std::size_t>(c.keep, INT64_MAX)));
                exec_prepared(token_stmt("strix_trim_", c.kind).c_str(), t, PGRES_COMMAND_OK);
                exec("COMMIT");
            } catch (...) {
                rollback_quietly();
                throw;
            }
            return 0;
        });
    }

    std::size_t revoke_device_tokens(std::uint64_t account_id, token_kind kind) override {
        return retrying([&] {
            params p(1);
            p.add(account_id);
            auto r = exec_prepared(token_stmt("strix_revoke_", kind).c_str(), p, PGRES_COMMAND_OK);
            return static_cast<std::size_t>(std::strtoull(::PQcmdTuples(r.get()), nullptr, 10));
        });
    }

    std::vector<chat_log_entry> history_page(const history_query& q) override {
        if (q.limit == 0) return {};
        if (q.before_seq == 0 && q.after_seq == 0) return room_history(q.room_id, q.limit);
        return retrying([&] {
            params p(3);
            p.add(q.room_id);
            p.add(q.before_seq != 0 ? q.before_seq : q.after_seq);
            p.add(static_cast<std::int64_t>(std::min<std::size_t>(q.limit, 1u << 20)));
            auto r =
                exec_prepared(q.before_seq != 0 ? "strix_history_before" : "strix_history_after", p, PGRES_TUPLES_OK);
            return read_entries(r, q.before_seq != 0);
        });
    }

    log_range room_log_range(std::uint64_t room_id) override {
        return retrying([&] {
            params p(1);
            p.add(room_id);
            auto r = exec_prepared("strix_log_range", p, PGRES_TUPLES_OK);
            if (::PQntuples(r.get()) == 0) return log_range{};
            return log_range{static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), 0, 0))),
                             static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), 0, 1)))};
        });
    }

    std::optional<std::uint64_t> find_idempotent(std::uint64_t room_id, std::string_view key) override {
        return retrying([&]() -> std::optional<std::uint64_t> {
            params p(2);
            p.add(room_id);
            p.add_text(key);
            auto r = exec_prepared("strix_find_idem", p, PGRES_TUPLES_OK);
            if (::PQntuples(r.get()) == 0) return std::nullopt;
            return static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), 0, 0)));
        });
    }

    std::vector<std::uint64_t> log_rooms_after(std::uint64_t after, std::size_t limit) override {
        return retrying([&] {
            std::vector<std::uint64_t> out;
            std::uint64_t from = after;
            while (out.size() < limit) {
                params p(1);
                p.add(from);
                auto r = exec_prepared("strix_next_log_room", p, PGRES_TUPLES_OK);
                if (::PQntuples(r.get()) == 0 || ::PQgetisnull(r.get(), 0, 0)) break;
                from = static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), 0, 0)));
                out.push_back(from);
            }
            return out;
        });
    }

protected:
    std::uint64_t old_prefix_end(std::uint64_t room_id, std::int64_t older_than_us, std::size_t max_rows) override {
        return retrying([&] {
            params p(2);
            p.add(room_id);
            p.add(static_cast<std::int64_t>(std::min<std::size_t>(max_rows, 1u << 20)));
            auto r = exec_prepared("strix_old_prefix", p, PGRES_TUPLES_OK);
            std::uint64_t end = 0;
            for (int i = 0, n = ::PQntuples(r.get()); i < n; ++i) {
                if (from_be64(::PQgetvalue(r.get(), i, 1)) >= older_than_us) break;
                end = static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), i, 0)));
            }
            return end;
        });
    }

    std::size_t delete_logs_through(std::uint64_t room_id, std::uint64_t seq) override {
        return retrying([&] {
            params p(2);
            p.add(room_id);
            p.add(seq);
            auto r = exec_prepared("strix_delete_logs", p, PGRES_COMMAND_OK);
            return static_cast<std::size_t>(std::strtoull(::PQcmdTuples(r.get()), nullptr, 10));
        });
    }

private:
    // A row of (id, name, last_seq, kind).
    static stored_room room_row(const result_ptr& r, int i) {
        stored_room room;
        room.id = static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), i, 0)));
        room.name = value(r, i, 1);
        room.last_seq = static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), i, 2)));
        room.kind = static_cast<std::uint8_t>(from_be64(::PQgetvalue(r.get(), i, 3)));
        return room;
    }
    // (room_id, account_id, name, role)
    static void member_row(stored_room& room, const result_ptr& r, int i) {
        room.members.push_back(static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), i, 1))));
        room.member_names.push_back(value(r, i, 2));
        room.member_roles.push_back(static_cast<std::uint8_t>(from_be64(::PQgetvalue(r.get(), i, 3))));
    }
    // (room_id, account_id, kind, until_us)
    static void sanction_row(stored_room& room, const result_ptr& r, int i) {
        room.sanctions.push_back({static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), i, 1))),
                                  static_cast<std::uint8_t>(from_be64(::PQgetvalue(r.get(), i, 2))),
                                  from_be64(::PQgetvalue(r.get(), i, 3))});
    }
    // (room_id, blocker, blocked)
    static void block_row(stored_room& room, const result_ptr& r, int i) {
        room.blocks.emplace_back(static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), i, 1))),
                                 static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), i, 2))));
    }
    // Calls fn(room, rows, i) for each row whose room (column 0) is in `rooms`; both are ordered
    // by room id.
    template <class F>
    static void attach(const result_ptr& rows, std::vector<stored_room>& rooms, F fn) {
        auto it = rooms.begin();
        for (int i = 0, n = ::PQntuples(rows.get()); i < n; ++i) {
            const auto room = static_cast<std::uint64_t>(from_be64(::PQgetvalue(rows.get(), i, 0)));
            while (it != rooms.end() && it->id < room) ++it;
            if (it == rooms.end()) break;
            if (it->id == room) fn(*it, rows, i);
        }
    }

    // direct_steps, inside open_direct's or set_block's transaction.
    std::optional<account> account_named(std::string_view name) override {
        if (auto found = select_account(name)) return account{found->id, std::string(name)};
        return std::nullopt;
    }
    bool blocks(std::uint64_t blocker, std::uint64_t blocked) override {
        return ::PQntuples(run("strix_blocks", blocker, blocked).get()) == 1;
    }
    std::optional<pair_row> find_pair(std::uint64_t low, std::uint64_t high) override {
        const auto r = run("strix_find_pair", low, high);
        if (::PQntuples(r.get()) == 0) return std::nullopt;
        return pair_row{static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), 0, 0))),
                        from_be64(::PQgetvalue(r.get(), 0, 1)) != 0};
    }
    bool claim_pair(std::uint64_t low, std::uint64_t high, std::uint64_t room_id) override {
        // A racing caller's uncommitted row makes this wait for its commit (then: no row).
        return changed(run("strix_claim_pair", low, high, room_id)) == 1;
    }
    bool move_pair(std::uint64_t low, std::uint64_t high, std::uint64_t from_room, std::uint64_t to_room) override {
        return changed(run("strix_move_pair", low, high, from_room, to_room)) == 1;
    }
    bool is_member(std::uint64_t room_id, std::uint64_t account_id) override {
        return ::PQntuples(run("strix_is_member", room_id, account_id).get()) == 1;
    }
    std::size_t membership_count(std::uint64_t account_id) override {
        const auto r = run("strix_count_rooms", account_id);
        return static_cast<std::size_t>(from_be64(::PQgetvalue(r.get(), 0, 0)));
    }
    void create_direct_room(std::uint64_t room_id, std::int64_t now_us) override {
        run("strix_create_direct_room", room_id, now_us);
    }
    bool add_member(std::uint64_t room_id, std::uint64_t account_id, std::int64_t now_us) override {
        return changed(run("strix_add_member", account_id, room_id, now_us)) == 1;
    }
    void set_block_row(std::uint64_t account_id, std::uint64_t blocked_id, bool blocked, std::int64_t now_us) override {
        if (blocked) {
            run("strix_block", account_id, blocked_id, now_us);
        } else {
            run("strix_unblock", account_id, blocked_id);
        }
    }

    // The prepared statement of this kind of token: "strix_find_" + "token" / "resume_token".
    static std::string token_stmt(const char* op, token_kind kind) {
        return std::string(op) + (kind == token_kind::device ? "token" : "resume_token");
    }

    // Rows of (room_id, seq, sender_id, sender_name, server_ts_us, text, kind); `reversed`: they came
    // newest first.
    static std::vector<chat_log_entry> read_entries(const result_ptr& r, bool reversed) {
        std::vector<chat_log_entry> out;
        const int n = ::PQntuples(r.get());
        out.reserve(static_cast<std::size_t>(n));
        for (int k = 0; k < n; ++k) {
            const int i = reversed ? n - 1 - k : k;
            chat_log_entry e;
            e.room_id = static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), i, 0)));
            e.seq = static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), i, 1)));
            e.sender_id = static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), i, 2)));
            e.sender_name = value(r, i, 3);
            e.server_ts_us = from_be64(::PQgetvalue(r.get(), i, 4));
            e.text = value(r, i, 5);
            e.kind = static_cast<std::uint8_t>(from_be64(::PQgetvalue(r.get(), i, 6)));
            out.push_back(std::move(e));
        }
        return out;
    }

    static std::string_view as_chars(const device_token_hash& h) noexcept {
        return {reinterpret_cast<const char*>(h.bytes.data()), h.bytes.size()};
    }

    // A connection the server dropped (restart, idle timeout, failover) only shows when a query
    // fails. Every operation here may safely run twice (reads; inserts skip existing keys), so
    // after such a failure reconnect and try once more before reporting the error.
    template <class F>
    std::invoke_result_t<F&> retrying(F&& f) {
        ensure_ready();
        try {
            return f();
        } catch (const storage_error&) {
            if (::PQstatus(conn_) != CONNECTION_BAD) throw;
        }
        ensure_ready();
        return f();
    }

    // password null: an external login (login_external).
    login_result do_login(std::string_view name, const std::string_view* password, bool auto_register) {
        for (int round = 0; round < 2; ++round) {
            if (auto found = select_account(name)) {
                if (!password && found->hash != external_account_hash) return {login_outcome::password_account, {}};
                if (password && !verify_password(found->hash, *password)) return {login_outcome::wrong_password, {}};
                std::vector<account_room> rooms = rooms_of(found->id);
                const std::uint64_t room = newest_room(rooms);
                return {login_outcome::ok, {found->id, std::string(name)}, room, std::move(rooms)};
            }
            if (!auto_register) return {login_outcome::unknown_account, {}};
            const std::string hash = password ? hash_password(*password, policy_) : std::string(external_account_hash);
            params p(3);
            p.add_text(name);
            p.add_text(hash);
            p.add(wall_clock_us());
            auto r = exec_prepared("strix_insert_account", p, PGRES_TUPLES_OK);
            if (::PQntuples(r.get()) == 1) {
                return {login_outcome::created,
                        {static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), 0, 0))), std::string(name)}};
            }
            // ON CONFLICT DO NOTHING returned no row: a concurrent login registered the name
            // first (our INSERT waited for its commit). Verify against its hash next round.
        }
        throw storage_error("postgresql: account '" + std::string(name) + "' vanished during login");
    }

    std::size_t do_append(std::span<const room_change> changes, std::span<const chat_log_entry> entries) {
        exec("BEGIN");
        std::size_t inserted = 0;
        try {
            for (const auto& c : changes) apply(c);
            for (std::size_t off = 0; off < entries.size(); off += rows_per_insert) {
                const auto chunk = entries.subspan(off, std::min(rows_per_insert, entries.size() - off));
                params p(chunk.size() * 8);
                for (const auto& e : chunk) {
                    p.add(e.room_id);
                    p.add(e.seq);
                    p.add(e.sender_id);
                    p.add_text(e.sender_name);
                    p.add(e.server_ts_us);
                    p.add_bytes(e.text);
                    p.add(std::int64_t{e.kind});
                    p.add_text(e.idem_key);
                }
                const std::string sql = insert_logs_sql(chunk.size());
                result_ptr r(::PQexecParams(conn_, sql.c_str(), p.count(), p.types(), p.values(), p.lengths(),
                                            p.formats(), 1),
                             &::PQclear);
                check(r, PGRES_COMMAND_OK, "insert chat_logs");
                inserted += static_cast<std::size_t>(std::strtoull(::PQcmdTuples(r.get()), nullptr, 10));
            }
            exec("COMMIT");
        } catch (...) {
            rollback_quietly();
            throw;
        }
        return inserted;
    }

    std::vector<chat_log_entry> do_history(std::uint64_t room_id, std::size_t limit) {
        params p(2);
        p.add(room_id);
        p.add(static_cast<std::int64_t>(std::min<std::size_t>(limit, INT64_MAX)));
        auto r = exec_prepared("strix_history", p, PGRES_TUPLES_OK);
        // Rows come newest first (so LIMIT keeps the newest); callers want newest last.
        return read_entries(r, true);
    }

    void configure() {
        // "relation already exists, skipping" and friends are expected during migrations.
        ::PQsetNoticeProcessor(
            conn_, [](void*, const char*) {}, nullptr);
    }

    void migrate() {
        const migration* failed = nullptr;
        try {
            exec("BEGIN");
            // Concurrent openers queue here; the lock is released by COMMIT or ROLLBACK.
            exec(migration_lock_sql, PGRES_TUPLES_OK);
            exec(postgres_schema_version_table);
            const auto v = exec("SELECT COALESCE(MAX(version), 0)::BIGINT FROM schema_version", PGRES_TUPLES_OK, true);
            const auto current = static_cast<std::uint32_t>(from_be64(::PQgetvalue(v.get(), 0, 0)));
            if (current > latest_schema_version()) {
                throw std::runtime_error("PostgreSQL database at '" + redact_url(url_) + "' has schema version " +
                                         std::to_string(current) + ", newer than this build's " +
                                         std::to_string(latest_schema_version()) +
                                         "; run a newer strix or use another database");
            }
            for (const auto& m : all_migrations()) {
                if (m.version <= current) continue;
                failed = &m;
                exec(m.postgres_sql);
                params p(2);
                p.add(static_cast<std::int64_t>(m.version));
                p.add(wall_clock_us());
                result_ptr r(::PQexecParams(conn_,
                                            "INSERT INTO schema_version (version, applied_at_us) "
                                            "VALUES ($1, $2)",
                                            p.count(), p.types(), p.values(), p.lengths(), p.formats(), 1),
                             &::PQclear);
                check(r, PGRES_COMMAND_OK, "record schema version");
            }
            failed = nullptr;
            exec("COMMIT");
        } catch (const storage_error& e) {
            rollback_quietly();
            throw std::runtime_error(
                "cannot migrate PostgreSQL database at '" + redact_url(url_) + "'" +
                (failed ? " (step " + std::to_string(failed->version) + ", " + failed->description + ")"
                        : std::string()) +
                ": " + e.what() + "; check that the user may create tables");
        } catch (...) {
            rollback_quietly();
            throw;
        }
    }

    void prepare_all() {
        for (const auto& s : pg_statements()) {
            result_ptr r(::PQprepare(conn_, s.name, s.sql, static_cast<int>(s.types.size()), s.types.data()),
                         &::PQclear);
            check(r, PGRES_COMMAND_OK, s.name);
        }
    }

    // Called at the start of every operation: reconnects after a lost connection (prepared
    // statements live in the server session, so they are prepared again), and clears a
    // transaction a previous failure may have left open.
    void ensure_ready() {
        if (::PQstatus(conn_) != CONNECTION_OK) {
            ::PQreset(conn_);
            if (::PQstatus(conn_) != CONNECTION_OK) {
                throw storage_error("postgresql: connection to '" + redact_url(url_) +
                                    "' lost and reconnecting failed: " + trim(::PQerrorMessage(conn_)));
            }
            configure();
            prepare_all();
        }
        if (::PQtransactionStatus(conn_) != PQTRANS_IDLE) rollback_quietly();
    }

    struct account_row {
        std::uint64_t id;
        std::string hash;
    };

    std::optional<account_row> select_account(std::string_view name) {
        params p(1);
        p.add_text(name);
        auto r = exec_prepared("strix_select_account", p, PGRES_TUPLES_OK);
        if (::PQntuples(r.get()) == 0) return std::nullopt;
        return account_row{static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), 0, 0))), value(r, 0, 1)};
    }

    // The rooms the account belongs to that are not deleted, oldest join first (ties by id).
    std::vector<account_room> rooms_of(std::uint64_t account_id) {
        params p(1);
        p.add(account_id);
        auto r = exec_prepared("strix_rooms_of", p, PGRES_TUPLES_OK);
        std::vector<account_room> out;
        for (int i = 0, n = ::PQntuples(r.get()); i < n; ++i) {
            out.push_back({static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), i, 0))),
                           from_be64(::PQgetvalue(r.get(), i, 1)),
                           static_cast<std::uint64_t>(from_be64(::PQgetvalue(r.get(), i, 2)))});
        }
        return out;
    }

    // One room change, inside do_append's transaction.
    void apply(const room_change& c) {
        switch (c.what) {
            case room_change::kind::created: {
                params p(3);
                p.add(c.room_id);
                p.add_text(c.name);
                p.add(c.at_us);
                exec_prepared("strix_insert_room", p, PGRES_COMMAND_OK);
                break;
            }
            case room_change::kind::deleted: {
                params p(2);
                p.add(c.room_id);
                p.add(c.at_us);
                exec_prepared("strix_delete_room", p, PGRES_COMMAND_OK);
                params q(1);
                q.add(c.room_id);
                exec_prepared("strix_clear_members", q, PGRES_COMMAND_OK);
                break;
            }
            case room_change::kind::joined: {
                params p(5);
                p.add(c.account_id);
                p.add(c.room_id);
                p.add(c.at_us);
                p.add(c.seq);
                p.add(std::int64_t{c.role});
                exec_prepared("strix_set_member", p, PGRES_COMMAND_OK);
                break;
            }
            case room_change::kind::left: {
                params p(2);
                p.add(c.account_id);
                p.add(c.room_id);
                exec_prepared("strix_unset_member", p, PGRES_COMMAND_OK);
                break;
            }
            case room_change::kind::read: {
                params p(3);
                p.add(c.account_id);
                p.add(c.room_id);
                p.add(c.seq);
                exec_prepared("strix_mark_read", p, PGRES_COMMAND_OK);
                break;
            }
            case room_change::kind::role: run("strix_set_role", c.account_id, c.room_id, std::int64_t{c.role}); break;
            case room_change::kind::sanction:
                run("strix_set_sanction", c.room_id, c.account_id, std::int64_t{c.sanction}, c.until_us, c.by, c.at_us);
                break;
            case room_change::kind::lift: run("strix_lift", c.room_id, c.account_id, std::int64_t{c.sanction}); break;
            case room_change::kind::erase: run("strix_erase", c.room_id, c.seq); break;
        }
    }

    // Runs the prepared statement `name` with the integer parameters `args`.
    template <class... A>
    result_ptr run(const char* name, A... args) {
        params p(sizeof...(A));
        (p.add(args), ...);
        const auto r = ::PQexecPrepared(conn_, name, p.count(), p.values(), p.lengths(), p.formats(), 1);
        result_ptr out(r, &::PQclear);
        const auto status = out ? ::PQresultStatus(out.get()) : PGRES_FATAL_ERROR;
        check(out, status == PGRES_TUPLES_OK ? PGRES_TUPLES_OK : PGRES_COMMAND_OK, name);
        return out;
    }
    static std::size_t changed(const result_ptr& r) {
        return static_cast<std::size_t>(std::strtoull(::PQcmdTuples(r.get()), nullptr, 10));
    }

    std::int64_t scalar(const char* stmt) {
        return retrying([&] {
            params p(0);
            auto r = exec_prepared(stmt, p, PGRES_TUPLES_OK);
            if (::PQntuples(r.get()) != 1) throw storage_error(std::string("postgresql: ") + stmt + " returned no row");
            return from_be64(::PQgetvalue(r.get(), 0, 0));
        });
    }

    result_ptr exec_prepared(const char* name, const params& p, ExecStatusType want) {
        result_ptr r(::PQexecPrepared(conn_, name, p.count(), p.values(), p.lengths(), p.formats(), 1), &::PQclear);
        check(r, want, name);
        return r;
    }

    result_ptr exec(const char* sql, ExecStatusType want = PGRES_COMMAND_OK, bool binary = false) {
        result_ptr r(binary ? ::PQexecParams(conn_, sql, 0, nullptr, nullptr, nullptr, nullptr, 1)
                            : ::PQexec(conn_, sql),
                     &::PQclear);
        check(r, want, sql);
        return r;
    }

    void check(const result_ptr& r, ExecStatusType want, const char* what) {
        if (r && ::PQresultStatus(r.get()) == want) return;
        const std::string why = trim(r ? ::PQresultErrorMessage(r.get()) : ::PQerrorMessage(conn_));
        throw storage_error(std::string("postgresql: ") + what + ": " + (why.empty() ? "unexpected result" : why));
    }

    void rollback_quietly() noexcept {
        if (::PQstatus(conn_) != CONNECTION_OK) return;
        ::PQclear(::PQexec(conn_, "ROLLBACK"));
    }

    static std::string value(const result_ptr& r, int row, int col) {
        return std::string(::PQgetvalue(r.get(), row, col), static_cast<std::size_t>(::PQgetlength(r.get(), row, col)));
    }

    std::string url_;
    password_policy policy_;
    PGconn* conn_;
};

}  // namespace

std::unique_ptr<chat_store> open_postgres_store(const std::string& url, const password_policy& policy) {
    return std::make_unique<pg_chat_store>(url, policy);
}

}  // namespace strix::chat::storage_detail
