// msg_pipe: records in linked chunks (the layout is drawn in msg_pipe.hpp).
#include "link/blocking/msg_pipe.hpp"

#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

namespace strix::link::detail {

namespace {
constexpr std::size_t chunk_bytes = 64 * 1024 - 64;  // with the link, one 64 KiB block
constexpr std::size_t round8(std::size_t n) noexcept { return (n + 7) & ~std::size_t{7}; }
}  // namespace

struct msg_pipe::chunk {
    chunk* next = nullptr;  // written by the producer before it publishes a record there
    alignas(64) std::byte data[chunk_bytes];
};

static_assert(sizeof(part) % 8 == 0 && alignof(part) <= 8, "a referenced part fits an 8-byte record slot");
static_assert(sizeof(message_properties_ptr) % 8 == 0 && alignof(message_properties_ptr) <= 8,
              "a properties pointer fits an 8-byte record slot");

msg_pipe::msg_pipe() : wchunk_(new chunk), rchunk_(wchunk_) {}

msg_pipe::~msg_pipe() {
    std::vector<entry> left;
    while (front(left)) pop(left);
    // Records put after the last end_message (none in practice) hold no reference: parts are
    // only referenced by put(part), and every message is ended before its sender returns.
    for (chunk* c = rchunk_; c;) {
        chunk* n = c->next;
        delete c;
        c = n;
    }
    for (auto& s : spare_) delete s.load(std::memory_order_acquire);
}

msg_pipe::chunk* msg_pipe::take_chunk() {
    chunk* c = nullptr;
    for (auto& s : spare_) {
        if (s.load(std::memory_order_relaxed) && (c = s.exchange(nullptr, std::memory_order_acquire))) break;
    }
    if (!c) c = new chunk;
    c->next = nullptr;
    return c;
}

void msg_pipe::give_chunk(chunk* c) noexcept {
    // The release makes our last reads of c happen before the producer writes into it again.
    for (auto& s : spare_) {
        chunk* empty = nullptr;
        if (s.compare_exchange_strong(empty, c, std::memory_order_release, std::memory_order_relaxed)) return;
    }
    delete c;
}

std::byte* msg_pipe::reserve(std::size_t n) {
    if (woff_ + n > chunk_bytes) {
        if (woff_ + sizeof(header) <= chunk_bytes) {
            // The consumer reads kind only: one byte written keeps gcc's bounds check quiet.
            wchunk_->data[woff_ + offsetof(header, kind)] = std::byte{jump};
        }
        chunk* c = take_chunk();
        wchunk_->next = c;  // visible to the consumer through the release in publish()
        wpos_ += chunk_bytes - woff_;
        wchunk_ = c;
        woff_ = 0;
    }
    std::byte* at = wchunk_->data + woff_;
    woff_ += n;
    wpos_ += n;
    return at;
}

void msg_pipe::put(bytes_view b, bool more) {
    std::byte* at = reserve(sizeof(header) + round8(b.size()));
    const header h{static_cast<std::uint32_t>(b.size()), copy, static_cast<std::uint8_t>(more), 0};
    std::memcpy(at, &h, sizeof h);
    if (!b.empty()) std::memcpy(at + sizeof h, b.data(), b.size());
}

void msg_pipe::put(part p, bool more) {
    std::byte* at = reserve(sizeof(header) + sizeof(part));
    const header h{static_cast<std::uint32_t>(p.size()), ref, static_cast<std::uint8_t>(more), 0};
    std::memcpy(at, &h, sizeof h);
    ::new (static_cast<void*>(at + sizeof h)) part(std::move(p));
}

void msg_pipe::put_properties(message_properties_ptr p) {
    std::byte* at = reserve(sizeof(header) + sizeof(message_properties_ptr));
    const header h{0, properties_change, 1, 0};  // `more`: the message's parts follow
    std::memcpy(at, &h, sizeof h);
    ::new (static_cast<void*>(at + sizeof h)) message_properties_ptr(std::move(p));
}

void msg_pipe::put_empty() {
    std::byte* at = reserve(sizeof(header));
    const header h{0, empty_message, 0, 0};
    std::memcpy(at, &h, sizeof h);
}

// The message front() returned changes the properties: the record's reference becomes the pipe's.
void msg_pipe::switch_properties() noexcept {
    props_ = std::move(*props_rec_);
    std::destroy_at(props_rec_);
    props_rec_ = nullptr;
}

bool msg_pipe::front(std::vector<entry>& out) {
    out.clear();
    if (empty()) return false;
    // A message is published whole: once its first record is below the tail, all of them are.
    chunk* c = rchunk_;
    std::size_t off = roff_;
    std::uint64_t pos = rpos_;
    for (;;) {
        header h;
        if (chunk_bytes - off >= sizeof h) std::memcpy(&h, c->data + off, sizeof h);
        if (chunk_bytes - off < sizeof h || h.kind == jump) {
            pos += chunk_bytes - off;
            c = c->next;
            off = 0;
            std::memcpy(&h, c->data, sizeof h);
        }
        std::byte* body = c->data + off + sizeof h;
        std::size_t len;
        if (h.kind == empty_message) {
            len = sizeof h;
        } else if (h.kind == properties_change) {
            props_rec_ = std::launder(reinterpret_cast<message_properties_ptr*>(body));
            len = sizeof(header) + sizeof(message_properties_ptr);
        } else if (h.kind == ref) {
            part* p = std::launder(reinterpret_cast<part*>(body));
            out.push_back(entry{p->bytes(), p});
            len = sizeof(header) + sizeof(part);
        } else {
            out.push_back(entry{bytes_view(body, h.size), nullptr});
            len = sizeof(header) + round8(h.size);
        }
        off += len;
        pos += len;
        if (!h.more) break;
    }
    pchunk_ = c;
    poff_ = off;
    ppos_ = pos;
    return true;
}

void msg_pipe::pop(std::vector<entry>& parts) noexcept {
    for (auto& e : parts)
        if (e.ref) std::destroy_at(e.ref);
    parts.clear();
    if (props_rec_) switch_properties();
    while (rchunk_ != pchunk_) {
        chunk* n = rchunk_->next;
        give_chunk(rchunk_);
        rchunk_ = n;
    }
    roff_ = poff_;
    rpos_ = ppos_;
    ++popped_;
    consumed_.store(popped_, std::memory_order_release);
}

}  // namespace strix::link::detail
