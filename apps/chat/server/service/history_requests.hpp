#pragma once
// history_requests: history_req, a page of the stored messages of the room the session is in.
// Checked here, read on a database worker (db_reads), answered with one history_res.
//
//   handle: member of that room? one cursor? ══> worker: history_page, one frame's worth
//           ══> history_res{messages ascending, more, oldest_seq, last_seq}
//
// One per chat_service (its shard); every function runs there.

#include "chat_counters.hpp"
#include "db_reads.hpp"
#include "player.hpp"

#include <span>

namespace strix::chat {

class chat_service;

class history_requests {
public:
    history_requests(chat_service& svc, chat_counters& counters, db_reads& reads) noexcept
        : svc_(svc), counters_(counters), reads_(reads) {}

    /// history_req (request_table.cpp). Later requests of the session wait for the answer.
    void handle(player& p, std::span<const std::byte> frame);

private:
    chat_service& svc_;
    chat_counters& counters_;
    db_reads& reads_;
};

}  // namespace strix::chat
