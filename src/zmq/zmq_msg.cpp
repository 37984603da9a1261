// zmq_msg_*: messages in the caller's zmq_msg_t (the layout is in zmq_msg.hpp).
#include "zmq/zmq_msg.hpp"

#include <atomic>
#include <cstring>
#include <new>

namespace strix::zmq_abi {

msg_rep* valid(zmq_msg_t* m) noexcept {
    if (!m || rep(m)->mark != msg_rep::valid_mark) {
        errno = EFAULT;
        return nullptr;
    }
    return rep(m);
}

namespace {

// The calling thread's spare pooled blocks: a sender's and a receiver's steady streams reuse
// the same few (a block freed on another thread joins that thread's list).
struct block_list {
    static constexpr int max_spare = 1024;
    void* head = nullptr;
    int count = 0;
    ~block_list() {
        while (head) {
            void* next = *static_cast<void**>(head);
            ::operator delete(head);
            head = next;
        }
    }
};
thread_local block_list spare_blocks;

void init_empty(msg_rep* r) noexcept {
    new (r) msg_rep();
    r->props = nullptr;
    r->inline_size = 0;
    r->kind = msg_kind::inline_bytes;
    r->flags = 0;
    r->mark = msg_rep::valid_mark;
}

// One holder of a user buffer lets go: the last runs the free function.
void drop_user(const user_buffer& u) noexcept {
    if (u.refs) {
        if (u.refs->fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        delete u.refs;
    }
    if (u.ffn) u.ffn(u.data, u.hint);
}

// The release hook of a part made by user_part: that part was one holder of the buffer.
void drop_user_hook(const release_hook& h) noexcept {
    drop_user({h.words[0], reinterpret_cast<std::size_t>(h.words[1]), reinterpret_cast<zmq_free_fn*>(h.words[2]),
               h.words[3], static_cast<std::atomic<int>*>(h.words[4])});
}

// A part holding a copy of u's bytes whose buffer is one holder of u: when strix is done with
// the part, on whichever thread that is, the hook lets go of u.
link::part user_part(const user_buffer& u) {
    release_hook h;
    h.fn = drop_user_hook;
    h.words[0] = u.data;
    h.words[1] = reinterpret_cast<void*>(u.size);
    h.words[2] = reinterpret_cast<void*>(u.ffn);
    h.words[3] = u.hint;
    h.words[4] = u.refs;
    auto buf = shared_buffer::create(u.size, h);
    if (u.size) std::memcpy(buf->data(), u.data, u.size);
    return link::part(std::move(buf), 0, u.size);
}

// Frees what r holds; r is left with nothing (not valid until set again).
void release(msg_rep& r) noexcept {
    switch (r.kind) {
        case msg_kind::shared: r.part.~part(); break;
        case msg_kind::pooled: pooled_give(r.block); break;
        case msg_kind::user: drop_user(r.user); break;
        default: break;
    }
    r.kind = msg_kind::inline_bytes;
    r.inline_size = 0;
}

}  // namespace

void* pooled_take() {
    block_list& l = spare_blocks;
    if (!l.head) return ::operator new(pooled_max);
    void* p = l.head;
    l.head = *static_cast<void**>(p);
    --l.count;
    return p;
}

void pooled_give(void* p) noexcept {
    block_list& l = spare_blocks;
    if (l.count >= block_list::max_spare) {
        ::operator delete(p);
        return;
    }
    *static_cast<void**>(p) = l.head;
    l.head = p;
    ++l.count;
}

void msg_reset(msg_rep& m) noexcept {
    release(m);
    m.flags = 0;
    msg_set_props(m, nullptr);
}

void msg_set_props(msg_rep& m, link::message_properties_ptr p) noexcept {
    // Adopts the reference m held (dropped at the end of this scope) and keeps p's.
    link::message_properties_ptr old(m.props, false);
    m.props = p.detach();
}

void msg_set_copy(msg_rep& m, link::bytes_view b) {
    release(m);
    if (b.size() <= msg_rep::inline_max) {
        if (!b.empty()) std::memcpy(m.bytes, b.data(), b.size());
        m.inline_size = static_cast<std::uint32_t>(b.size());
        m.kind = msg_kind::inline_bytes;
        return;
    }
    if (b.size() <= pooled_max) {
        m.block = pooled_take();
        std::memcpy(m.block, b.data(), b.size());
        m.inline_size = static_cast<std::uint32_t>(b.size());
        m.kind = msg_kind::pooled;
        return;
    }
    new (&m.part) link::part(link::part::copy(b));
    m.kind = msg_kind::shared;
}

void msg_set_part(msg_rep& m, link::part p) {
    if (p.size() <= pooled_max) {
        msg_set_copy(m, p.bytes());
        return;
    }
    release(m);
    if (p.size() <= msg_rep::inline_max) {
        if (p.size()) std::memcpy(m.bytes, p.bytes().data(), p.size());
        m.inline_size = static_cast<std::uint32_t>(p.size());
        m.kind = msg_kind::inline_bytes;
        return;
    }
    new (&m.part) link::part(std::move(p));
    m.kind = msg_kind::shared;
}

link::bytes_view msg_bytes(const msg_rep& m) noexcept {
    switch (m.kind) {
        case msg_kind::inline_bytes: return {reinterpret_cast<const std::byte*>(m.bytes), m.inline_size};
        case msg_kind::shared: return m.part.bytes();
        case msg_kind::pooled: return {static_cast<const std::byte*>(m.block), m.inline_size};
        case msg_kind::user:
        case msg_kind::constant: return {static_cast<const std::byte*>(m.user.data), m.user.size};
    }
    return {};
}

link::part msg_take_part(msg_rep& m) {
    link::part p;
    if (m.kind == msg_kind::user) {
        p = user_part(m.user);  // m's hold on the buffer moves to the part
        m.kind = msg_kind::inline_bytes;
        m.inline_size = 0;
        return p;
    }
    if (m.kind == msg_kind::shared)
        p = std::move(m.part);
    else
        p = link::part::copy(msg_bytes(m));
    release(m);
    return p;
}

link::part msg_share_user(msg_rep& m) {
    // Counted as zmq_msg_copy counts: m keeps its hold until the send succeeds. The count exists
    // before the part copies m.user into its hook, so both holders share it.
    if (!m.user.refs) m.user.refs = new std::atomic<int>(1);
    m.user.refs->fetch_add(1, std::memory_order_relaxed);
    try {
        return user_part(m.user);
    } catch (...) {
        m.user.refs->fetch_sub(1, std::memory_order_relaxed);  // the part was never made
        throw;
    }
}

}  // namespace strix::zmq_abi

using namespace strix::zmq_abi;

extern "C" {

int zmq_msg_init(zmq_msg_t* m) {
    if (!m) return fail(EFAULT);
    init_empty(rep(m));
    return 0;
}

int zmq_msg_init_size(zmq_msg_t* m, size_t size) {
    if (!m) return fail(EFAULT);
    init_empty(rep(m));
    msg_rep& r = *rep(m);
    if (size <= msg_rep::inline_max) {
        r.inline_size = static_cast<std::uint32_t>(size);
        return 0;
    }
    try {
        if (size <= pooled_max) {
            r.block = pooled_take();
            r.inline_size = static_cast<std::uint32_t>(size);
            r.kind = msg_kind::pooled;
            return 0;
        }
        new (&r.part) strix::link::part(strix::shared_buffer::create(size), 0, size);
        r.kind = msg_kind::shared;
        return 0;
    } catch (...) {
        r.mark = 0;
        return fail(ENOMEM);
    }
}

int zmq_msg_init_data(zmq_msg_t* m, void* data, size_t size, zmq_free_fn* ffn, void* hint) {
    if (!m || (!data && size)) return fail(EFAULT);
    init_empty(rep(m));
    msg_rep& r = *rep(m);
    // A null buffer of size 0 is an empty message (libzmq does not call ffn then either).
    if (!data) return 0;
    r.user = {data, size, ffn, hint, nullptr};
    r.kind = msg_kind::user;
    return 0;
}

int zmq_msg_close(zmq_msg_t* m) {
    msg_rep* r = valid(m);
    if (!r) return -1;
    msg_reset(*r);
    r->mark = 0;
    return 0;
}

int zmq_msg_move(zmq_msg_t* dest, zmq_msg_t* src) {
    msg_rep* s = valid(src);
    if (!s) return -1;
    msg_rep* d = valid(dest);
    if (!d) return -1;
    if (d == s) return 0;
    msg_reset(*d);
    std::memcpy(static_cast<void*>(d), static_cast<const void*>(s),
                sizeof(msg_rep));  // parts are trivially relocatable
    init_empty(s);
    return 0;
}

int zmq_msg_copy(zmq_msg_t* dest, zmq_msg_t* src) {
    msg_rep* s = valid(src);
    if (!s) return -1;
    msg_rep* d = valid(dest);
    if (!d) return -1;
    if (d == s) return 0;
    try {
        // A pooled block belongs to one message: copies share a buffer instead.
        if (s->kind == msg_kind::pooled) {
            strix::link::part p = strix::link::part::copy(msg_bytes(*s));
            pooled_give(s->block);
            new (&s->part) strix::link::part(std::move(p));
            s->kind = msg_kind::shared;
        }
        // A user buffer is shared, counted: its free function runs when the last copy closes.
        if (s->kind == msg_kind::user) {
            if (!s->user.refs) s->user.refs = new std::atomic<int>(1);
            s->user.refs->fetch_add(1, std::memory_order_relaxed);
        }
        msg_reset(*d);
        d->kind = s->kind;
        d->inline_size = s->inline_size;
        switch (s->kind) {
            case msg_kind::shared: new (&d->part) strix::link::part(s->part); break;
            case msg_kind::user:
            case msg_kind::constant: d->user = s->user; break;
            default: std::memcpy(d->bytes, s->bytes, s->inline_size); break;
        }
        d->flags = s->flags;
        msg_set_props(*d, link::message_properties_ptr(s->props));
        if (s->kind == msg_kind::shared || s->kind == msg_kind::user)
            s->flags = d->flags = static_cast<std::uint8_t>(s->flags | msg_rep::shared_flag);
        return 0;
    } catch (...) {
        return fail(ENOMEM);
    }
}

void* zmq_msg_data(zmq_msg_t* m) {
    msg_rep* r = valid(m);
    if (!r) return nullptr;
    switch (r->kind) {
        case msg_kind::inline_bytes: return r->bytes;
        case msg_kind::shared: return const_cast<std::byte*>(r->part.bytes().data());
        case msg_kind::pooled: return r->block;
        default: return r->user.data;
    }
}

size_t zmq_msg_size(const zmq_msg_t* m) {
    if (!m || rep(m)->mark != msg_rep::valid_mark) {
        errno = EFAULT;
        return 0;
    }
    return msg_bytes(*rep(m)).size();
}

int zmq_msg_more(const zmq_msg_t* m) {
    if (!m || rep(m)->mark != msg_rep::valid_mark) return fail(EFAULT);
    return (rep(m)->flags & msg_rep::more_flag) ? 1 : 0;
}

int zmq_msg_get(const zmq_msg_t* m, int property) {
    if (!m || rep(m)->mark != msg_rep::valid_mark) return fail(EFAULT);
    switch (property) {
        case ZMQ_MORE: return (rep(m)->flags & msg_rep::more_flag) ? 1 : 0;
        case ZMQ_SRCFD: return fail(EINVAL);  // deprecated in libzmq; strix's messages do not know their fd
        case ZMQ_SHARED: return (rep(m)->flags & msg_rep::shared_flag) || rep(m)->kind == msg_kind::constant ? 1 : 0;
        default: return fail(EINVAL);
    }
}

int zmq_msg_set(zmq_msg_t*, int, int) {
    return fail(EINVAL);  // libzmq 4.3 has no settable property either, and looks at nothing
}

}  // extern "C"

extern "C" const char* zmq_msg_gets(const zmq_msg_t* m, const char* property) {
    if (!m) {
        errno = EFAULT;
        return nullptr;
    }
    if (rep(m)->mark != msg_rep::valid_mark || !property) {
        errno = EINVAL;  // libzmq 4.3.4's answer for a closed message
        return nullptr;
    }
    // The properties of the connection the message came from: Socket-Type, Identity (Routing-Id),
    // Peer-Address, ZAP's User-Id and metadata (strix/link/message.hpp).
    const strix::link::message_properties* props = rep(m)->props;
    const std::string* value = props ? props->get(property) : nullptr;
    if (!value) {
        errno = EINVAL;
        return nullptr;
    }
    return value->c_str();
}
