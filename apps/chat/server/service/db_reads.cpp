#include "db_reads.hpp"

#include "chat_service.hpp"
#include "apps/chat/server/net/frames.hpp"

#include <strix/core/log.hpp>
#include "apps/chat/storage/db_pool.hpp"

namespace strix::chat {

using proto::error_code;
using proto::msg_type;

bool db_reads::submit(player& p, msg_type request, read_fn read) {
    sharded<chat_service>* services = &svc_.container();
    const unsigned shard_index = svc_.shard_id();
    const std::uint64_t sid = p.sess->id();
    p.pending = player::pending_op::history;
    const bool queued = ctx_.pool.try_submit([services, shard_index, sid, request,
                                              read = std::move(read)](chat_store& store) {
        read_answer answer;
        try {
            answer = read(store);
        } catch (const std::exception& e) {
            log_limited(log_level::warn, "{} failed: {}", proto::EnumNamemsg_type(request), e.what());
            answer = {{frames::error(request, error_code::internal_error, "the database is unavailable; retry later")},
                      read_outcome::failed};
        }
        services->invoke_on(shard_index, [sid, answer = std::move(answer)](chat_service& svc) mutable {
            svc.reads().done(sid, std::move(answer));
        });
    });
    if (!queued) {
        p.pending = player::pending_op::none;
        bump(counters_.server_busy);
        svc_.send_error(*p.sess, request, error_code::server_busy, "the database queue is full; retry later");
    }
    return queued;
}

void db_reads::done(std::uint64_t session_id, read_answer answer) {
    STRIX_ASSERT_OWNER(svc_.home(), "db_reads::done");
    player* p = svc_.find(session_id);
    if (!p) return;  // the session closed while the database read
    switch (answer.outcome) {
        case read_outcome::answered: break;
        case read_outcome::resumed: bump(counters_.resumes); break;
        case read_outcome::gap: bump(counters_.resume_gaps); break;
        case read_outcome::failed: bump(counters_.errors); break;
    }
    for (auto& f : answer.frames) svc_.send(*p->sess, std::move(f));
    svc_.complete(*p, player::pending_op::history);
}

}  // namespace strix::chat
