#pragma once
// Messages of strix::link. A message has one or more parts (ZeroMQ's frames). Owned parts live
// in shared, immutable buffers, so a message fanned out to many peers or handed to another
// shard is referenced, never copied. Received messages are handed to the application as a
// message_view that points into the receive buffers (no copy); copy() keeps one.
//
// A message received from a tcp:// or ipc:// peer also carries the properties of the connection
// it came from (message_properties: what libzmq's zmq_msg_gets reads): the peer's Socket-Type and
// Identity, its Peer-Address, and ZAP's User-Id and metadata. They are built once, when the
// connection's handshake completes, and every message from that connection points at the same
// immutable set: no allocation or copy per message.

#include <strix/core/intrusive_ptr.hpp>
#include <strix/core/shared_buffer.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strix::link {
class message_properties;
namespace detail {
class msg_pipe;

/// A thread's reserve of references to one message_properties set (src/link/properties.cpp).
struct properties_reserve {
    const message_properties* of = nullptr;
    std::uint64_t refs = 0;
    bool gone = false;  // the thread is ending: count one by one
};
inline thread_local properties_reserve properties_tls;
}  // namespace detail

using bytes_view = std::span<const std::byte>;

/// Bytes of a string, for sending text.
inline bytes_view as_bytes(std::string_view s) noexcept { return std::as_bytes(std::span(s.data(), s.size())); }
/// Text of bytes, for reading text.
inline std::string_view as_text(bytes_view b) noexcept { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

/// The properties of the connection a received message came from, as zmq_msg_gets reads them:
///   "Socket-Type"   the peer's socket type ("DEALER", ...)
///   "Identity"      the routing id the peer announced (REQ, DEALER, ROUTER peers), also
///                   found as "Routing-Id"
///   "Peer-Address"  the peer's IP address (tcp), or "localhost:uid:gid:pid" (ipc), as libzmq
///   "User-Id"       the user id ZAP gave (present when a ZAP handler accepted the peer)
/// plus every other property the peer announced in its handshake and the metadata of ZAP's
/// reply. Where two sources name the same property, Peer-Address wins over ZAP's, and ZAP's over
/// the peer's own (libzmq's order). Immutable once built: any thread may read it.
class message_properties {
public:
    using entry = std::pair<std::string, std::string>;
    message_properties() = default;
    explicit message_properties(std::vector<entry> entries) : entries_(std::move(entries)) {}
    message_properties(const message_properties&) = delete;
    message_properties& operator=(const message_properties&) = delete;
    /// The value of `name`, or nullptr. Names compare without regard to case (ZMTP's rule for
    /// property names); "Routing-Id" and "Identity" name the same property. The pointer lives as
    /// long as this set. Any thread.
    const std::string* get(std::string_view name) const noexcept;
    /// Every property, in the order above. Any thread.
    const std::vector<entry>& entries() const noexcept { return entries_; }

private:
    // An atomic count: message_properties_ptr copies and releases are safe from any thread. A
    // stream of received messages costs no atomic operation per message, though: each thread
    // keeps a reserve of references to the set it used last (properties.cpp), from which the
    // blocking API's pipe gives each message one (take_reference) and to which a message
    // released on that thread returns it; the count moves in batches.
    friend class detail::msg_pipe;
    friend struct reserve_access;
    void take_reference() const noexcept {
        detail::properties_reserve& r = detail::properties_tls;
        if (r.of == this && r.refs) {
            --r.refs;
            return;
        }
        take_reference_slow();
    }
    void take_reference_slow() const noexcept;
    void drop(std::uint64_t n) const noexcept;
    friend void intrusive_add_ref(const message_properties* p) noexcept {
        p->refs_.fetch_add(1, std::memory_order_relaxed);
    }
    friend void intrusive_release(const message_properties* p) noexcept {
        detail::properties_reserve& r = detail::properties_tls;
        if (r.of == p) {
            ++r.refs;
            return;
        }
        p->drop(1);
    }

    std::vector<entry> entries_;
    mutable std::atomic<std::uint64_t> refs_{0};
};
/// A counted, shared reference to a connection's properties (any thread may copy or drop it).
using message_properties_ptr = intrusive_ptr<const message_properties>;

/// One part: a window into a shared buffer.
class part {
public:
    part() noexcept = default;
    part(shared_buffer_ptr buf, std::size_t offset, std::size_t length) noexcept
        : buf_(std::move(buf)), off_(offset), len_(length) {}
    /// A part holding a copy of b.
    static part copy(bytes_view b) {
        if (b.empty()) return {};
        auto buf = shared_buffer::create(b.size());
        std::memcpy(buf->data(), b.data(), b.size());
        return part(std::move(buf), 0, b.size());
    }
    bytes_view bytes() const noexcept { return buf_ ? bytes_view(buf_->data() + off_, len_) : bytes_view(); }
    std::string_view text() const noexcept { return as_text(bytes()); }
    std::size_t size() const noexcept { return len_; }
    const shared_buffer_ptr& buffer() const noexcept { return buf_; }
    /// Its buffer has a release hook (shared_buffer.hpp): pass the part on, never a copy of its
    /// bytes, or the hook runs before the bytes have gone anywhere.
    bool by_reference_only() const noexcept { return buf_ && buf_->has_release_hook(); }
    std::size_t offset() const noexcept { return off_; }

private:
    shared_buffer_ptr buf_;
    std::size_t off_ = 0;
    std::size_t len_ = 0;
};

/// A message the application owns: parts in order.
class message {
public:
    message() = default;
    /// A one-part message holding a copy of b.
    explicit message(bytes_view b) { add(b); }
    explicit message(std::string_view s) { add(as_bytes(s)); }
    /// A message of copies of the given parts.
    message(std::initializer_list<bytes_view> parts) {
        for (auto p : parts) add(p);
    }

    /// Appends a copy of b (one allocation for the part).
    message& add(bytes_view b) {
        parts_.push_back(part::copy(b));
        return *this;
    }
    message& add(std::string_view s) { return add(as_bytes(s)); }
    /// Appends a part by reference (no copy).
    message& add(part p) {
        parts_.push_back(std::move(p));
        return *this;
    }

    std::size_t size() const noexcept { return parts_.size(); }
    bool empty() const noexcept { return parts_.empty(); }
    const part& operator[](std::size_t i) const noexcept { return parts_[i]; }
    auto begin() const noexcept { return parts_.begin(); }
    auto end() const noexcept { return parts_.end(); }
    /// Total bytes over all parts.
    std::size_t bytes() const noexcept {
        std::size_t n = 0;
        for (auto& p : parts_) n += p.size();
        return n;
    }
    /// Removes and returns the first part (e.g. a ROUTER's routing id).
    part pop_front() {
        part p = std::move(parts_.front());
        parts_.erase(parts_.begin());
        return p;
    }
    void push_front(part p) { parts_.insert(parts_.begin(), std::move(p)); }

    /// The properties of the connection a received message came from (the blocking API's
    /// recv() sets them; see message_properties), or null: a message built by the application,
    /// or received from an inproc:// peer (inproc connections have none, as in libzmq).
    const message_properties_ptr& properties() const noexcept { return props_; }
    void set_properties(message_properties_ptr p) noexcept { props_ = std::move(p); }

private:
    std::vector<part> parts_;
    message_properties_ptr props_;
};

/// A received message's parts, valid only during the callback that receives it.
class message_view {
public:
    message_view() noexcept = default;
    explicit message_view(std::span<const bytes_view> parts, const message_properties_ptr* props = nullptr) noexcept
        : parts_(parts), props_(props) {}
    std::size_t size() const noexcept { return parts_.size(); }
    bytes_view operator[](std::size_t i) const noexcept { return parts_[i]; }
    std::string_view text(std::size_t i) const noexcept { return as_text(parts_[i]); }
    auto begin() const noexcept { return parts_.begin(); }
    auto end() const noexcept { return parts_.end(); }
    std::span<const bytes_view> parts() const noexcept { return parts_; }
    /// The properties of the connection the message came from, or null (inproc peers have
    /// none). The set outlives the callback; copy the pointer to keep it.
    const message_properties_ptr& properties() const noexcept { return props_ ? *props_ : no_properties(); }
    /// An owned copy (one allocation per part), with the properties.
    message copy() const {
        message m;
        for (auto p : parts_) m.add(p);
        m.set_properties(properties());
        return m;
    }

private:
    static const message_properties_ptr& no_properties() noexcept {
        static const message_properties_ptr none;
        return none;
    }
    std::span<const bytes_view> parts_;
    const message_properties_ptr* props_ = nullptr;  // the connection's, which outlives the callback
};

}  // namespace strix::link
