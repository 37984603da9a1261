#pragma once
// load_client: one simulated chat user of the load tool: its socket, its protocol state, its
// outgoing bytes and what it has received so far (delivery_checker). Owned by one worker.
//
// Outgoing frames are appended to `out` during a loop turn and written with one write() at the
// end of the turn (or when the socket turns writable again):
//
//   out: [ written | pending: out_head .. size() ]

#include "delivery_checker.hpp"
#include "reconnect_logic.hpp"
#include "load_ws.hpp"

#include "apps/chat/common/client_tls.hpp"

#include <strix/codec/frame_codec.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace strix::chat {

enum class client_state : std::uint8_t {
    idle,        ///< not connected yet
    connecting,  ///< non-blocking connect() in progress
    handshaking, ///< --tls: TLS handshake in progress (nothing of the login sent yet)
    upgrading,   ///< --ws: WebSocket upgrade sent, waiting for the 101
    logging_in,  ///< login_req sent
    logged_in,   ///< waiting for its room to exist
    entering,    ///< create_room_req or join_room_req sent
    in_room,     ///< member of its room; sends chat during steps
    rejoining,   ///< --reconnect: logged in again, waiting for the join_room_res that puts it back
    resuming,    ///< --reconnect: resume_req (or history_req) out; live chat_msgs are held back
    closed,      ///< the connection is gone (with --reconnect maybe for a moment: see reconnect_at)
};

/// One conversation of a client in the conversations workload (conversation_layout.hpp): a group
/// room or a direct pair, with its own client_seq and its own delivery_checker.
struct conversation {
    conversation(std::uint32_t k, bool dm, std::uint32_t other, std::uint32_t members)
        : key(k), direct(dm), peer(other), checker(members) {}

    std::uint32_t key;           ///< group room index, or layout.rooms() + pair index
    bool direct;                 ///< a direct pair
    bool joined = false;         ///< its join_room_res (or create_room_res) arrived
    bool ready = false;          ///< joined, and a direct room's opening message accounted for
    bool heard_chat = false;     ///< a chat_msg of the run arrived (notices come before it)
    std::uint32_t peer;          ///< direct: the partner's client index; group: the layer
    std::uint64_t room_id = 0;   ///< 0 until joined
    std::uint64_t client_seq = 0;  ///< own last client_seq sent here
    delivery_checker checker;    ///< slots: group, layout.slot_of(); direct, 0 = lower client number
};

/// A chat_req of the conversations workload not yet seen back by its sender.
struct pending_send {
    std::uint32_t conv;          ///< index into load_client::convs
    std::uint64_t client_seq;
    std::uint32_t owed;          ///< deliveries it owes (room members)
    bool refused;                ///< an error_res for a chat_req is put on it (see on_conv_refused)
};

/// Frames larger than this from the server close the connection (list_rooms_res can be long).
inline constexpr std::uint32_t client_max_frame = 16u << 20;

struct load_client {
    load_client(std::uint32_t i, std::uint32_t rooms, std::uint32_t members)
        : index(i), room(i % rooms), slot(i / rooms), decoder(codec_limits{client_max_frame}), checker(members) {}

    int fd = -1;
    std::uint32_t index;  ///< global client number: account PREFIX<index>
    std::uint32_t room;   ///< index of its room
    std::uint32_t slot;   ///< its position among the room's members
    client_state state = client_state::idle;
    bool dirty = false;   ///< queued for this turn's flush
    bool want_out = true; ///< EPOLLOUT registered (while connecting, and while a write waits for space)
    std::uint64_t player_id = 0;
    std::uint32_t login_attempts = 0;  ///< login_req sent so far (more than one after "retry later")
    std::int64_t login_retry_at = 0;   ///< when the next login_req goes, while in the worker's login_waiting_
    std::uint64_t client_seq = 0;  ///< last chat_req sequence number sent
    bool heard_chat = false;       ///< a chat_msg of its room arrived (every earlier join notice came before it)
    std::unique_ptr<client_tls_conn> tls;  ///< --tls: the connection's TLS (freed before the socket closes)
    bool read_wants_write = false;         ///< a TLS read must send first: retried on EPOLLOUT
    bool write_wants_read = false;         ///< a TLS write must receive first: retried on EPOLLIN
    std::unique_ptr<load_ws> ws;           ///< --ws: the WebSocket framing of this connection
    frame_decoder decoder;
    std::vector<std::byte> out;
    std::size_t out_head = 0;
    delivery_checker checker;

    // --reconnect / --reconnect-share.
    std::uint32_t target = 0;                 ///< index into the targets; the next one on each reconnect
    std::vector<std::uint8_t> resume_token;   ///< the newest one a login_res gave (32 bytes)
    std::uint64_t acked_seq = 0;              ///< the highest own client_seq seen back from the room
    std::vector<std::uint64_t> unconfirmed;   ///< own client_seqs lost with a connection before their ack
    bool reconnecting = false;                ///< between losing a connection and resuming
    std::int64_t lost_at = 0;                 ///< when the connection went (steady ns)
    std::int64_t reconnect_at = 0;            ///< while closed and reconnecting: when to try again
    std::uint32_t reconnect_attempts = 0;     ///< failed attempts since the connection went
    std::int64_t drop_at = 0;                 ///< --reconnect-share: when it resets its connection (0: never)
    resume_tracker resume;                    ///< the seqs it is owed back
    std::int64_t refill_retry_at = 0;         ///< when to ask history again (it had a hole or ended short)
    std::uint32_t refill_retries = 0;         ///< history asked again so far in this resume
    /// Live chat_msg frames that arrived while resuming, with their arrival times: verified in
    /// order once the refill is over.
    std::vector<std::pair<std::int64_t, std::vector<std::byte>>> held;

    // The conversations workload (--rooms-per-client): its group rooms by layer, then its direct
    // pairs in conversation_layout::pairs_of order.
    std::vector<conversation> convs;
    bool setup_busy = false;              ///< a create_room_req, join_room_req or direct_req is out
    std::uint32_t setup_conv = 0;         ///< the conversation it is for
    std::uint32_t setup_attempts = 0;     ///< sent again after "retry later" for this one
    std::int64_t setup_retry_at = 0;      ///< when it goes again, while in the worker's setup_waiting_
    std::uint64_t sends = 0;              ///< chat_req sent in the run (draws room or direct)
    std::uint32_t next_room = 0;          ///< round-robin over its group rooms
    std::uint32_t next_partner = 0;       ///< round-robin over its direct pairs
    std::vector<pending_send> unacked;    ///< own chat_req not yet seen back
};

}  // namespace strix::chat
