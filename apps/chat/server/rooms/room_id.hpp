#pragma once
// room_id: a room's identity. The protocol and the database carry it as one 64-bit number; the
// server reads which shard created the room from it, and so which shard owns the room:
//
//   one node:
//    63                                                  8 7         0
//   +-----------------------------------------------------+-----------+
//   | counter (per creating shard, from 1)                | shard     |
//   +-----------------------------------------------------+-----------+
//
//   cluster mode (--cluster, --node-id N): the counter field also names the creating node
//    63                                 24 23            8 7         0
//   +-------------------------------------+---------------+-----------+
//   | counter (per node and shard)        | node 1..65535 | shard     |
//   +-------------------------------------+---------------+-----------+
//
// A shard numbers its rooms on its own and the ids still never collide, over the shards and, in
// a cluster, over the nodes (which all start from one shared database). The chat log writer's
// tags are packed the same way (a per-shard ticket and the shard, see commit_order.hpp), so the
// shard packing lives here once, in shard_stamp; room_id_source hands out the ids. 0 is no room.

#include <compare>
#include <cstddef>
#include <cstdint>

namespace strix::chat {

/// Numbers a shard issues by itself that are unique over all shards: a per-shard counter with
/// the issuing shard in the low 8 bits. Any thread.
namespace shard_stamp {

inline constexpr unsigned shard_bits = 8;
/// Shards a stamp can name (and so the most shards the chat server runs).
inline constexpr unsigned max_shards = 1u << shard_bits;

constexpr std::uint64_t pack(std::uint64_t counter, unsigned shard) noexcept { return (counter << shard_bits) | shard; }
constexpr unsigned shard_of(std::uint64_t stamp) noexcept { return static_cast<unsigned>(stamp & (max_shards - 1)); }
constexpr std::uint64_t counter_of(std::uint64_t stamp) noexcept { return stamp >> shard_bits; }

}  // namespace shard_stamp

class room_id {
public:
    /// No room.
    constexpr room_id() noexcept = default;
    /// The number a client sent or the database stored, as it is (any value: a client's may name
    /// no room at all).
    constexpr explicit room_id(std::uint64_t value) noexcept : value_(value) {}
    /// Bits of the counter field that name the creating node in cluster mode.
    static constexpr unsigned node_bits = 16;

    /// The `counter`-th room shard `creator` made.
    static constexpr room_id make(std::uint64_t counter, unsigned creator) noexcept {
        return room_id(shard_stamp::pack(counter, creator));
    }
    /// The `counter`-th room shard `creator` of cluster node `node` (1..65535) made; node 0 (one
    /// node) packs no node bits, as make(counter, creator).
    static constexpr room_id make(std::uint64_t counter, std::uint32_t node, unsigned creator) noexcept {
        return make(node == 0 ? counter : (counter << node_bits) | node, creator);
    }

    /// The number the protocol and the database carry.
    constexpr std::uint64_t value() const noexcept { return value_; }
    /// The creating shard's counter and the creating shard.
    constexpr std::uint64_t counter() const noexcept { return shard_stamp::counter_of(value_); }
    constexpr unsigned creator() const noexcept { return shard_stamp::shard_of(value_); }
    /// The creating node of an id made in cluster mode (meaningless for one node's ids).
    constexpr std::uint32_t node() const noexcept {
        return static_cast<std::uint32_t>(counter() & ((std::uint64_t{1} << node_bits) - 1));
    }

    /// The shard that owns the room on a server with `shards` shards: its creator, or, when a
    /// restart left fewer shards than that, the creator modulo the shard count (so a room loaded
    /// from the database always has an owner).
    constexpr unsigned owner(unsigned shards) const noexcept { return creator() % shards; }

    /// False for "no room" (0).
    constexpr explicit operator bool() const noexcept { return value_ != 0; }

    friend constexpr bool operator==(room_id, room_id) noexcept = default;
    friend constexpr auto operator<=>(room_id, room_id) noexcept = default;
    /// For boost::hash (found by argument-dependent lookup): the number itself, as for a plain
    /// std::uint64_t key.
    friend constexpr std::size_t hash_value(room_id id) noexcept { return static_cast<std::size_t>(id.value_); }

private:
    std::uint64_t value_ = 0;
};

/// Hands out one shard's fresh room ids (the shard's room_sequencer holds it). Owner shard only.
class room_id_source {
public:
    /// `first_counter`: above every counter field in the database (a server's first free one);
    /// `node`: the cluster node id, 0 on one node. A cluster node continues above every id in
    /// the shared database, whichever node made it: its own counters start above the highest
    /// counter field with the node bits taken off.
    constexpr room_id_source(std::uint64_t first_counter, unsigned shard, std::uint32_t node = 0) noexcept
        : next_(node == 0 ? first_counter : (first_counter >> room_id::node_bits) + 1), shard_(shard), node_(node) {}

    /// A room id nobody has used: its creator is this shard (and node).
    constexpr room_id next() noexcept { return room_id::make(next_++, node_, shard_); }

private:
    std::uint64_t next_;
    unsigned shard_;
    std::uint32_t node_;
};

}  // namespace strix::chat
