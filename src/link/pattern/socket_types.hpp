#pragma once
// The socket-type table: one row per socket_type with its ZMTP name, the peer types it may talk
// to and how it sends and receives (RFC 28-31, libzmq 4.3). Everything that depends on the type
// reads its row: to_string, compatible, the READY handshake and make_pattern.
//
//   type     name      peers                 send          receive
//   PAIR     "PAIR"    PAIR                  one_peer      one_peer
//   PUB      "PUB"     SUB XSUB              fan_out       subscriptions
//   SUB      "SUB"     PUB XPUB              none          filtered
//   REQ      "REQ"     REP ROUTER            request       reply            + Identity in READY
//   REP      "REP"     REQ DEALER            reply         request
//   DEALER   "DEALER"  REP DEALER ROUTER     round_robin   fair_queue       + Identity in READY
//   ROUTER   "ROUTER"  REQ DEALER ROUTER     by_identity   with_identity    + Identity in READY
//   PULL     "PULL"    PUSH                  none          fair_queue
//   PUSH     "PUSH"    PULL                  round_robin   none
//   XPUB     "XPUB"    SUB XSUB              fan_out       subscriptions_and_messages
//   XSUB     "XSUB"    PUB XPUB              upstream      filtered
#include <strix/link/socket.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace strix::link::detail {

/// Where send() puts a message.
enum class send_rule : std::uint8_t {
    none,         // send() is not supported
    round_robin,  // the next peer below its high-water mark
    one_peer,     // the only peer
    request,      // round-robin, then nothing more until that peer's reply came back
    reply,        // back to the peer whose request is being answered, with its envelope
    by_identity,  // the peer whose routing id is the first part
    fan_out,      // every peer subscribed to a prefix of the first part
    upstream,     // (un)subscriptions and other messages to every publisher
};

/// What receive does with a message from a peer.
enum class receive_rule : std::uint8_t {
    none,                        // dropped
    fair_queue,                  // delivered (each connection's reads take turns on the loop)
    one_peer,                    // delivered when it comes from the only peer
    reply,                       // only the awaited reply, its envelope stripped
    request,                     // one request at a time, its envelope kept for the reply
    with_identity,               // delivered with the peer's routing id as the first part
    subscriptions,               // subscriptions only
    subscriptions_and_messages,  // subscriptions, and other messages delivered
    filtered,                    // delivered when it matches a subscription of ours
};

struct socket_type_info {
    socket_type type;
    const char* name;          // ZMTP's Socket-Type property
    std::uint16_t peers;       // bit (1 << peer type) for each type this one may talk to
    send_rule send;
    receive_rule receive;
    bool announces_identity;   // READY carries an Identity property (the routing id)

    constexpr bool talks_to(socket_type peer) const noexcept {
        const auto b = static_cast<unsigned>(peer);
        return b < 16 && ((peers >> b) & 1u) != 0;
    }
    /// subscribe() and unsubscribe() are for this type.
    constexpr bool subscribes() const noexcept { return receive == receive_rule::filtered; }
};

/// The row of a valid socket_type, or nullptr for a value outside the enum. Any thread.
const socket_type_info* find_type_info(socket_type t) noexcept;
/// The type whose ZMTP name is exactly `name` (case matters, as in the READY check). Any thread.
std::optional<socket_type> type_from_name(std::string_view name) noexcept;

}  // namespace strix::link::detail
