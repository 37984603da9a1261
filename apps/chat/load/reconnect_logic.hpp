#pragma once
// reconnect_logic: the pure parts of strix-chat-load's --reconnect-share: which clients drop their
// connection and when, and what a reconnected client still has to get back through resume_req
// (or, after a gap answer, history_req) before its live messages may be shown.
//
// A client that had room seqs up to K when its connection went is put back in its room by its
// resume login; the join_room_res names the room's last seq L. It must then receive K+1 .. L from
// the database, each exactly once and in order, and every seq above L live:
//
//   seq:  ... K | K+1 ........ L | L+1 ...
//         had   | refilled       | live (held back until the refill is over)

#include "message_text.hpp"

#include <cstdint>

namespace strix::chat {

/// True when client `index` is one of the share `share` (0..1) of clients that drop their
/// connection once: exactly floor(share * n) of clients 0 .. n-1, spread evenly over the
/// indexes (and so over rooms and targets). Pure.
inline bool drops_client(std::uint32_t index, double share) noexcept {
    const auto below = [share](std::uint32_t i) { return static_cast<std::uint64_t>(share * i + 1e-9); };
    return share > 0 && below(index + 1) > below(index);
}

/// When client `index` drops: a time in [from, to) drawn from a hash of the index, so runs
/// repeat and drops are spread over the window. Pure.
inline std::int64_t drop_time(std::uint32_t index, std::int64_t from, std::int64_t to) noexcept {
    if (to <= from) return from;
    const auto span = static_cast<std::uint64_t>(to - from);
    return from + static_cast<std::int64_t>(mix64(0xd20b5eedULL + index) % span);
}

/// What one refilled message means for the range a reconnected client is owed.
enum class refill_verdict : std::uint8_t {
    next,       ///< the next seq owed: take it
    skipped,    ///< seqs between the next owed and this one are missing (then this one is taken)
    duplicate,  ///< a seq the client already has
    beyond,     ///< above the range: it comes (or came) live
};

/// The seqs a reconnected client is owed: have+1 .. upto. Owner thread only.
class resume_tracker {
public:
    /// Starts a new range after the client had `have` and its re-join named `upto`.
    void start(std::uint64_t have, std::uint64_t upto) noexcept {
        next_ = have + 1;
        upto_ = upto;
        missing_ = 0;
    }

    /// Classifies a stored message with room seq `seq` and advances past it when taken.
    refill_verdict take(std::uint64_t seq) noexcept {
        if (seq > upto_) return refill_verdict::beyond;
        if (seq < next_) return refill_verdict::duplicate;
        const bool skipped = seq > next_;
        if (skipped) missing_ += seq - next_;
        next_ = seq + 1;
        return skipped ? refill_verdict::skipped : refill_verdict::next;
    }

    /// Ends the range: what was not refilled is missing.
    void give_up() noexcept {
        missing_ += remaining();
        next_ = upto_ + 1;
    }

    /// True once every seq up to upto() was taken or given up.
    bool done() const noexcept { return next_ > upto_; }
    /// Seqs still owed.
    std::uint64_t remaining() const noexcept { return done() ? 0 : upto_ + 1 - next_; }
    /// The next seq owed.
    std::uint64_t next() const noexcept { return next_; }
    /// The last seq of the range (the re-join's last_seq).
    std::uint64_t upto() const noexcept { return upto_; }
    /// Seqs of the range that never came (skipped or given up).
    std::uint64_t missing() const noexcept { return missing_; }

private:
    std::uint64_t next_ = 1;
    std::uint64_t upto_ = 0;
    std::uint64_t missing_ = 0;
};

}  // namespace strix::chat
