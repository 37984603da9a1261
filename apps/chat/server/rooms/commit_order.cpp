#include "commit_order.hpp"

#include "room_id.hpp"
#include "apps/chat/storage/chat_log_writer.hpp"

#include <strix/core/log.hpp>

#include <cstdlib>

namespace strix::chat {

commit_order::commit_order(chat_log_writer& writer, unsigned shard, bool ack_stored) noexcept
    : writer_(writer), shard_(shard), ack_stored_(ack_stored) {}

std::optional<std::uint64_t> commit_order::write(chat_log_entry e) {
    const std::uint64_t ticket = ack_stored_ ? next_ticket_ : 0;
    if (!writer_.try_enqueue(std::move(e), ticket == 0 ? 0 : shard_stamp::pack(ticket, shard_))) return std::nullopt;
    if (ticket != 0) ++next_ticket_;
    return ticket;
}

std::optional<std::uint64_t> commit_order::write(room_change c, bool beyond_capacity) {
    const std::uint64_t ticket = ack_stored_ ? next_ticket_ : 0;
    if (!writer_.try_enqueue(std::move(c), ticket == 0 ? 0 : shard_stamp::pack(ticket, shard_), beyond_capacity))
        return std::nullopt;
    if (ticket != 0) ++next_ticket_;
    return ticket;
}

void commit_order::advance(std::uint64_t upto) {
    // The writer commits in acceptance order and reports the highest ticket per batch, so the
    // reports only grow; a ticket never handed out would be a broken invariant.
    if (upto >= next_ticket_) {
        log(log_level::error, "shard {}: the writer reported ticket {} committed, but only {} were issued", shard_,
            upto, next_ticket_ - 1);
        std::abort();
    }
    if (upto > committed_) committed_ = upto;
}

void commit_order::run_due() {
    while (!after_commit_.empty() && after_commit_.front().first <= committed_) {
        auto fn = std::move(after_commit_.front().second);
        after_commit_.pop_front();
        fn();
    }
}

void commit_order::after_commit(std::uint64_t ticket, std::function<void()> fn) {
    if (ticket <= committed_ && after_commit_.empty()) {
        fn();
        return;
    }
    after_commit_.emplace_back(ticket, std::move(fn));
}

}  // namespace strix::chat
