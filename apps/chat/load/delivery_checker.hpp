#pragma once
// delivery_checker: what one receiver knows about the chat_msg stream of its room, to tell an
// honest server from one that loses, repeats or reorders messages.
//
// The room seq must go 1, 2, 3, ... for every member (docs: per-room seq starts at 1, +1 per
// message, every member gets every message once, in seq order). A receiver that joined before the
// first message therefore expects seq == last + 1 each time:
//
//   seq == last + 1     in order
//   seq >  last + 1     gap: seqs last+1 .. seq-1 are missing (remembered as ranges)
//   seq <= last, seq is one of the missing ones   late: out of order (it still counts as delivered)
//   seq <= last, otherwise                        duplicate (it does not count)
//
// Besides the room order, each sender's own messages must reach the receiver in client_seq order
// without repeats (the server copies client_seq from chat_req): a message that carries a fresh
// room seq but a client_seq the receiver already saw from that sender is a replay, a duplicate.
// Lost messages are counted by the caller as expected - delivered after the drain; the missing
// ranges here are for diagnostics.

#include <cstdint>
#include <utility>
#include <vector>

namespace strix::chat {

enum class delivery_verdict : std::uint8_t {
    in_order,      ///< the next seq, from a sender in order
    gap,           ///< accepted, but seqs before it are missing
    out_of_order,  ///< a seq that was missing arrived late; counts as delivered
    duplicate,     ///< already delivered (by room seq, or by the sender's client_seq); ignored
};

class delivery_checker {
public:
    /// A checker for a room with `senders` members, each identified by a slot 0..senders-1.
    /// Owner thread only (from then on).
    explicit delivery_checker(std::size_t senders = 0) : last_client_seq_(senders, 0) {}

    /// Classifies one chat_msg: room seq `seq`, from the sender in `slot` (< senders), carrying
    /// that sender's `client_seq`. Owner thread only.
    delivery_verdict on_message(std::uint64_t seq, std::size_t slot, std::uint64_t client_seq) {
        if (seq <= last_seq_) {
            return take_missing(seq) ? delivery_verdict::out_of_order : delivery_verdict::duplicate;
        }
        std::uint64_t& last_cs = last_client_seq_[slot];
        const bool gap = seq != last_seq_ + 1;
        if (gap) {
            missing_.emplace_back(last_seq_ + 1, seq - 1);
            missing_count_ += seq - 1 - last_seq_;
            ++gaps_;
        }
        last_seq_ = seq;
        if (client_seq <= last_cs) return delivery_verdict::duplicate;
        if (client_seq != last_cs + 1) ++sender_gaps_;
        last_cs = client_seq;
        return gap ? delivery_verdict::gap : delivery_verdict::in_order;
    }

    /// Starts the stream after seq `seq` (a room joined once it held messages: its
    /// join_room_res.last_seq), the sender in `slot` having sent `client_seq` of them. Before the
    /// first message only. Owner thread only.
    void begin_after(std::uint64_t seq, std::size_t slot = 0, std::uint64_t client_seq = 0) {
        last_seq_ = seq;
        if (slot < last_client_seq_.size()) last_client_seq_[slot] = client_seq;
    }

    /// The highest room seq seen. Owner thread only.
    std::uint64_t last_seq() const noexcept { return last_seq_; }
    /// Room seqs skipped and not (yet) delivered late. Owner thread only.
    std::uint64_t missing() const noexcept { return missing_count_; }
    /// How many times the room seq jumped forward. Owner thread only.
    std::uint64_t gaps() const noexcept { return gaps_; }
    /// How many times a sender's client_seq jumped forward (its messages in between are missing).
    /// Owner thread only.
    std::uint64_t sender_gaps() const noexcept { return sender_gaps_; }
    /// The highest client_seq seen from the sender in `slot`. Owner thread only.
    std::uint64_t last_client_seq(std::size_t slot) const noexcept { return last_client_seq_[slot]; }

private:
    // Removes seq from the missing ranges; false when it was not missing.
    bool take_missing(std::uint64_t seq) {
        for (std::size_t i = 0; i < missing_.size(); ++i) {
            auto [a, b] = missing_[i];
            if (seq < a || seq > b) continue;
            if (a == b) {
                missing_.erase(missing_.begin() + static_cast<std::ptrdiff_t>(i));
            } else if (seq == a) {
                missing_[i].first = a + 1;
            } else if (seq == b) {
                missing_[i].second = b - 1;
            } else {
                missing_[i].second = seq - 1;
                missing_.insert(missing_.begin() + static_cast<std::ptrdiff_t>(i) + 1, {seq + 1, b});
            }
            --missing_count_;
            return true;
        }
        return false;
    }

    std::uint64_t last_seq_ = 0;
    std::vector<std::uint64_t> last_client_seq_;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> missing_;  // inclusive ranges, ascending
    std::uint64_t missing_count_ = 0;
    std::uint64_t gaps_ = 0;
    std::uint64_t sender_gaps_ = 0;
};

}  // namespace strix::chat
