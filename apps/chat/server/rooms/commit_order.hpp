#pragma once
// commit_order: an owner shard's database writes and the room events that announce them, kept in
// decision order. Acknowledged means stored (--ack stored, the default).
//
// Every database write a decision needs (a chat log entry, a room created, deleted, joined or
// left) goes to the chat log writer with a ticket, numbered per owner shard: tag =
// shard_stamp::pack(ticket, shard). The events that announce the decision wait in held_, in
// decision order, until the writer reports that ticket committed (committed(), one post per
// committed batch and shard); events that need no write but come after a waiting one wait behind
// it, so every shard still sees a room's events in the owner's order and a chat_msg of seq N
// never overtakes N-1. With --ack early nothing waits.
//
//   decide ─> write() ─> writer.try_enqueue(tag) ─> held_ [ev t=7][ev t=7][ev t=0][ev t=8]  (FIFO)
//   writer thread: commit batch ─> post committed(8) to this shard ─> send the front up to t=8
//
// The room host orders its membership changes through it, and both room sequencers their
// messages (the local one every message; the cluster one its own, whose delivery waits for their
// commit). Owner shard only; plain state.

#include "room_event.hpp"
#include "apps/chat/storage/chat_store.hpp"

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <utility>

namespace strix::chat {

class chat_log_writer;

class commit_order {
public:
    /// Writes of shard `shard` through `writer`; `ack_stored`: events wait for their write's
    /// commit (--ack stored), else nothing waits. Built on any thread; used on that shard.
    commit_order(chat_log_writer& writer, unsigned shard, bool ack_stored) noexcept;

    /// Queues a chat log entry for the database: the ticket its events wait for (0 with --ack
    /// early), or nothing when the queue is full.
    std::optional<std::uint64_t> write(chat_log_entry e);
    /// The same for a room change. `beyond_capacity` for changes that must not fail (they
    /// complete one that was admitted, see the writer).
    std::optional<std::uint64_t> write(room_change c, bool beyond_capacity = false);

    /// Whether an event of write `ticket` (0: none) may go to its shard now: the write is
    /// committed and nothing decided before it still waits. Otherwise it is held (moved from
    /// `ev`) and committed() sends it, in order.
    bool pass(unsigned to, room_event& ev, std::uint64_t ticket) {
        // Once one event waits, every later one waits behind it: the owner's order is the order
        // every shard applies (with --ack early nothing ever waits: one branch).
        if (ticket <= committed_ && held_.empty()) return true;
        held_.push_back({ticket, to, std::move(ev)});
        return false;
    }

    /// The writer committed every write of this shard up to ticket `upto`: calls send(to, ev)
    /// for each held event that waited for them, in order, then the after_commit functions due.
    template <class Send>
    void committed(std::uint64_t upto, Send&& send) {
        advance(upto);
        while (!held_.empty() && held_.front().ticket <= committed_) {
            held_event h = std::move(held_.front());
            held_.pop_front();
            send(h.to, std::move(h.ev));
        }
        run_due();
    }

    /// Runs fn once write `ticket` is committed (at once for ticket 0 or one already committed),
    /// after the events that waited for it.
    void after_commit(std::uint64_t ticket, std::function<void()> fn);

    /// The ticket of the last write queued (0 before any, or with --ack early).
    std::uint64_t last_ticket() const noexcept { return ack_stored_ ? next_ticket_ - 1 : 0; }

    /// Events waiting for a commit (or behind one).
    std::size_t held() const noexcept { return held_.size(); }

private:
    struct held_event {
        std::uint64_t ticket;  // the write it waits for; 0: none (it only keeps its place)
        unsigned to;
        room_event ev;
    };

    // Takes the writer's report; aborts on a ticket never handed out (a broken invariant).
    void advance(std::uint64_t upto);
    void run_due();

    chat_log_writer& writer_;
    const unsigned shard_;
    const bool ack_stored_;
    std::uint64_t next_ticket_ = 1;  // the next write's ticket
    std::uint64_t committed_ = 0;    // the writer committed every ticket up to this one
    std::deque<held_event> held_;    // decided, waiting for a commit or behind one
    std::deque<std::pair<std::uint64_t, std::function<void()>>> after_commit_;  // by ticket, ascending
};

}  // namespace strix::chat
