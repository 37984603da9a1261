#pragma once
// resume_requests: resume_req, the messages a session missed while it was away: those after the
// last seq it has up to its join point (player::joined_seq; every later message reaches it
// live). The answer is the whole range or a gap, never part of it (docs/protocol.md, "Resume").
//
//   handle: member of that room? ─ nothing missed: resume_res at once
//                                ─ more than --resume-max: gap at once
//                                ══> worker (db_reads): the range's rows ─ whole: resume_res...
//                                                                       ─ not whole: gap
//
// Members may have been given messages the database does not hold yet: with --ack early the
// writer's queue has them; in cluster mode the members of other nodes get a message as soon as
// Redis publishes it, before its node's commit, and a node killed between the two never commits
// it. So rows that are not the whole range go to the room sequencer, which completes them from
// where it has them (room_sequencer::complete_resume: the local one flushes the writer and reads
// again; the cluster one takes them from the room's Redis stream, exactly as published, and
// queues each for the database, insert-if-absent, so that what one client was given, history
// keeps):
//
//   resume_req ══> worker: rows of (last_seq, joined_seq] ──> whole: resume_res (encoded there)
//                                                        └──> not whole: the sequencer completes
//                                                             them ──> resume_res / gap
//
// One per chat_service (its shard); every function runs there.

#include "chat_context.hpp"
#include "chat_counters.hpp"
#include "db_reads.hpp"
#include "player.hpp"
#include "apps/chat/server/rooms/room_host.hpp"

#include "apps/chat/storage/chat_store.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace strix::chat {

class chat_service;

class resume_requests {
public:
    resume_requests(chat_service& svc, chat_context& ctx, chat_counters& counters, room_host& host,
                    db_reads& reads) noexcept
        : svc_(svc), ctx_(ctx), counters_(counters), host_(host), reads_(reads) {}

    /// resume_req (request_table.cpp). Later requests of the session wait for the answer.
    void handle(player& p, std::span<const std::byte> frame);

private:
    // The range's rows, read on a worker; answered there when they are all of it.
    void resume_read(player& p, std::uint64_t room, std::uint64_t from, std::uint64_t to);
    // Back on the shard with rows that are not all of it: the sequencer completes them.
    void resume_stored(std::uint64_t session_id, std::uint64_t room, std::uint64_t from, std::uint64_t to,
                       stored_range rows);
    void resume_merged(std::uint64_t session_id, std::uint64_t room, std::uint64_t from, std::uint64_t to,
                       stored_range rows);

    chat_service& svc_;
    chat_context& ctx_;
    chat_counters& counters_;
    room_host& host_;
    db_reads& reads_;
};

}  // namespace strix::chat
