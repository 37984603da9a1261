#pragma once
// room_sequencer: how a room's messages get their seqs, are stored and reach the members, and
// what depends on where rooms live. The room host (room_host.hpp) keeps rooms, members and
// fan-out and asks its sequencer at the points where one node and a cluster differ; which one a
// shard gets is decided once, at start (make_room_sequencer), the way a shard picks its poller,
// and nothing above asks which one runs.
//
//   local_sequencer    one node: the owner shard numbers a room's messages (room::take_seq), the
//                      chat log writer stores them, and their events wait for the commit
//                      (commit_order); every room lives on this server.
//   cluster_sequencer  --cluster: Redis numbers them (FCALL chat_publish) and publishes them;
//                      every node's room_feed delivers them in seq order, gaps filled from the
//                      database; presence across nodes; rooms live in the shared database
//                      (docs/architecture.md, "The room service in cluster mode").
//
// Every function runs on the owner shard of the room host the sequencer belongs to.

#include "member.hpp"
#include "room_id.hpp"
#include "apps/chat/cluster/presence_backplane.hpp"
#include "apps/chat/storage/chat_store.hpp"

#include <strix/core/shared_buffer.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strix::chat {

class room;
class room_host;
struct chat_context;
struct chat_counters;

/// What a sequencer did with a message that has a chat_request::taken (the server API's posts
/// and the application's moderation notices, whose sender has no session).
struct post_taken {
    std::uint64_t seq = 0;     // 0: not taken (`why` says why)
    std::uint64_t ticket = 0;  // its database write: stored once commit_order passes it
    bool repeated = false;     // cluster mode: Redis knew its idempotency key; seq is that message's
    bool gone = false;         // not taken because the room is not held here any more
    const char* why = nullptr;
};

/// A chat message on its way to the room's owner.
struct chat_request {
    room_id room;
    member sender;
    std::string text;
    std::uint64_t client_ts = 0;
    std::uint64_t client_seq = 0;
    std::uint8_t kind = 0;  // proto::msg_kind: text, or a moderator's notice (text: notice.hpp's form)
    std::string idem_key;   // a server API post's idempotency key, stored with the message ("": none)
    // Set for a message without a session behind it: told what became of it (instead of an
    // error to the sender's session), on the owner shard, once.
    std::function<void(const post_taken&)> taken;
};

/// Microseconds since the Unix epoch: the server's stamp on a message or a membership change.
/// Any thread.
std::int64_t wall_clock_us() noexcept;

/// The chat log record of `req` as message `seq` of `room`, stamped `ts`; the sender's name and
/// the text move out of req (encode what needs them first). Any thread.
chat_log_entry to_log_entry(room_id room, std::uint64_t seq, chat_request& req, std::int64_t ts);

/// A resume's rows of (from, to], as the database had them.
struct stored_range {
    history_query query;               // what was read (a sequencer may read it again)
    std::vector<chat_log_entry> logs;  // ascending
    std::uint64_t oldest = 0;          // the room's oldest stored seq
    bool ok = false;                   // false: the database failed
};

class room_sequencer {
public:
    virtual ~room_sequencer() = default;
    room_sequencer(const room_sequencer&) = delete;
    room_sequencer& operator=(const room_sequencer&) = delete;

    /// A fresh room id owned by this shard (in a cluster, made by this node). Owner shard.
    room_id allocate_id() noexcept { return ids_.next(); }

    // --- messages ---------------------------------------------------------------------------

    /// Numbers r's chat message (its sender is a member), has it stored and sends it to the
    /// members, the sender's copy being its acknowledgement; server_busy back to the sender when
    /// it cannot be taken. The one call per message. Owner shard.
    virtual void chat(room& r, chat_request& req) = 0;

    // --- rooms and members ------------------------------------------------------------------

    /// The server API acts on room `id`: `then` gets the room held here (nullptr: none; with
    /// `failed`, the database did not answer). In cluster mode a room without sessions here is
    /// read from the database first. Owner shard.
    virtual void fetch(room_id id, std::function<void(room*, bool failed)> then) = 0;

    /// A join found no room `id` on this shard: true when the sequencer looks for it elsewhere
    /// (it takes m, and joins it again with after_load once it looked); false: no such room.
    virtual bool load(room_id id, member& m, bool rejoin) = 0;
    /// Before m joins r: true when the join must wait (it takes m and joins it again, with
    /// after_load, when it may go on). Owner shard.
    virtual bool defer_join(const room& r, member& m, bool rejoin) = 0;
    /// The join point of a session joining r now: the last seq it was not sent live. Owner shard.
    virtual std::uint64_t join_point(const room& r) const = 0;
    /// join_room_res for a session joining r at `join_seq`: the members, online or not (in a
    /// cluster, online on any node). Owner shard.
    virtual shared_buffer_ptr join_room_res(const room& r, std::uint64_t join_seq) const = 0;
    /// Whether the account has a session in room `id` on another node. Owner shard.
    virtual bool online_elsewhere(room_id id, std::uint64_t account) const = 0;
    /// r got its first session on this server / lost its last one. Owner shard.
    virtual void watch(const room& r) = 0;
    virtual void unwatch(const room& r) = 0;
    /// A member of r changed through a session of this server: the other nodes hear of it.
    /// Owner shard.
    virtual void announce(const room& r, presence_change what, std::uint64_t player_id, std::string_view name) = 0;
    /// An account left r on purpose at `now` (µs), its leave stored as write `ticket`: true when
    /// r is deleted now (its deletion then queued, and `ticket` that write's). Owner shard.
    virtual bool left(room& r, std::int64_t now, std::uint64_t& ticket) = 0;
    /// Whether a room stays held once no session here is in it (false: the host drops it, and
    /// the next join loads it again). Any thread.
    virtual bool holds_idle_rooms() const noexcept = 0;
    /// Whether a room held here knows every account that belongs to it (false in cluster mode:
    /// a member that joined through another node may be unknown here). Any thread.
    virtual bool knows_all_members() const noexcept { return holds_idle_rooms(); }

    // --- what other nodes hear without storage (cluster mode; nothing on one node) ----------

    /// A member of r typing, told to this node's members already. Owner shard.
    virtual void typed(const room&, std::uint64_t /*account*/, std::string_view /*name*/) {}
    /// An account's read marker in r rose to `seq` (stored), told to its sessions here. Owner.
    virtual void marked_read(const room&, std::uint64_t /*account*/, std::uint64_t /*seq*/) {}
    /// The accounts of direct room `info` belong to it now (its first message; `created`: the
    /// room is new): their sessions on the other nodes go in too. Owner shard.
    virtual void direct_opened(const stored_room& /*info*/, bool /*created*/) {}
    /// A block in direct room `id` changed (stored): the other nodes' copies of the room follow.
    virtual void block_changed(room_id, std::uint64_t /*blocker*/, std::uint64_t /*blocked*/, bool /*on*/) {}
    /// The server API closed account `a`'s sessions on this node: the other nodes close
    /// theirs. Any shard.
    virtual void disconnected(const account& /*a*/) {}
    /// The server API deleted room `id` (committed): the other nodes' sessions leave it. Owner.
    virtual void deleted_by_api(room_id) {}

    // --- reads that depend on where rooms live ----------------------------------------------

    /// The rooms list_rooms shows: the `limit` smallest ids, ascending, with member and online
    /// counts; `done` runs on this shard (nullopt: the database failed). False, `done` dropped,
    /// when the database queue is full. Owner shard.
    virtual bool list_rooms(std::size_t limit, std::function<void(std::optional<std::vector<room_summary>>)> done) = 0;
    /// A resume of (from, to] found `rows` (ok) not all of it: `done` gets them completed with
    /// what members were given that the database lacks, when this sequencer can find it. Runs
    /// `done` on this shard. Owner shard.
    virtual void complete_resume(std::uint64_t from, std::uint64_t to, stored_range rows,
                                 std::function<void(stored_range)> done) = 0;

    /// The shard is exiting: timers cancelled, connections closed; replies still in flight find
    /// the sequencer stopped. Owner shard.
    virtual void stop() = 0;

protected:
    explicit room_sequencer(room_id_source ids) noexcept : ids_(ids) {}

private:
    room_id_source ids_;
};

/// The sequencer for shard `self`'s room host, as the options say (--cluster: cluster, else
/// local). Built with the host, on any thread; used on shard `self`.
std::unique_ptr<room_sequencer> make_room_sequencer(room_host& host, chat_context& ctx, unsigned self,
                                                    chat_counters& counters);

}  // namespace strix::chat
