#include "history_requests.hpp"

#include "chat_service.hpp"
#include "apps/chat/server/net/frames.hpp"

#include <algorithm>

namespace strix::chat {
namespace {

using proto::error_code;
using proto::msg_type;

constexpr std::uint32_t default_history_limit = 50;
constexpr std::uint32_t max_history_limit = 200;

// One frame of `logs` (a page of limit + 1 rows at most: the extra one says there is more):
// when it does not fit, the part nearest the cursor.
read_answer history_page(const history_query& q, std::uint32_t limit, std::vector<chat_log_entry> logs,
                         const log_range& range) {
    const bool newest_first = q.after_seq == 0;  // before_seq or newest: the page ends at the newest
    bool more = logs.size() > limit;
    std::span<const chat_log_entry> page(logs);
    if (more) page = newest_first ? page.last(limit) : page.first(limit);
    if (!page.empty()) {
        if (newest_first) {
            std::size_t n = 0, bytes = 0;
            for (auto it = page.rbegin(); it != page.rend(); ++it) {
                bytes += frames::message_size(*it);
                if (n > 0 && bytes > frames::max_messages_bytes) break;
                ++n;
            }
            if (n < page.size()) more = true;
            page = page.last(n);
        } else {
            const std::size_t n = frames::messages_that_fit(page);
            if (n < page.size()) more = true;
            page = page.first(n);
        }
    }
    return {{frames::history_res(q.room_id, page, more, range.oldest, range.newest)}};
}

}  // namespace

void history_requests::handle(player& p, std::span<const std::byte> frame) {
    auto* req = svc_.decode<proto::history_req>(p, frame, msg_type::history_req, "malformed history_req");
    if (!req) return;
    session& s = *p.sess;
    const player::room_slot* slot = req->room_id() != 0 ? p.slot(room_id(req->room_id())) : nullptr;
    if (!slot || slot->state != player::room_state::member) {
        svc_.send_error(s, msg_type::history_req, error_code::not_in_room, "history is for a room you are in");
        return;
    }
    if (req->before_seq() != 0 && req->after_seq() != 0) {
        bump(counters_.bad_requests);
        svc_.send_error(s, msg_type::history_req, error_code::bad_request, "give before_seq or after_seq, not both");
        return;
    }
    history_query q;
    q.room_id = req->room_id();
    q.before_seq = req->before_seq();
    q.after_seq = req->after_seq();
    const std::uint32_t limit = req->limit() == 0 ? default_history_limit : std::min(req->limit(), max_history_limit);
    q.limit = limit + 1;  // one more than asked: whether there is more in that direction
    bump(counters_.history_requests);
    reads_.submit(p, msg_type::history_req, [q, limit](chat_store& store) {
        std::vector<chat_log_entry> logs = store.history_page(q);
        return history_page(q, limit, std::move(logs), store.room_log_range(q.room_id));
    });
}

}  // namespace strix::chat
