#pragma once
// zmq_msg_t's 64 bytes as strix uses them (zmq_msg.cpp):
//
//   bytes 0..47   inline data (up to 48 bytes), or a pooled block (up to 512), or a link::part (a window into a shared
//                 buffer: received and sized messages), or a user buffer and its free function
//                 (zmq_msg_init_data), or a constant buffer (zmq_send_const)
//   bytes 48..55  the message's peer properties (zmq_msg_gets), or null
//   bytes 56..63  size of inline data, kind, flags (more, shared), a validity mark
//
// The free function of zmq_msg_init_data runs when the last holder of the buffer lets go, as
// libzmq's does: the message at zmq_msg_close, or, once sent, strix when the message has left
// (written to the connection, taken by an inproc peer, or dropped at close). A sent user buffer's
// bytes are copied into a strix buffer whose release hook (shared_buffer.hpp) is one holder, so
// the free function may run on a shard thread (libzmq's runs on its I/O thread): pyzmq's sends
// on a socket of another context there, and its MessageTracker tells when the message has left.
#include "zmq/zmq_shim.hpp"

#include <cstddef>
#include <cstdint>

namespace strix::zmq_abi {

enum class msg_kind : std::uint8_t { inline_bytes = 1, shared = 2, user = 3, constant = 4, pooled = 5 };

/// Messages above the inline size up to this live in a block from the thread's own free list
/// (no malloc, no reference count: the commonest sizes of a stream of small messages).
constexpr std::size_t pooled_max = 512;
/// A pooled block (pooled_max bytes) from the calling thread's free list, or a new one.
void* pooled_take();
/// Gives a block back to the calling thread's free list (or frees it when the list is full).
void pooled_give(void* p) noexcept;

struct user_buffer {
    void* data;
    std::size_t size;
    zmq_free_fn* ffn;
    void* hint;
    // Messages sharing the buffer after zmq_msg_copy (null until the first copy): the last one
    // closed runs ffn, as libzmq's reference count does.
    std::atomic<int>* refs;
};

struct msg_rep {
    static constexpr std::size_t inline_max = 48;
    union {
        unsigned char bytes[inline_max];
        void* block;  // pooled: inline_size bytes
        link::part part;
        user_buffer user;
    };
    const link::message_properties* props;  // one counted reference, or null
    std::uint32_t inline_size;
    msg_kind kind;
    std::uint8_t flags;  // ZMQ_MORE (1), shared (2: zmq_msg_copy made it)
    std::uint16_t mark;  // valid_mark while initialised

    static constexpr std::uint16_t valid_mark = 0x5a4d;
    static constexpr std::uint8_t more_flag = 1, shared_flag = 2;

    msg_rep() noexcept {}
    ~msg_rep() {}
};
static_assert(sizeof(msg_rep) <= sizeof(zmq_msg_t), "the message fits libzmq's zmq_msg_t");
static_assert(alignof(msg_rep) <= alignof(zmq_msg_t), "and its alignment");

inline msg_rep* rep(zmq_msg_t* m) noexcept { return reinterpret_cast<msg_rep*>(m); }
inline const msg_rep* rep(const zmq_msg_t* m) noexcept { return reinterpret_cast<const msg_rep*>(m); }
/// An initialised message (not closed, not garbage), or null with errno EFAULT.
msg_rep* valid(zmq_msg_t* m) noexcept;

/// Empties m (frees what it holds) and leaves it initialised and empty.
void msg_reset(msg_rep& m) noexcept;
/// Makes m hold a copy of b (inline when small).
void msg_set_copy(msg_rep& m, link::bytes_view b);
/// Makes m hold p (no copy).
void msg_set_part(msg_rep& m, link::part p);
/// Gives m the properties of the connection it came from (zmq_msg_gets), replacing any.
void msg_set_props(msg_rep& m, link::message_properties_ptr p) noexcept;
/// m's bytes.
link::bytes_view msg_bytes(const msg_rep& m) noexcept;
/// m as a part of a message to send (moves a shared part or the hold on a user buffer out;
/// copies the rest). m is left empty.
link::part msg_take_part(msg_rep& m);
/// A part for sending m's user buffer (m.kind == user), one more holder of it: m keeps its own
/// hold (dropped by msg_reset once the send succeeds).
link::part msg_share_user(msg_rep& m);

}  // namespace strix::zmq_abi
