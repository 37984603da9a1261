#pragma once
// db_reads: a request answered from the chat log on a database worker, never on the shard
// (history_req, resume_req). The worker runs the read, which encodes the answer's frames; they
// come back to the session's shard and go out in order, then the session's later requests run
// (they wait meanwhile, so replies keep the order of the requests).
//
//   submit(p, read) ══> worker: read(store) -> frames (a database error: error_res)
//                   ══> done: count the outcome, send the frames, complete(p, history)
//
// One per chat_service (its shard); every function runs there.

#include "chat_context.hpp"
#include "chat_counters.hpp"
#include "player.hpp"

#include <strix/core/shared_buffer.hpp>
#include <strix/proto/chat_generated.h>
#include "apps/chat/storage/chat_store.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace strix::chat {

class chat_service;

/// What a read answered, for the counters.
enum class read_outcome : std::uint8_t {
    answered,  // a history_res
    resumed,   // a complete resume_res (strix_resumes_total)
    gap,       // a resume_res gap (strix_resume_gaps_total)
    failed,    // the database failed: an error_res (strix_errors_total)
};

struct read_answer {
    std::vector<shared_buffer_ptr> frames;
    read_outcome outcome = read_outcome::answered;
};

class db_reads {
public:
    /// The read, on a database worker: the frames to send. An exception is answered
    /// internal_error.
    using read_fn = std::function<read_answer(chat_store&)>;

    db_reads(chat_service& svc, chat_context& ctx, chat_counters& counters) noexcept
        : svc_(svc), ctx_(ctx), counters_(counters) {}

    /// Queues `read` for p's `request` on a database worker; p's later requests wait for its
    /// answer. False (answered server_busy) when the database queue is full.
    bool submit(player& p, proto::msg_type request, read_fn read);
    /// The answer of session_id's read, on this shard: counted, sent, and the session's waiting
    /// requests run. Nothing when the session closed meanwhile.
    void done(std::uint64_t session_id, read_answer answer);

private:
    chat_service& svc_;
    chat_context& ctx_;
    chat_counters& counters_;
};

}  // namespace strix::chat
