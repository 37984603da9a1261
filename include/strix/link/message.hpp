#pragma once
// Messages of strix::link. A message has one or more parts (ZeroMQ's frames). Owned parts live
// in shared, immutable buffers, so a message fanned out to many peers or handed to another
// shard is referenced, never copied. Received messages are handed to the application as a
// message_view that points into the receive buffers (no copy); copy() keeps one.

#include <strix/core/shared_buffer.hpp>

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strix::link {

using bytes_view = std::span<const std::byte>;

/// Bytes of a string, for sending text.
inline bytes_view as_bytes(std::string_view s) noexcept { return std::as_bytes(std::span(s.data(), s.size())); }
/// Text of bytes, for reading text.
inline std::string_view as_text(bytes_view b) noexcept { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

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

private:
    std::vector<part> parts_;
};

/// A received message's parts, valid only during the callback that receives it.
class message_view {
public:
    message_view() noexcept = default;
    explicit message_view(std::span<const bytes_view> parts) noexcept : parts_(parts) {}
    std::size_t size() const noexcept { return parts_.size(); }
    bytes_view operator[](std::size_t i) const noexcept { return parts_[i]; }
    std::string_view text(std::size_t i) const noexcept { return as_text(parts_[i]); }
    auto begin() const noexcept { return parts_.begin(); }
    auto end() const noexcept { return parts_.end(); }
    std::span<const bytes_view> parts() const noexcept { return parts_; }
    /// An owned copy (one allocation per part).
    message copy() const {
        message m;
        for (auto p : parts_) m.add(p);
        return m;
    }

private:
    std::span<const bytes_view> parts_;
};

}  // namespace strix::link
