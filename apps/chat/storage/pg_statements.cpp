// The PostgreSQL back end's SQL: see pg_statements.hpp.

#include "apps/chat/storage/pg_statements.hpp"

namespace strix::chat::storage_detail {

namespace {

const prepared statements[] = {
    {"strix_select_account", "SELECT id, password_hash FROM accounts WHERE name = $1", {text_oid}},
    // LEFT JOIN: a membership is listed unless its room is marked deleted (one whose room has no
    // rooms row is listed, as the one-room query did).
    {"strix_rooms_of",
     "SELECT m.room_id, m.joined_at_us, m.last_read_seq FROM account_rooms m LEFT JOIN rooms r ON r.id = m.room_id "
     "WHERE m.account_id = $1 AND r.deleted_at_us IS NULL ORDER BY m.joined_at_us, m.room_id",
     {int8_oid}},
    {"strix_insert_account",
     "INSERT INTO accounts (name, password_hash, created_at_us) VALUES ($1, $2, $3) "
     "ON CONFLICT (name) DO NOTHING RETURNING id",
     {text_oid, text_oid, int8_oid}},
    {"strix_history",
     "SELECT room_id, seq, sender_id, sender_name, server_ts_us, text, kind::BIGINT FROM chat_logs "
     "WHERE room_id = $1 ORDER BY seq DESC LIMIT $2",
     {int8_oid, int8_oid}},
    {"strix_count_logs", "SELECT COUNT(*)::BIGINT FROM chat_logs", {}},
    {"strix_max_room",
     "SELECT GREATEST(COALESCE((SELECT MAX(room_id) FROM chat_logs), 0), "
     "COALESCE((SELECT MAX(id) FROM rooms), 0))::BIGINT",
     {}},
    {"strix_insert_room",
     "INSERT INTO rooms (id, name, created_at_us) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
     {int8_oid, text_oid, int8_oid}},
    {"strix_delete_room",
     "UPDATE rooms SET deleted_at_us = $2 WHERE id = $1 AND deleted_at_us IS NULL",
     {int8_oid, int8_oid}},
    {"strix_clear_members", "DELETE FROM account_rooms WHERE room_id = $1", {int8_oid}},
    {"strix_lock_room", "SELECT id FROM rooms WHERE id = $1 AND deleted_at_us IS NULL FOR UPDATE", {int8_oid}},
    {"strix_count_members", "SELECT COUNT(*)::BIGINT FROM account_rooms WHERE room_id = $1", {int8_oid}},
    // A join of a room the account belongs to renews joined_at_us and keeps last_read_seq; a new
    // row's marker starts at the join's seq.
    {"strix_set_member",
     "INSERT INTO account_rooms (account_id, room_id, joined_at_us, last_read_seq, role) VALUES ($1, $2, $3, $4, $5) "
     "ON CONFLICT (account_id, room_id) DO UPDATE SET joined_at_us = EXCLUDED.joined_at_us",
     {int8_oid, int8_oid, int8_oid, int8_oid, int8_oid}},
    {"strix_set_role",
     "UPDATE account_rooms SET role = $3 WHERE account_id = $1 AND room_id = $2",
     {int8_oid, int8_oid, int8_oid}},
    {"strix_set_sanction",
     "INSERT INTO room_sanctions (room_id, account_id, kind, until_us, by_account, at_us) "
     "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (room_id, account_id, kind) DO UPDATE SET "
     "until_us = EXCLUDED.until_us, by_account = EXCLUDED.by_account, at_us = EXCLUDED.at_us",
     {int8_oid, int8_oid, int8_oid, int8_oid, int8_oid, int8_oid}},
    {"strix_lift",
     "DELETE FROM room_sanctions WHERE room_id = $1 AND account_id = $2 AND kind = $3",
     {int8_oid, int8_oid, int8_oid}},
    {"strix_erase",
     "UPDATE chat_logs SET kind = 2, text = ''::BYTEA WHERE room_id = $1 AND seq = $2",
     {int8_oid, int8_oid}},
    {"strix_mark_read",
     "UPDATE account_rooms SET last_read_seq = $3 WHERE account_id = $1 AND room_id = $2 AND last_read_seq < $3",
     {int8_oid, int8_oid, int8_oid}},
    {"strix_unset_member", "DELETE FROM account_rooms WHERE account_id = $1 AND room_id = $2", {int8_oid, int8_oid}},
    {"strix_load_rooms",
     "SELECT r.id, r.name, COALESCE((SELECT MAX(c.seq) FROM chat_logs c WHERE c.room_id = r.id), 0)::BIGINT, "
     "r.kind::BIGINT FROM rooms r WHERE r.deleted_at_us IS NULL ORDER BY r.id",
     {}},
    {"strix_load_members",
     "SELECT m.room_id, m.account_id, COALESCE(a.name, ''), m.role::BIGINT FROM account_rooms m "
     "JOIN rooms r ON r.id = m.room_id LEFT JOIN accounts a ON a.id = m.account_id "
     "WHERE r.deleted_at_us IS NULL ORDER BY m.room_id, m.account_id",
     {}},
    {"strix_load_sanctions",
     "SELECT s.room_id, s.account_id, s.kind::BIGINT, s.until_us FROM room_sanctions s "
     "JOIN rooms r ON r.id = s.room_id WHERE r.deleted_at_us IS NULL AND (s.until_us = 0 OR s.until_us > $1) "
     "ORDER BY s.room_id, s.account_id, s.kind",
     {int8_oid}},
    // Each direct room's blocks, either way round: (room, blocker, blocked).
    {"strix_load_blocks",
     "SELECT d.room_id, d.low_id, d.high_id FROM direct_rooms d JOIN rooms r ON r.id = d.room_id "
     "JOIN account_blocks b ON b.account_id = d.low_id AND b.blocked_id = d.high_id WHERE r.deleted_at_us IS NULL "
     "UNION ALL SELECT d.room_id, d.high_id, d.low_id FROM direct_rooms d JOIN rooms r ON r.id = d.room_id "
     "JOIN account_blocks b ON b.account_id = d.high_id AND b.blocked_id = d.low_id WHERE r.deleted_at_us IS NULL "
     "ORDER BY 1, 2",
     {}},
    {"strix_load_room",
     "SELECT r.id, r.name, COALESCE((SELECT MAX(c.seq) FROM chat_logs c WHERE c.room_id = r.id), 0)::BIGINT, "
     "r.kind::BIGINT FROM rooms r WHERE r.id = $1 AND r.deleted_at_us IS NULL",
     {int8_oid}},
    {"strix_load_room_members",
     "SELECT m.room_id, m.account_id, COALESCE(a.name, ''), m.role::BIGINT FROM account_rooms m "
     "LEFT JOIN accounts a ON a.id = m.account_id WHERE m.room_id = $1 ORDER BY m.account_id",
     {int8_oid}},
    {"strix_load_room_sanctions",
     "SELECT room_id, account_id, kind::BIGINT, until_us FROM room_sanctions "
     "WHERE room_id = $1 AND (until_us = 0 OR until_us > $2) ORDER BY account_id, kind",
     {int8_oid, int8_oid}},
    {"strix_load_room_blocks",
     "SELECT d.room_id, d.low_id, d.high_id FROM direct_rooms d JOIN account_blocks b "
     "ON b.account_id = d.low_id AND b.blocked_id = d.high_id WHERE d.room_id = $1 "
     "UNION ALL SELECT d.room_id, d.high_id, d.low_id FROM direct_rooms d JOIN account_blocks b "
     "ON b.account_id = d.high_id AND b.blocked_id = d.low_id WHERE d.room_id = $1 ORDER BY 2",
     {int8_oid}},
    // open_direct and set_block (direct_steps).
    {"strix_find_pair",
     "SELECT d.room_id, (CASE WHEN r.id IS NOT NULL AND r.deleted_at_us IS NULL THEN 1 ELSE 0 END)::BIGINT "
     "FROM direct_rooms d LEFT JOIN rooms r ON r.id = d.room_id WHERE d.low_id = $1 AND d.high_id = $2",
     {int8_oid, int8_oid}},
    {"strix_claim_pair",
     "INSERT INTO direct_rooms (low_id, high_id, room_id) VALUES ($1, $2, $3) ON CONFLICT (low_id, high_id) "
     "DO NOTHING",
     {int8_oid, int8_oid, int8_oid}},
    {"strix_move_pair",
     "UPDATE direct_rooms SET room_id = $4 WHERE low_id = $1 AND high_id = $2 AND room_id = $3",
     {int8_oid, int8_oid, int8_oid, int8_oid}},
    {"strix_is_member", "SELECT 1 FROM account_rooms WHERE room_id = $1 AND account_id = $2", {int8_oid, int8_oid}},
    // As strix_rooms_of: memberships of deleted rooms do not count.
    {"strix_count_rooms",
     "SELECT COUNT(*)::BIGINT FROM account_rooms m LEFT JOIN rooms r ON r.id = m.room_id "
     "WHERE m.account_id = $1 AND r.deleted_at_us IS NULL",
     {int8_oid}},
    // No ON CONFLICT: a taken id is the caller's error, not a room to reuse.
    {"strix_create_direct_room",
     "INSERT INTO rooms (id, name, created_at_us, kind) VALUES ($1, '', $2, 1)",
     {int8_oid, int8_oid}},
    {"strix_add_member",
     "INSERT INTO account_rooms (account_id, room_id, joined_at_us, last_read_seq, role) VALUES ($1, $2, $3, 0, 0) "
     "ON CONFLICT (account_id, room_id) DO NOTHING",
     {int8_oid, int8_oid, int8_oid}},
    {"strix_blocks", "SELECT 1 FROM account_blocks WHERE account_id = $1 AND blocked_id = $2", {int8_oid, int8_oid}},
    {"strix_block",
     "INSERT INTO account_blocks (account_id, blocked_id, at_us) VALUES ($1, $2, $3) "
     "ON CONFLICT (account_id, blocked_id) DO NOTHING",
     {int8_oid, int8_oid, int8_oid}},
    {"strix_unblock", "DELETE FROM account_blocks WHERE account_id = $1 AND blocked_id = $2", {int8_oid, int8_oid}},
    {"strix_history_before",
     "SELECT room_id, seq, sender_id, sender_name, server_ts_us, text, kind::BIGINT FROM chat_logs "
     "WHERE room_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3",
     {int8_oid, int8_oid, int8_oid}},
    {"strix_history_after",
     "SELECT room_id, seq, sender_id, sender_name, server_ts_us, text, kind::BIGINT FROM chat_logs "
     "WHERE room_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
     {int8_oid, int8_oid, int8_oid}},
    {"strix_log_range",
     "SELECT COALESCE(MIN(seq), 0)::BIGINT, COALESCE(MAX(seq), 0)::BIGINT FROM chat_logs WHERE room_id = $1",
     {int8_oid}},
    {"strix_find_idem",
     "SELECT seq FROM chat_logs WHERE room_id = $1 AND idem_key = $2 AND idem_key <> ''",
     {int8_oid, text_oid}},
    {"strix_next_log_room", "SELECT MIN(room_id)::BIGINT FROM chat_logs WHERE room_id > $1", {int8_oid}},
    {"strix_old_prefix",
     "SELECT seq, server_ts_us FROM chat_logs WHERE room_id = $1 ORDER BY seq LIMIT $2",
     {int8_oid, int8_oid}},
    {"strix_delete_logs", "DELETE FROM chat_logs WHERE room_id = $1 AND seq <= $2", {int8_oid, int8_oid}},
    {"strix_schema_version", "SELECT COALESCE(MAX(version), 0)::BIGINT FROM schema_version", {}},
    // Tokens: the same statements for each kind, each on its own table (tokens_sql below).
#define STRIX_TOKEN_STATEMENTS(kind, table)                                                                      \
    {"strix_find_" kind,                                                                                         \
     "SELECT t.account_id, a.name, t.created_at_us, t.expires_at_us FROM " table                                 \
     " t JOIN accounts a ON a.id = t.account_id WHERE t.token_hash = $1",                                        \
     {bytea_oid}},                                                                                               \
        {"strix_delete_" kind, "DELETE FROM " table " WHERE token_hash = $1", {bytea_oid}},                      \
        {"strix_insert_" kind,                                                                                   \
         "INSERT INTO " table " (token_hash, account_id, created_at_us, expires_at_us) VALUES ($1, $2, $3, $4) " \
         "ON CONFLICT (token_hash) DO NOTHING",                                                                  \
         {bytea_oid, int8_oid, int8_oid, int8_oid}},                                                             \
        {"strix_trim_" kind,                                                                                     \
         "DELETE FROM " table " WHERE account_id = $1 AND (expires_at_us <= $2 OR token_hash NOT IN "            \
         "(SELECT token_hash FROM " table " WHERE account_id = $1 ORDER BY created_at_us DESC, token_hash DESC " \
         "LIMIT $3))",                                                                                           \
         {int8_oid, int8_oid, int8_oid}},                                                                        \
    {                                                                                                            \
        "strix_revoke_" kind, "DELETE FROM " table " WHERE account_id = $1", { int8_oid }                        \
    }
    STRIX_TOKEN_STATEMENTS("token", "device_tokens"),
    STRIX_TOKEN_STATEMENTS("resume_token", "resume_tokens"),
#undef STRIX_TOKEN_STATEMENTS
};

}  // namespace

std::span<const prepared> pg_statements() noexcept { return statements; }

std::string insert_logs_sql(std::size_t rows) {
    std::string sql =
        "INSERT INTO chat_logs (room_id, seq, sender_id, sender_name, server_ts_us, text, kind, idem_key) VALUES ";
    sql.reserve(sql.size() + rows * 52 + 48);
    for (std::size_t r = 0; r < rows; ++r) {
        const std::size_t b = r * 8;
        if (r) sql += ',';
        sql += '(';
        for (std::size_t c = 1; c <= 8; ++c) {
            if (c > 1) sql += ',';
            sql += '$';
            sql += std::to_string(b + c);
        }
        sql += ')';
    }
    // No conflict target: a stored (room_id, seq) and a stored idempotency key are both skipped.
    sql += " ON CONFLICT DO NOTHING";
    return sql;
}

}  // namespace strix::chat::storage_detail
