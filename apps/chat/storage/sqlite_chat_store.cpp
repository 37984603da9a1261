// SQLite back end: one connection per worker thread (opened without SQLite's own mutexes, since
// each connection is used by one thread at a time), WAL journal so readers never block the
// writer, synchronous=NORMAL (a commit is in the WAL when COMMIT returns, so it survives the
// process; a power cut may lose the last commits but never corrupts the file), a busy timeout so
// connections queue on the write lock instead of failing, and every statement prepared once at
// open.
//
// Checkpoints run on a thread of their own (one per database file, with its own connection),
// not inside the COMMIT of whichever connection crossed the WAL threshold. A checkpoint
// fdatasync()s the WAL and the database file, which on a busy disk took seconds; in COMMIT that
// held up the chat log writer and with it every acknowledgement (--ack stored). Committing
// connections only signal it; a WAL that still grows past wal_hard_limit_pages (the checkpointer
// cannot keep up) is checkpointed by the committing connection itself, as SQLite would do.

#include "apps/chat/storage/backends.hpp"
#include "apps/chat/storage/direct_rooms.hpp"
#include "apps/chat/storage/sqlite_checkpointer.hpp"
#include "apps/chat/storage/sqlite_db.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>

namespace strix::chat::storage_detail {

namespace {

class sqlite_chat_store final : public chat_store, private direct_steps {
public:
    sqlite_chat_store(const std::string& path, const password_policy& policy) : policy_(policy) {
        const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
        const int rc = ::sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
        if (rc != SQLITE_OK) {
            std::string why = db_ != nullptr ? ::sqlite3_errmsg(db_) : ::sqlite3_errstr(rc);
            ::sqlite3_close_v2(db_);
            db_ = nullptr;
            const auto dir = std::filesystem::path(path).parent_path();
            if (!dir.empty() && !std::filesystem::is_directory(dir)) {
                throw std::runtime_error("cannot open SQLite database '" + path + "': directory '" + dir.string() +
                                         "' does not exist; create it or choose another path");
            }
            throw std::runtime_error("cannot open SQLite database '" + path + "': " + why +
                                     "; check the path and its permissions");
        }
        try {
            setup(path);
        } catch (...) {
            close();
            throw;
        }
    }

    ~sqlite_chat_store() override { close(); }

    login_result login(std::string_view name, std::string_view password, bool auto_register) override {
        return login_as(name, &password, auto_register);
    }

    login_result login_external(std::string_view name) override { return login_as(name, nullptr, true); }

    // One write transaction for the batch: its file locks, its WAL pages (consecutive accounts
    // share leaf pages) and the wait for the write lock are paid once, not per login.
    std::vector<login_result> login_external_batch(std::span<const std::string> names) override {
        std::vector<login_result> out;
        out.reserve(names.size());
        exec("BEGIN IMMEDIATE");
        try {
            for (const std::string& name : names) out.push_back(login_as(name, nullptr, true));
            exec("COMMIT");
        } catch (...) {
            ::sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
            throw;
        }
        return out;
    }

    // password null: an external login (login_external).
    login_result login_as(std::string_view name, const std::string_view* password, bool auto_register) {
        // Two rounds at most: a lost insert race is followed by one verify of the winner's row.
        for (int round = 0; round < 2; ++round) {
            if (auto found = select_account(name)) {
                if (!password && found->hash != external_account_hash) return {login_outcome::password_account, {}};
                if (password && !verify_password(found->hash, *password)) return {login_outcome::wrong_password, {}};
                std::vector<account_room> rooms = rooms_of(found->id);
                const std::uint64_t room = newest_room(rooms);
                return {login_outcome::ok, {found->id, std::string(name)}, room, std::move(rooms)};
            }
            if (!auto_register) return {login_outcome::unknown_account, {}};
            // Hash before touching the write lock: argon2id is the slow part.
            const std::string hash = password ? hash_password(*password, policy_) : std::string(external_account_hash);
            reset_guard g{insert_account_};
            insert_account_.bind_text(1, name);
            insert_account_.bind_text(2, hash);
            insert_account_.bind(3, wall_clock_us());
            insert_account_.step();
            if (::sqlite3_changes(db_) == 1) {
                const auto id = static_cast<std::uint64_t>(::sqlite3_last_insert_rowid(db_));
                return {login_outcome::created, {id, std::string(name)}};
            }
            // ON CONFLICT DO NOTHING skipped the row: another connection registered the name
            // first. Verify against its hash on the next round.
        }
        throw storage_error("sqlite: account '" + std::string(name) + "' vanished during login");
    }

    std::size_t write_batch(std::span<const room_change> changes, std::span<const chat_log_entry> entries) override {
        if (entries.empty() && changes.empty()) return 0;
        // IMMEDIATE takes the write lock up front (waiting up to the busy timeout), so the batch
        // cannot fail halfway on a lock held by another connection.
        exec("BEGIN IMMEDIATE");
        std::size_t inserted = 0;
        try {
            for (const auto& c : changes) apply(c);
            for (const auto& e : entries) {
                reset_guard g{insert_log_};
                insert_log_.bind(1, e.room_id);
                insert_log_.bind(2, e.seq);
                insert_log_.bind(3, e.sender_id);
                insert_log_.bind_text(4, e.sender_name);
                insert_log_.bind(5, e.server_ts_us);
                insert_log_.bind_blob(6, e.text);
                insert_log_.bind(7, std::int64_t{e.kind});
                insert_log_.bind_text(8, e.idem_key);
                insert_log_.step();
                inserted += static_cast<std::size_t>(::sqlite3_changes(db_));
            }
            exec("COMMIT");
        } catch (...) {
            // Best effort: after some errors SQLite has already rolled back by itself.
            ::sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
            throw;
        }
        return inserted;
    }

    std::vector<chat_log_entry> room_history(std::uint64_t room_id, std::size_t limit) override {
        std::vector<chat_log_entry> out;
        if (limit == 0) return out;
        reset_guard g{history_};
        history_.bind(1, room_id);
        history_.bind(2, static_cast<std::int64_t>(
                             std::min<std::size_t>(limit, std::numeric_limits<std::int64_t>::max())));
        while (history_.step()) out.push_back(read_entry(history_));
        // The query walks newest first so LIMIT keeps the newest; callers want newest last.
        std::reverse(out.begin(), out.end());
        return out;
    }

    std::vector<stored_room> load_rooms() override {
        std::vector<stored_room> out;
        {
            reset_guard g{load_rooms_};
            while (load_rooms_.step()) {
                stored_room r;
                r.id = static_cast<std::uint64_t>(load_rooms_.column_i64(0));
                r.name = load_rooms_.column_string(1);
                r.last_seq = static_cast<std::uint64_t>(load_rooms_.column_i64(2));
                r.kind = static_cast<std::uint8_t>(load_rooms_.column_i64(3));
                out.push_back(std::move(r));
            }
        }
        attach(load_members_, out, [](stored_room& r, const statement& st) {
            r.members.push_back(static_cast<std::uint64_t>(st.column_i64(1)));
            r.member_names.push_back(st.column_string(2));
            r.member_roles.push_back(static_cast<std::uint8_t>(st.column_i64(3)));
        });
        load_sanctions_.bind(1, wall_clock_us());
        attach(load_sanctions_, out, [](stored_room& r, const statement& st) {
            r.sanctions.push_back({static_cast<std::uint64_t>(st.column_i64(1)),
                                   static_cast<std::uint8_t>(st.column_i64(2)), st.column_i64(3)});
        });
        attach(load_blocks_, out, [](stored_room& r, const statement& st) {
            r.blocks.emplace_back(static_cast<std::uint64_t>(st.column_i64(1)),
                                  static_cast<std::uint64_t>(st.column_i64(2)));
        });
        return out;
    }

    std::uint64_t count_chat_logs() override { return static_cast<std::uint64_t>(sqlite_scalar(count_logs_)); }

    std::uint64_t max_room_id() override { return static_cast<std::uint64_t>(sqlite_scalar(max_room_)); }

    bool delete_room_if_empty(std::uint64_t room_id, std::int64_t now_us) override {
        // BEGIN IMMEDIATE takes the write lock: no membership changes between count and update.
        exec("BEGIN IMMEDIATE");
        try {
            statement count(db_, "SELECT (SELECT COUNT(*) FROM account_rooms WHERE room_id = ?1), "
                                 "(SELECT COUNT(*) FROM rooms WHERE id = ?1 AND deleted_at_us IS NULL)");
            count.bind(1, room_id);
            const bool empty = count.step() && count.column_i64(0) == 0 && count.column_i64(1) == 1;
            count.reset();
            if (empty) {
                reset_guard g{delete_room_};
                delete_room_.bind(1, room_id);
                delete_room_.bind(2, now_us);
                delete_room_.step();
            }
            exec("COMMIT");
            return empty;
        } catch (...) {
            ::sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
            throw;
        }
    }

    direct_result open_direct(std::uint64_t from, std::string_view to_name, std::uint64_t new_room_id,
                              std::int64_t now_us, std::size_t max_rooms) override {
        // The write lock from the first read on: no other connection can claim the pair between
        // this one's look-up and its insert.
        exec("BEGIN IMMEDIATE");
        try {
            direct_result r = open_direct_with(*this, from, to_name, new_room_id, now_us, max_rooms);
            exec(r.outcome == direct_result::status::ok ? "COMMIT" : "ROLLBACK");
            return r;
        } catch (...) {
            ::sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
            throw;
        }
    }

    block_result set_block(std::uint64_t account_id, std::string_view name, bool blocked,
                           std::int64_t now_us) override {
        exec("BEGIN IMMEDIATE");
        try {
            block_result r = set_block_with(*this, account_id, name, blocked, now_us);
            exec("COMMIT");
            return r;
        } catch (...) {
            ::sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
            throw;
        }
    }

    std::optional<account> find_account(std::string_view name) override {
        if (auto found = select_account(name)) return account{found->id, std::string(name)};
        return std::nullopt;
    }

    std::uint32_t schema_version() override { return static_cast<std::uint32_t>(sqlite_scalar(version_)); }

    std::optional<device_token_record> find_device_token(const device_token_hash& hash, token_kind kind) override {
        device_token_record rec;
        {
            statement& find = tokens_[index(kind)].find;
            reset_guard g{find};
            find.bind_blob(1, as_chars(hash));
            if (!find.step()) return std::nullopt;
            rec.account_id = static_cast<std::uint64_t>(find.column_i64(0));
            rec.account_name = find.column_string(1);
            rec.created_at_us = find.column_i64(2);
            rec.expires_at_us = find.column_i64(3);
        }
        rec.rooms = rooms_of(rec.account_id);
        rec.room_id = newest_room(rec.rooms);
        return rec;
    }

    void store_device_token(const device_token_change& c) override {
        token_statements& t = tokens_[index(c.kind)];
        exec("BEGIN IMMEDIATE");
        try {
            if (c.replaces) {
                reset_guard g{t.remove};
                t.remove.bind_blob(1, as_chars(*c.replaces));
                t.remove.step();
            }
            {
                reset_guard g{t.insert};
                t.insert.bind_blob(1, as_chars(c.hash));
                t.insert.bind(2, c.account_id);
                t.insert.bind(3, c.now_us);
                t.insert.bind(4, c.expires_at_us);
                t.insert.step();
            }
            reset_guard g{t.trim};
            t.trim.bind(1, c.account_id);
            t.trim.bind(2, c.now_us);
            t.trim.bind(3, static_cast<std::int64_t>(
                               std::min<std::size_t>(c.keep, std::numeric_limits<std::int64_t>::max())));
            t.trim.step();
            exec("COMMIT");
        } catch (...) {
            ::sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
            throw;
        }
    }

    std::size_t revoke_device_tokens(std::uint64_t account_id, token_kind kind) override {
        statement& revoke = tokens_[index(kind)].revoke;
        reset_guard g{revoke};
        revoke.bind(1, account_id);
        revoke.step();
        return static_cast<std::size_t>(::sqlite3_changes(db_));
    }

    std::vector<chat_log_entry> history_page(const history_query& q) override {
        std::vector<chat_log_entry> out;
        if (q.limit == 0) return out;
        const auto limit = static_cast<std::int64_t>(std::min<std::size_t>(q.limit, 1u << 20));
        statement& st = q.before_seq != 0 ? history_before_ : q.after_seq != 0 ? history_after_ : history_;
        reset_guard g{st};
        st.bind(1, q.room_id);
        if (&st == &history_) {
            st.bind(2, limit);
        } else {
            st.bind(2, q.before_seq != 0 ? q.before_seq : q.after_seq);
            st.bind(3, limit);
        }
        while (st.step()) out.push_back(read_entry(st));
        // Newest-first queries (so LIMIT keeps the newest) come back reversed.
        if (&st != &history_after_) std::reverse(out.begin(), out.end());
        return out;
    }

    log_range room_log_range(std::uint64_t room_id) override {
        reset_guard g{log_range_};
        log_range_.bind(1, room_id);
        if (!log_range_.step()) return {};
        return {static_cast<std::uint64_t>(log_range_.column_i64(0)),
                static_cast<std::uint64_t>(log_range_.column_i64(1))};
    }

    std::optional<std::uint64_t> find_idempotent(std::uint64_t room_id, std::string_view key) override {
        reset_guard g{find_idem_};
        find_idem_.bind(1, room_id);
        find_idem_.bind_text(2, key);
        if (!find_idem_.step()) return std::nullopt;
        return static_cast<std::uint64_t>(find_idem_.column_i64(0));
    }

    std::vector<std::uint64_t> log_rooms_after(std::uint64_t after, std::size_t limit) override {
        std::vector<std::uint64_t> out;
        while (out.size() < limit) {
            reset_guard g{next_log_room_};
            next_log_room_.bind(1, after);
            if (!next_log_room_.step()) break;
            after = static_cast<std::uint64_t>(next_log_room_.column_i64(0));
            out.push_back(after);
        }
        return out;
    }

protected:
    std::uint64_t old_prefix_end(std::uint64_t room_id, std::int64_t older_than_us, std::size_t max_rows) override {
        reset_guard g{old_prefix_};
        old_prefix_.bind(1, room_id);
        old_prefix_.bind(2, static_cast<std::int64_t>(std::min<std::size_t>(max_rows, 1u << 20)));
        std::uint64_t end = 0;
        while (old_prefix_.step()) {
            if (old_prefix_.column_i64(1) >= older_than_us) break;
            end = static_cast<std::uint64_t>(old_prefix_.column_i64(0));
        }
        return end;
    }

    std::size_t delete_logs_through(std::uint64_t room_id, std::uint64_t seq) override {
        reset_guard g{delete_logs_};
        delete_logs_.bind(1, room_id);
        delete_logs_.bind(2, seq);
        delete_logs_.step();
        return static_cast<std::size_t>(::sqlite3_changes(db_));
    }

private:
    struct token_statements {
        statement find, remove, insert, trim, revoke;
    };
    // direct_steps' statements (open_direct, set_block).
    struct direct_statements {
        statement find_pair, claim_pair, move_pair, is_member, count_rooms, create_room, add_member;
        statement blocks, block, unblock;
    };

    // direct_steps, inside open_direct's or set_block's transaction.
    std::optional<account> account_named(std::string_view name) override { return find_account(name); }
    bool blocks(std::uint64_t blocker, std::uint64_t blocked) override {
        return query_row(direct_.blocks, blocker, blocked);
    }
    std::optional<pair_row> find_pair(std::uint64_t low, std::uint64_t high) override {
        statement& st = direct_.find_pair;
        reset_guard g{st};
        st.bind(1, low);
        st.bind(2, high);
        if (!st.step()) return std::nullopt;
        return pair_row{static_cast<std::uint64_t>(st.column_i64(0)), st.column_i64(1) != 0};
    }
    bool claim_pair(std::uint64_t low, std::uint64_t high, std::uint64_t room_id) override {
        return change(direct_.claim_pair, low, high, room_id) == 1;
    }
    bool move_pair(std::uint64_t low, std::uint64_t high, std::uint64_t from_room, std::uint64_t to_room) override {
        return change(direct_.move_pair, low, high, from_room, to_room) == 1;
    }
    bool is_member(std::uint64_t room_id, std::uint64_t account_id) override {
        return query_row(direct_.is_member, room_id, account_id);
    }
    std::size_t membership_count(std::uint64_t account_id) override {
        reset_guard g{direct_.count_rooms};
        direct_.count_rooms.bind(1, account_id);
        return static_cast<std::size_t>(sqlite_scalar(direct_.count_rooms));
    }
    void create_direct_room(std::uint64_t room_id, std::int64_t now_us) override {
        change(direct_.create_room, room_id, now_us);
    }
    bool add_member(std::uint64_t room_id, std::uint64_t account_id, std::int64_t now_us) override {
        return change(direct_.add_member, account_id, room_id, now_us) == 1;
    }
    void set_block_row(std::uint64_t account_id, std::uint64_t blocked_id, bool blocked, std::int64_t now_us) override {
        if (blocked) {
            change(direct_.block, account_id, blocked_id, now_us);
        } else {
            change(direct_.unblock, account_id, blocked_id);
        }
    }

    // Runs `st` with `binds`; returns the rows it changed.
    template <class... B>
    int change(statement& st, B... binds) {
        reset_guard g{st};
        int i = 0;
        (bind_one(st, ++i, binds), ...);
        st.step();
        return ::sqlite3_changes(db_);
    }
    // Runs the query `st` with `binds`; true when it returns a row.
    template <class... B>
    static bool query_row(statement& st, B... binds) {
        reset_guard g{st};
        int i = 0;
        (bind_one(st, ++i, binds), ...);
        return st.step();
    }

    // Calls fn(room, st) for each row of `st` whose room (column 0) is in `rooms`; both are
    // ordered by room id.
    template <class F>
    static void attach(statement& st, std::vector<stored_room>& rooms, F&& fn) {
        reset_guard g{st};
        auto it = rooms.begin();
        while (st.step()) {
            const auto room = static_cast<std::uint64_t>(st.column_i64(0));
            while (it != rooms.end() && it->id < room) ++it;
            if (it == rooms.end()) break;
            if (it->id == room) fn(*it, st);
        }
    }

    void prepare_moderation() {
        set_role_ = statement(db_, "UPDATE account_rooms SET role = ?3 WHERE account_id = ?1 AND room_id = ?2");
        set_sanction_ = statement(db_, "INSERT INTO room_sanctions (room_id, account_id, kind, until_us, by_account, "
                                       "at_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (room_id, account_id, kind) "
                                       "DO UPDATE SET until_us = excluded.until_us, by_account = excluded.by_account, "
                                       "at_us = excluded.at_us");
        lift_ = statement(db_, "DELETE FROM room_sanctions WHERE room_id = ?1 AND account_id = ?2 AND kind = ?3");
        erase_ = statement(db_, "UPDATE chat_logs SET kind = 2, text = X'' WHERE room_id = ?1 AND seq = ?2");
        load_sanctions_ = statement(db_, "SELECT s.room_id, s.account_id, s.kind, s.until_us FROM room_sanctions s "
                                         "JOIN rooms r ON r.id = s.room_id WHERE r.deleted_at_us IS NULL "
                                         "AND (s.until_us = 0 OR s.until_us > ?1) "
                                         "ORDER BY s.room_id, s.account_id, s.kind");
        // Each direct room's blocks, either way round: (room, blocker, blocked).
        load_blocks_ = statement(db_, "SELECT d.room_id, d.low_id, d.high_id FROM direct_rooms d "
                                      "JOIN rooms r ON r.id = d.room_id JOIN account_blocks b "
                                      "ON b.account_id = d.low_id AND b.blocked_id = d.high_id "
                                      "WHERE r.deleted_at_us IS NULL UNION ALL "
                                      "SELECT d.room_id, d.high_id, d.low_id FROM direct_rooms d "
                                      "JOIN rooms r ON r.id = d.room_id JOIN account_blocks b "
                                      "ON b.account_id = d.high_id AND b.blocked_id = d.low_id "
                                      "WHERE r.deleted_at_us IS NULL ORDER BY 1, 2");
        direct_.find_pair = statement(db_, "SELECT d.room_id, r.id IS NOT NULL AND r.deleted_at_us IS NULL "
                                           "FROM direct_rooms d LEFT JOIN rooms r ON r.id = d.room_id "
                                           "WHERE d.low_id = ?1 AND d.high_id = ?2");
        direct_.claim_pair = statement(db_, "INSERT INTO direct_rooms (low_id, high_id, room_id) VALUES (?1, ?2, ?3) "
                                            "ON CONFLICT (low_id, high_id) DO NOTHING");
        direct_.move_pair = statement(db_, "UPDATE direct_rooms SET room_id = ?4 "
                                           "WHERE low_id = ?1 AND high_id = ?2 AND room_id = ?3");
        direct_.is_member = statement(db_, "SELECT 1 FROM account_rooms WHERE room_id = ?1 AND account_id = ?2");
        // As rooms_of_: memberships of deleted rooms do not count.
        direct_.count_rooms = statement(db_, "SELECT COUNT(*) FROM account_rooms m LEFT JOIN rooms r "
                                             "ON r.id = m.room_id WHERE m.account_id = ?1 AND r.deleted_at_us IS NULL");
        // No ON CONFLICT: a taken id is the caller's error, not a room to reuse.
        direct_.create_room =
            statement(db_, "INSERT INTO rooms (id, name, created_at_us, kind) VALUES (?1, '', ?2, 1)");
        direct_.add_member = statement(db_, "INSERT INTO account_rooms (account_id, room_id, joined_at_us, "
                                            "last_read_seq, role) VALUES (?1, ?2, ?3, 0, 0) "
                                            "ON CONFLICT (account_id, room_id) DO NOTHING");
        direct_.blocks = statement(db_, "SELECT 1 FROM account_blocks WHERE account_id = ?1 AND blocked_id = ?2");
        direct_.block = statement(db_, "INSERT INTO account_blocks (account_id, blocked_id, at_us) VALUES (?1, ?2, ?3) "
                                       "ON CONFLICT (account_id, blocked_id) DO NOTHING");
        direct_.unblock = statement(db_, "DELETE FROM account_blocks WHERE account_id = ?1 AND blocked_id = ?2");
    }
    static std::size_t index(token_kind k) noexcept { return k == token_kind::device ? 0 : 1; }

    static chat_log_entry read_entry(const statement& st) {
        chat_log_entry e;
        e.room_id = static_cast<std::uint64_t>(st.column_i64(0));
        e.seq = static_cast<std::uint64_t>(st.column_i64(1));
        e.sender_id = static_cast<std::uint64_t>(st.column_i64(2));
        e.sender_name = st.column_string(3);
        e.server_ts_us = st.column_i64(4);
        e.text = st.column_string(5);
        e.kind = static_cast<std::uint8_t>(st.column_i64(6));
        return e;
    }

    static std::string_view as_chars(const device_token_hash& h) noexcept {
        return {reinterpret_cast<const char*>(h.bytes.data()), h.bytes.size()};
    }

    void setup(const std::string& path) {
        if (::sqlite3_threadsafe() == 0) {
            throw std::runtime_error("this SQLite library was built without thread support; "
                                     "link a build with SQLITE_THREADSAFE=1 or 2");
        }
        ::sqlite3_extended_result_codes(db_, 1);
        ::sqlite3_busy_timeout(db_, sqlite_busy_timeout_ms);
        try {
            sqlite_enable_wal(db_);
            exec("PRAGMA synchronous=NORMAL");
            checkpoints_ = checkpointer::for_path(path);
            ::sqlite3_wal_hook(db_, &checkpointer::on_commit, checkpoints_.get());
        } catch (const storage_error& e) {
            throw std::runtime_error("cannot use SQLite database '" + path + "': " + e.what() +
                                     "; check that it is a SQLite database file and writable");
        }
        sqlite_migrate(db_, path);
        select_account_ = statement(db_, "SELECT id, password_hash FROM accounts WHERE name = ?1");
        // LEFT JOIN: a membership is listed unless its room is marked deleted (one whose room has no
        // rooms row is listed, as the one-room query did).
        rooms_of_ = statement(db_, "SELECT m.room_id, m.joined_at_us, m.last_read_seq FROM account_rooms m "
                                   "LEFT JOIN rooms r ON r.id = m.room_id WHERE m.account_id = ?1 "
                                   "AND r.deleted_at_us IS NULL ORDER BY m.joined_at_us, m.room_id");
        insert_account_ = statement(db_, "INSERT INTO accounts (name, password_hash, created_at_us) "
                                         "VALUES (?1, ?2, ?3) ON CONFLICT (name) DO NOTHING");
        // No conflict target: a stored (room_id, seq) and a stored idempotency key are both skipped.
        insert_log_ = statement(db_, "INSERT INTO chat_logs (room_id, seq, sender_id, sender_name, "
                                     "server_ts_us, text, kind, idem_key) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                                     "ON CONFLICT DO NOTHING");
        find_idem_ =
            statement(db_, "SELECT seq FROM chat_logs WHERE room_id = ?1 AND idem_key = ?2 AND idem_key <> ''");
        history_ = statement(db_, "SELECT room_id, seq, sender_id, sender_name, server_ts_us, text, kind "
                                  "FROM chat_logs WHERE room_id = ?1 ORDER BY seq DESC LIMIT ?2");
        count_logs_ = statement(db_, "SELECT COUNT(*) FROM chat_logs");
        max_room_ = statement(db_, "SELECT MAX(COALESCE((SELECT MAX(room_id) FROM chat_logs), 0), "
                                   "COALESCE((SELECT MAX(id) FROM rooms), 0))");
        insert_room_ = statement(db_, "INSERT INTO rooms (id, name, created_at_us) VALUES (?1, ?2, ?3) "
                                      "ON CONFLICT (id) DO NOTHING");
        delete_room_ = statement(db_, "UPDATE rooms SET deleted_at_us = ?2 WHERE id = ?1 AND deleted_at_us IS NULL");
        clear_members_ = statement(db_, "DELETE FROM account_rooms WHERE room_id = ?1");
        // A join of a room the account belongs to renews joined_at_us and keeps last_read_seq; a
        // new row's marker starts at the join's seq.
        set_member_ =
            statement(db_, "INSERT INTO account_rooms (account_id, room_id, joined_at_us, last_read_seq, role) "
                           "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (account_id, room_id) "
                           "DO UPDATE SET joined_at_us = excluded.joined_at_us");
        mark_read_ = statement(db_, "UPDATE account_rooms SET last_read_seq = ?3 "
                                    "WHERE account_id = ?1 AND room_id = ?2 AND last_read_seq < ?3");
        unset_member_ = statement(db_, "DELETE FROM account_rooms WHERE account_id = ?1 AND room_id = ?2");
        load_rooms_ = statement(db_, "SELECT r.id, r.name, COALESCE((SELECT MAX(c.seq) FROM chat_logs c "
                                     "WHERE c.room_id = r.id), 0), r.kind FROM rooms r WHERE r.deleted_at_us IS NULL "
                                     "ORDER BY r.id");
        load_members_ = statement(db_, "SELECT m.room_id, m.account_id, COALESCE(a.name, ''), m.role "
                                       "FROM account_rooms m JOIN rooms r ON r.id = m.room_id "
                                       "LEFT JOIN accounts a ON a.id = m.account_id "
                                       "WHERE r.deleted_at_us IS NULL ORDER BY m.room_id, m.account_id");
        prepare_moderation();
        history_before_ = statement(db_, "SELECT room_id, seq, sender_id, sender_name, server_ts_us, text, kind "
                                         "FROM chat_logs WHERE room_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3");
        history_after_ = statement(db_, "SELECT room_id, seq, sender_id, sender_name, server_ts_us, text, kind "
                                        "FROM chat_logs WHERE room_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3");
        log_range_ = statement(db_, "SELECT COALESCE(MIN(seq), 0), COALESCE(MAX(seq), 0) FROM chat_logs "
                                    "WHERE room_id = ?1");
        next_log_room_ = statement(db_, "SELECT room_id FROM chat_logs WHERE room_id > ?1 ORDER BY room_id LIMIT 1");
        old_prefix_ =
            statement(db_, "SELECT seq, server_ts_us FROM chat_logs WHERE room_id = ?1 ORDER BY seq LIMIT ?2");
        delete_logs_ = statement(db_, "DELETE FROM chat_logs WHERE room_id = ?1 AND seq <= ?2");
        version_ = statement(db_, "SELECT COALESCE(MAX(version), 0) FROM schema_version");
        // The same statements for each kind of token, each on its own table.
        for (std::size_t k = 0; k < 2; ++k) {
            const std::string table = k == 0 ? "device_tokens" : "resume_tokens";
            auto make = [&](const std::string& sql) { return statement(db_, sql.c_str()); };
            tokens_[k].find = make("SELECT t.account_id, a.name, t.created_at_us, t.expires_at_us FROM " + table +
                                   " t JOIN accounts a ON a.id = t.account_id WHERE t.token_hash = ?1");
            tokens_[k].remove = make("DELETE FROM " + table + " WHERE token_hash = ?1");
            tokens_[k].insert = make("INSERT INTO " + table +
                                     " (token_hash, account_id, created_at_us, "
                                     "expires_at_us) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (token_hash) DO NOTHING");
            tokens_[k].trim =
                make("DELETE FROM " + table +
                     " WHERE account_id = ?1 AND (expires_at_us <= ?2 "
                     "OR token_hash NOT IN (SELECT token_hash FROM " +
                     table + " WHERE account_id = ?1 ORDER BY created_at_us DESC, token_hash DESC LIMIT ?3))");
            tokens_[k].revoke = make("DELETE FROM " + table + " WHERE account_id = ?1");
        }
    }

    struct account_row {
        std::uint64_t id;
        std::string hash;
    };

    std::optional<account_row> select_account(std::string_view name) {
        reset_guard g{select_account_};
        select_account_.bind_text(1, name);
        if (!select_account_.step()) return std::nullopt;
        return account_row{static_cast<std::uint64_t>(select_account_.column_i64(0)), select_account_.column_string(1)};
    }

    // The rooms the account belongs to that are not deleted, oldest join first (ties by id).
    std::vector<account_room> rooms_of(std::uint64_t account_id) {
        std::vector<account_room> out;
        reset_guard g{rooms_of_};
        rooms_of_.bind(1, account_id);
        while (rooms_of_.step()) {
            out.push_back({static_cast<std::uint64_t>(rooms_of_.column_i64(0)), rooms_of_.column_i64(1),
                           static_cast<std::uint64_t>(rooms_of_.column_i64(2))});
        }
        return out;
    }

    // One room change, inside write_batch's transaction.
    void apply(const room_change& c) {
        auto run = [](statement& st, auto&&... binds) {
            reset_guard g{st};
            int i = 0;
            (bind_one(st, ++i, binds), ...);
            st.step();
        };
        switch (c.what) {
            case room_change::kind::created: run(insert_room_, c.room_id, std::string_view(c.name), c.at_us); break;
            case room_change::kind::deleted:
                run(delete_room_, c.room_id, c.at_us);
                run(clear_members_, c.room_id);
                break;
            case room_change::kind::joined:
                run(set_member_, c.account_id, c.room_id, c.at_us, c.seq, std::int64_t{c.role});
                break;
            case room_change::kind::left: run(unset_member_, c.account_id, c.room_id); break;
            case room_change::kind::read: run(mark_read_, c.account_id, c.room_id, c.seq); break;
            case room_change::kind::role: run(set_role_, c.account_id, c.room_id, std::int64_t{c.role}); break;
            case room_change::kind::sanction:
                run(set_sanction_, c.room_id, c.account_id, std::int64_t{c.sanction}, c.until_us, c.by, c.at_us);
                break;
            case room_change::kind::lift: run(lift_, c.room_id, c.account_id, std::int64_t{c.sanction}); break;
            case room_change::kind::erase: run(erase_, c.room_id, c.seq); break;
        }
    }

    static void bind_one(statement& st, int i, std::uint64_t v) { st.bind(i, v); }
    static void bind_one(statement& st, int i, std::int64_t v) { st.bind(i, v); }
    static void bind_one(statement& st, int i, std::string_view v) { st.bind_text(i, v); }

    void exec(const char* sql) { sqlite_exec(db_, sql); }

    void close() noexcept {
        // Statements first: close_v2 would otherwise defer the close until they are finalized.
        select_account_ = {};
        rooms_of_ = {};
        insert_account_ = {};
        insert_log_ = {};
        history_ = {};
        count_logs_ = {};
        max_room_ = {};
        version_ = {};
        insert_room_ = {};
        delete_room_ = {};
        clear_members_ = {};
        set_member_ = {};
        unset_member_ = {};
        mark_read_ = {};
        load_rooms_ = {};
        load_members_ = {};
        load_sanctions_ = {};
        load_blocks_ = {};
        set_role_ = {};
        set_sanction_ = {};
        lift_ = {};
        erase_ = {};
        direct_ = {};
        for (auto& t : tokens_) t = {};
        history_before_ = {};
        history_after_ = {};
        log_range_ = {};
        next_log_room_ = {};
        old_prefix_ = {};
        delete_logs_ = {};
        if (db_ != nullptr) ::sqlite3_close_v2(db_);
        db_ = nullptr;
        checkpoints_.reset();  // after the connection: its hook points at the checkpointer
    }

    sqlite3* db_ = nullptr;
    std::shared_ptr<checkpointer> checkpoints_;
    password_policy policy_;
    statement select_account_, insert_account_, insert_log_, find_idem_, history_, count_logs_, max_room_, version_;
    statement insert_room_, delete_room_, clear_members_, set_member_, unset_member_, load_rooms_, load_members_;
    statement rooms_of_, mark_read_;
    statement load_sanctions_, load_blocks_, set_role_, set_sanction_, lift_, erase_;
    direct_statements direct_;
    token_statements tokens_[2];  // by index(token_kind)
    statement history_before_, history_after_, log_range_, next_log_room_, old_prefix_, delete_logs_;
};

}  // namespace

std::unique_ptr<chat_store> open_sqlite_store(const std::string& path, const password_policy& policy) {
    return std::make_unique<sqlite_chat_store>(path, policy);
}

}  // namespace strix::chat::storage_detail
