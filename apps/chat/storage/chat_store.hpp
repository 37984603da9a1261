#pragma once
// chat_store: accounts and chat logs in a real database, behind one BLOCKING interface with two
// back ends (SQLite, the default, and PostgreSQL for production).
//
//   shard thread ──try_submit──> db_pool worker ──> chat_store (one connection per worker)
//   shard thread ──try_enqueue─> chat_log_writer thread ──> chat_store::write_batch
//
// Every call may wait on disk, the network or a lock held by another connection, so a chat_store
// is used ONLY from database worker threads (db_pool, chat_log_writer), never from a shard thread.
// One object is one connection and is not thread-safe: each worker opens its own.
//
// Schema (the same on both back ends, applied by ordered migrations when a store is opened):
//   schema_version(version PK, applied_at_us)
//   accounts(id PK auto, name UNIQUE, password_hash, created_at_us)
//   chat_logs(room_id, seq, sender_id, sender_name, server_ts_us, text, PRIMARY KEY(room_id, seq))
//   rooms(id PK, name, created_at_us, deleted_at_us NULL)      a deleted room keeps its row, so
//                                                              its id is never handed out again
//   account_rooms(account_id, room_id, joined_at_us,            the rooms each account belongs
//                 last_read_seq, PK(account_id, room_id))       to, and how far it has read each
//   account_rooms.role                                          0 member, 1 admin, 2 owner (migration 7)
//   rooms.kind                                                  0 group, 1 direct (migration 7)
//   direct_rooms(low_id, high_id, room_id UNIQUE,                the direct room of two accounts
//                PK(low_id, high_id))                            (low_id < high_id)
//   room_sanctions(room_id, account_id, kind, until_us,         bans (kind 1) and mutes (kind 2);
//                  by_account, at_us, PK(room_id, account_id,    until_us 0: no expiry
//                  kind))
//   account_blocks(account_id, blocked_id, at_us,               account_id takes no direct
//                  PK(account_id, blocked_id))                   messages from blocked_id
//   chat_logs.kind                                              0 text, 1 notice, 2 deleted
//                                                               (a tombstone: text emptied)
//   device_tokens(token_hash PK, account_id, created_at_us,     a login's device token, by its
//                 expires_at_us)                                BLAKE2b hash (device_token.hpp)
//   resume_tokens(the same columns)                             a login's resume token (replaces
//                                                               the password at a reconnect)
// 64-bit unsigned ids are stored bit-for-bit in signed 64-bit columns; chat text is stored as
// bytes (BLOB / BYTEA), so text that is not valid UTF-8 can never wedge the log writer.
//
// Errors: expected outcomes are values (login_outcome). A failing database (connection lost, disk
// full, I/O error) throws storage_error; the store stays usable and reconnects on the next call.

#include "apps/chat/storage/device_token.hpp"
#include "apps/chat/storage/password.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
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
    password_account,  // login_external of a name that is a password account
};

/// What an account made by login_external holds where a password hash would be: no password
/// verifies against it (it is not an argon2id string), so the account logs in only by JWT.
inline constexpr std::string_view external_account_hash = "!external";

/// The two kinds of login token (docs/protocol.md): a device token only exempts its holder from
/// the name's lockout; a resume token replaces the password. Same shape, separate tables.
enum class token_kind : std::uint8_t { device, resume };

/// A room an account belongs to (a row of account_rooms), as a login reads it.
struct account_room {
    std::uint64_t room_id = 0;
    std::int64_t joined_at_us = 0;    // its latest join (a join of a room it belongs to renews it)
    std::uint64_t last_read_seq = 0;  // the highest seq it marked read there (room_change::read)

    friend bool operator==(const account_room&, const account_room&) = default;
};

struct login_result {
    login_outcome outcome = login_outcome::unknown_account;
    account acct;              // valid for ok and created; id 0 otherwise
    std::uint64_t room_id = 0; // ok: the room it joined last (the newest joined_at_us), 0 for none
    std::vector<account_room> rooms;  // ok: every room it belongs to (not deleted), oldest join first
};

struct chat_log_entry {
    std::uint64_t room_id = 0;
    std::uint64_t seq = 0;
    std::uint64_t sender_id = 0;
    std::string sender_name;
    std::int64_t server_ts_us = 0;  // wall clock, microseconds since the Unix epoch
    std::string text;               // raw bytes, stored as-is (a notice: its encoded action)
    std::uint8_t kind = 0;          // 0 text, 1 notice, 2 deleted (proto::msg_kind)
    std::string idem_key;           // the server API's idempotency key ("" for none); written, not read back

    friend bool operator==(const chat_log_entry&, const chat_log_entry&) = default;
};

/// A change to the rooms or to who belongs where. The chat log writer commits these in the same
/// transactions as the chat logs, in the order they were queued, so the database sees a room
/// before its messages and an account's joins and leaves in the order the room decided them.
struct room_change {
    enum class kind : std::uint8_t {
        created,  // room `room_id` called `name` exists
        deleted,  // room `room_id` is gone (its row and chat logs stay; nobody belongs to it)
        joined,   // account `account_id` belongs to room `room_id` (too: its other rooms stay);
                  // joined_at_us = at_us, a new row's last_read_seq = seq (kept when it was in)
        left,     // account `account_id` no longer belongs to room `room_id` (no-op if it did not)
        read,     // account `account_id` read room `room_id` up to `seq`: last_read_seq rises to
                  // it (never falls; no-op if it does not belong there)
        role,     // account `account_id`'s role in room `room_id` becomes `role` (no-op if it
                  // does not belong there)
        sanction, // account `account_id` is banned (`sanction` 1) or muted (2) in room `room_id`
                  // until `until_us` (0: no expiry), by account `by`, at `at_us`; replaces
                  // the same kind's earlier row. A ban does not end the membership: a `left`
                  // queued with it does
        lift,     // the `sanction` kind's row of (room_id, account_id) is gone (no-op if none)
        erase,    // message `seq` of room `room_id` becomes a tombstone: kind 2, text empty
                  // (no-op if it is not stored)
    };
    kind what = kind::created;
    std::uint64_t room_id = 0;
    std::uint64_t account_id = 0;  // joined, left, read, role, sanction, lift
    std::string name;              // created
    std::int64_t at_us = 0;        // wall clock, microseconds since the Unix epoch
    std::uint64_t seq = 0;         // read; joined: a new row's read marker (the join point); erase
    std::uint8_t role = 0;         // joined (a new row's; kept when it was in) and role
    std::uint8_t sanction = 0;     // sanction, lift: 1 ban, 2 mute
    std::int64_t until_us = 0;     // sanction
    std::uint64_t by = 0;          // sanction: the moderator's account

    friend bool operator==(const room_change&, const room_change&) = default;
};

/// A ban or a mute in force (room_sanctions).
struct room_sanction {
    std::uint64_t account_id = 0;
    std::uint8_t kind = 0;       // 1 ban, 2 mute
    std::int64_t until_us = 0;   // 0: no expiry

    friend bool operator==(const room_sanction&, const room_sanction&) = default;
};

/// A room as the database keeps it, for the server to load at start-up.
struct stored_room {
    std::uint64_t id = 0;
    std::string name;
    std::uint64_t last_seq = 0;                // the highest seq in its chat log, 0 when none
    std::vector<std::uint64_t> members;        // accounts that belong to it, ascending
    std::vector<std::string> member_names;     // their names, in the same order
    std::vector<std::uint8_t> member_roles;    // their roles (0 member, 1 admin, 2 owner), same order
    std::uint8_t kind = 0;                     // 0 group, 1 direct
    std::vector<room_sanction> sanctions;      // those not expired at the read, by account then kind
    // A direct room: which of its two members blocks the other (account_blocks rows between
    // them), as (blocker, blocked) pairs.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> blocks;

    friend bool operator==(const stored_room&, const stored_room&) = default;
};

/// The stored messages of one room: seqs oldest..newest, all present (retention deletes a
/// prefix, never a hole). Both 0 when the room has none.
struct log_range {
    std::uint64_t oldest = 0;
    std::uint64_t newest = 0;

    friend bool operator==(const log_range&, const log_range&) = default;
};

/// Which messages history_page reads: before_seq > 0, the newest `limit` below it; after_seq >
/// 0, the oldest `limit` above it; neither, the newest `limit` (both: before_seq wins).
struct history_query {
    std::uint64_t room_id = 0;
    std::uint64_t before_seq = 0;
    std::uint64_t after_seq = 0;
    std::size_t limit = 50;
};

/// A stored device token and the account it belongs to.
struct device_token_record {
    std::uint64_t account_id = 0;
    std::string account_name;
    std::int64_t created_at_us = 0;  // wall clock, microseconds since the Unix epoch
    std::int64_t expires_at_us = 0;  // ditto; the token is void from then on
    std::uint64_t room_id = 0;       // the room it joined last (as login_result), 0 for none
    std::vector<account_room> rooms;  // every room it belongs to, as login_result
};

/// What store_device_token does besides storing the new token, in the same transaction.
struct device_token_change {
    std::uint64_t account_id = 0;
    device_token_hash hash;                  // the new token's
    std::int64_t now_us = 0;                 // created_at_us; tokens expired by then are deleted
    std::int64_t expires_at_us = 0;
    std::optional<device_token_hash> replaces;  // the token the login presented: deleted (rotation)
    std::size_t keep = 16;                   // the account keeps at most this many, the newest
    token_kind kind = token_kind::device;    // which table
};

/// What open_direct found or made.
struct direct_result {
    enum class status : std::uint8_t {
        ok,               // room_id is the pair's direct room; both accounts belong to it
        unknown_account,  // no account is called that
        self,             // the name is the sender's own
        blocked,          // the peer blocks the sender
        room_limit,       // the sender (or the peer) would pass max_rooms
    };
    status outcome = status::unknown_account;
    std::uint64_t room_id = 0;     // ok only (0 otherwise)
    bool created = false;          // the room was created by this call (with new_room_id)
    bool joined_peer = false;      // the peer's membership was added by this call
    account peer;                  // ok, blocked, room_limit
    bool peer_at_limit = false;    // room_limit: it is the peer's
};

/// What set_block found.
struct block_result {
    bool found = false;            // an account is called that
    account peer;
    std::uint64_t direct_room = 0; // the two accounts' direct room, 0 when none (or deleted)
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

    /// The account of an identity the application vouched for (a verified JWT's `sub`): found,
    /// or created (outcome created) without a password. A name that is a password account is
    /// password_account: a token never takes over an account someone registered with a password.
    /// Worker thread; throws storage_error.
    virtual login_result login_external(std::string_view name) = 0;

    /// login_external for each of `names`, in ONE transaction where the store has them (SQLite,
    /// PostgreSQL): results in the order of `names`; a name twice is created once and then found.
    /// Throws storage_error when the batch fails, and then nothing of it is stored. This
    /// default calls login_external for each. Worker thread.
    virtual std::vector<login_result> login_external_batch(std::span<const std::string> names);

    /// Applies `changes` in order, then inserts `logs`, all in ONE transaction (everything or
    /// nothing). Every step is idempotent: a (room_id, seq) that is already stored is skipped, a
    /// room created twice keeps its first row, so retrying a batch whose commit outcome was
    /// unknown is safe. Returns the number of chat log rows actually inserted (less than
    /// logs.size() means duplicates: the caller should report them). Worker thread; throws
    /// storage_error (nothing changed).
    virtual std::size_t write_batch(std::span<const room_change> changes, std::span<const chat_log_entry> logs) = 0;

    /// write_batch without room changes.
    std::size_t append_chat_logs(std::span<const chat_log_entry> entries) { return write_batch({}, entries); }

    /// Every room that is not deleted, ascending by id, with the last seq of its chat log and the
    /// accounts that belong to it. Worker thread (the server calls it once, before it starts
    /// serving); throws storage_error.
    virtual std::vector<stored_room> load_rooms() = 0;

    /// Room `id` as load_rooms() gives it, or nothing when it does not exist or is deleted (one
    /// room's rows: cluster mode loads a room when a session joins it). PostgreSQL reads that
    /// room only; the default picks it from load_rooms(). Worker thread; throws storage_error.
    virtual std::optional<stored_room> load_room(std::uint64_t id);

    /// The newest `limit` entries of `room_id`, in ascending seq order (newest last).
    /// Worker thread; throws storage_error.
    virtual std::vector<chat_log_entry> room_history(std::uint64_t room_id, std::size_t limit) = 0;

    /// The messages `q` names, ascending by seq. Worker thread; throws storage_error.
    virtual std::vector<chat_log_entry> history_page(const history_query& q) = 0;

    /// The oldest and newest stored seq of a room. Worker thread; throws storage_error.
    virtual log_range room_log_range(std::uint64_t room_id) = 0;

    /// The seq of the message of `room_id` stored with idempotency key `key` (the server API's
    /// POST .../messages), if any. Worker thread; throws storage_error.
    virtual std::optional<std::uint64_t> find_idempotent(std::uint64_t room_id, std::string_view key) = 0;

    /// Up to `limit` room ids above `after` that have chat log rows, ascending (one index seek
    /// each: retention walks the rooms with it). Worker thread; throws storage_error.
    virtual std::vector<std::uint64_t> log_rooms_after(std::uint64_t after, std::size_t limit) = 0;

    /// Retention for one room: deletes the room's oldest messages, at most `max_rows`, among
    /// those beyond the newest `keep_last` (0: no count limit) or older than `older_than_us`
    /// (server_ts_us below it; 0: no age limit). Only a prefix goes (the oldest seqs, in one
    /// DELETE statement), so what stays is contiguous. Returns the rows deleted; call again
    /// while it returns max_rows. Worker thread; throws storage_error.
    std::size_t trim_room_logs(std::uint64_t room_id, std::uint64_t keep_last, std::int64_t older_than_us,
                               std::size_t max_rows);

    /// Number of stored chat log rows (a full count: for tests, reports and start-up, not per
    /// request). Worker thread; throws storage_error.
    virtual std::uint64_t count_chat_logs() = 0;

    /// The largest room id the database knows, in a chat log or in the rooms table (deleted
    /// rooms included), 0 when none (ids are compared as signed 64-bit, so room ids must stay
    /// below 2^63). The server starts its room counters above it, so a new room never reuses an
    /// id: neither its (room_id, seq) keys nor a client holding an old id could mix two rooms.
    /// Worker thread; throws storage_error.
    virtual std::uint64_t max_room_id() = 0;

    /// Deletes room `room_id` (as room_change::kind::deleted does) if no account belongs to it,
    /// deciding under a lock on the room's row in one transaction, so the count it decides on
    /// is the committed one (cluster mode: a node's view of the members may be stale). True
    /// when this call deleted it. Worker thread; throws storage_error.
    virtual bool delete_room_if_empty(std::uint64_t room_id, std::int64_t now_us) = 0;

    /// The direct room of account `from` and the account called `to_name`, in ONE transaction:
    /// refused when the peer blocks `from`; found (a member who left it belongs again) or
    /// created as room `new_room_id` (rooms row of kind 1 with an empty name, direct_rooms row,
    /// both memberships with role 0 and last_read_seq 0, joined_at_us = now_us). A pair whose
    /// room was deleted gets room `new_room_id` the same way. An account that would join it
    /// (one not already a member) while it belongs to `max_rooms` rooms or more (not deleted) is
    /// room_limit, the sender checked first. Any outcome but ok changes nothing. Two callers
    /// racing for one pair get the same room (one of them created). Worker thread; throws
    /// storage_error (nothing changed).
    virtual direct_result open_direct(std::uint64_t from, std::string_view to_name, std::uint64_t new_room_id,
                                      std::int64_t now_us, std::size_t max_rooms) = 0;

    /// Stores (blocked) or deletes account `account_id`'s block of the account called `name`;
    /// idempotent (a repeated block keeps the first at_us). An unknown name changes nothing
    /// (found false). Worker thread; throws storage_error.
    virtual block_result set_block(std::uint64_t account_id, std::string_view name, bool blocked,
                                   std::int64_t now_us) = 0;

    /// The account called `name`, if any. Worker thread; throws storage_error.
    virtual std::optional<account> find_account(std::string_view name) = 0;

    /// The schema version recorded in the database. Worker thread; throws storage_error.
    virtual std::uint32_t schema_version() = 0;

    /// The token of `kind` stored under `hash`, with its account's name and room (expired ones
    /// too: the caller compares expires_at_us with its clock). Worker thread; throws storage_error.
    virtual std::optional<device_token_record> find_device_token(const device_token_hash& hash,
                                                                 token_kind kind = token_kind::device) = 0;

    /// In ONE transaction: deletes c.replaces (if any), stores c.hash for c.account_id, then
    /// deletes the account's tokens that expired by c.now_us and all but its c.keep newest.
    /// Storing a hash that is already stored changes nothing (so a retry is safe). Worker
    /// thread; throws storage_error (nothing changed).
    virtual void store_device_token(const device_token_change& c) = 0;

    /// Deletes every token of `kind` of `account_id` (log out everywhere, or after a password
    /// change); returns how many there were. Worker thread; throws storage_error.
    virtual std::size_t revoke_device_tokens(std::uint64_t account_id, token_kind kind = token_kind::device) = 0;

protected:
    // trim_room_logs' two steps. The highest seq s such that the room's messages up to s, at
    // most the oldest `max_rows`, all have server_ts_us below `older_than_us` (0: none).
    virtual std::uint64_t old_prefix_end(std::uint64_t room_id, std::int64_t older_than_us, std::size_t max_rows) = 0;
    // Deletes the room's messages with seq <= `seq`; returns how many.
    virtual std::size_t delete_logs_through(std::uint64_t room_id, std::uint64_t seq) = 0;
};

/// Opens one connection and brings the schema up to date (idempotent; concurrent openers
/// serialize on a database lock). `url` is "sqlite:PATH" (the file is created if missing; its
/// directory must exist) or "postgresql://..." / "postgres://..." (a libpq URI; the database
/// must exist; connect_timeout defaults to 10 s unless the URL sets it). Throws std::runtime_error with one sentence
/// naming the cause and the fix (bad URL, missing directory, cannot connect, failed migration). Any non-shard thread;
/// the store may then be handed to the one thread that will use it.
std::unique_ptr<chat_store> open_chat_store(const std::string& url, const password_policy& policy);

/// `url` with any password replaced by "***", for log lines and error messages. Any thread.
std::string redact_url(std::string_view url);

}  // namespace strix::chat
