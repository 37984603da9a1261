// outgoing (pipe.hpp): the encodings of a message that several peers share.
#include "link/pipe.hpp"

#include <strix/link/zmtp.hpp>

#include <cstring>

namespace strix::link::detail {

const shared_buffer_ptr& outgoing::wire() {
    if (wire_) return wire_;
    std::size_t total = 0;
    for (auto p : parts_) total += (p.size() <= 255 ? 2 : zmtp::max_header) + p.size();
    wire_ = shared_buffer::create(total);
    std::byte* out = wire_->data();
    std::size_t n = 0;
    for (std::size_t i = 0; i < parts_.size(); ++i) {
        const std::uint8_t flags = i + 1 < parts_.size() ? zmtp::flag_more : 0;
        n += zmtp::write_header(out + n, flags, parts_[i].size());
        if (!parts_[i].empty()) std::memcpy(out + n, parts_[i].data(), parts_[i].size());
        n += parts_[i].size();
    }
    return wire_;
}

const std::vector<part>& outgoing::owned() {
    if (!owned_.empty() || parts_.empty()) return owned_;
    std::size_t total = 0;
    for (auto p : parts_) total += p.size();
    auto buf = shared_buffer::create(total);
    std::size_t off = 0;
    owned_.reserve(parts_.size());
    for (auto p : parts_) {
        if (!p.empty()) std::memcpy(buf->data() + off, p.data(), p.size());
        owned_.emplace_back(buf, off, p.size());
        off += p.size();
    }
    return owned_;
}

}  // namespace strix::link::detail
